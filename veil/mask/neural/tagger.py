"""Detect and mask stage: the neural entity tagger, a case-robust token classifier (uncased MiniLM, fine-tuned).

Trained by ``veil train-detector`` (:mod:`veil.mask.neural.train`) on CoNLL-2003, WNUT-17, TAB and
Presidio synthetic training parts, each in its written and speech-recognition form, plus generated
call-centre dialogues. Its tokenizer lower-cases, so it reads "john smith" as it reads "John Smith";
the spaCy tagger needs the capitals.

Inference runs on onnxruntime (``detector.onnx``, written beside the torch weights by
``veil train-detector``), so masking imports neither torch nor transformers: identical texts are
tagged once; each text is cut into windows of ``max_length`` word pieces; windows are sorted by
length and run in batches (less padding), fp32. A document's spans do not depend on which texts
share its batch (tested); dynamic int8 quantisation broke that (it scales activations per batch:
on 400 PTB sentences it changed the spans of 155 when the batch went from 8 to 64), so it is
gone. Decoding is by words (:func:`decode_words`): a word takes the type its pieces' average gives it,
and a span is a run of words of one type.

A word is part of an entity when one of its pieces gives "not an entity" a probability below its type's
threshold: per type, calibrated by ``veil train-detector`` on hand-annotated Switchboard conversations
it never trains on (``detector.json`` ``thresholds``), for conversation; written documents take one
threshold (``DetectorTrainConfig.written_threshold``) (``o_threshold`` sets one for all). Spans then
hold the value and nothing else (:func:`tidy`): no greeting, filler, context word ("card", "zip",
"number") or sentence punctuation at their ends, no honorific ("Dr. [PERSON]"), a first and a last
name one span; an e-mail needs "@" or "at" and "dot", a phone or id number three digits, an address
a number or a street word (:mod:`veil.mask.neural.hygiene`).
"""

from __future__ import annotations

import itertools
import logging
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from veil.errors import VeilError
from veil.mask.base import Masker
from veil.mask.neural.hygiene import tidy
from veil.types import Span

log = logging.getLogger(__name__)

PRECISIONS = ("int8", "fp32")
#: the threshold of a word whose reading other evidence backs (:func:`_backed_names`: the name lists, a capital
#: inside a sentence) where it is above the type's own: on Presidio's synthetic held-out records person recall
#: went from 0.961 / 0.951 / 0.902 to 0.990 / 0.980 / 0.980 with it, while real-conversation precision moved by
#: 0.005 at most
NAME_THRESHOLD = 0.5
_WORD_CHAR = re.compile(r"[\w'’\u0300-\u036f]")  # combining marks belong to their word ("i̇şeri")
#: sentence punctuation a span neither starts nor ends with ("94110," masks the number, not the comma)
_EDGE_PUNCT = " \t\n,;:!?\"“”"
_SENTENCE_PUNCT = re.compile(r"[,;:!?\"“”]+")


#: the least average probability of the next type for a word read again (:func:`decode_words`)
RETYPE_MIN = 0.2
#: the most onnxruntime threads the tagger takes by default (measured on 2 vCPUs only; more workers, not more
#: threads, are veil's way to use a large machine)
MAX_DEFAULT_THREADS = 4


def default_threads() -> int:
    """The tagger's onnxruntime threads when none are given: ``OMP_NUM_THREADS`` where it is set (Ray sets it to a
    worker's CPUs), else the CPUs this process may run on, at most :data:`MAX_DEFAULT_THREADS`. On 4,000
    Switchboard utterances on a 2-vCPU machine the default masked 11,486 words/s with 2 threads beside ``dlp``
    and 7,788 with 1 (``bench/bench_mask.py --interleave``, docs/detection.md)."""
    import os

    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_DEFAULT_THREADS, cpus))


@lru_cache(maxsize=4)
def load_detector(path: str | None, precision: str, threads: int) -> tuple[Any, Any, Any, dict]:
    """(onnxruntime session, word-embedding matrix, tokenizer, meta), loaded once per process and setting."""
    import json

    import onnxruntime as ort

    from veil.mask.neural.saved import (META_FILE, ONNX_FILE, ONNX_INT8_FILE, PACKAGED_DIR, load_tokenizer,
                                        word_embeddings)

    folder = Path(path) if path else PACKAGED_DIR
    network = folder / (ONNX_INT8_FILE if precision == "int8" else ONNX_FILE)
    if not (folder / META_FILE).is_file() or not network.is_file():
        raise VeilError(f"no trained detector in {folder} (need {META_FILE} and {network.name}); "
                        f"train one with `veil train-detector --out {folder}`")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # no busy-waiting between batches: the other maskers run on the same cores right after
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
        session = ort.InferenceSession(str(network), options, providers=["CPUExecutionProvider"])
        loaded = session, word_embeddings(meta, folder), load_tokenizer(), meta
    except Exception as e:  # a damaged folder: onnxruntime, numpy and json raise many types
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise VeilError(f"the detector in {folder} cannot be loaded ({type(e).__name__}: {first[:200]}); "
                        f"train it again with `veil train-detector --out {folder}`") from None
    from veil.mask.neural.saved import describe

    log.info("neural_tagger uses the detector %s", describe(folder, meta, precision))
    return loaded


def decode_words(text: str, offsets: Sequence[tuple[int, int]], by_type: Any, limit: Any,
                 kinds: Sequence[str], name_limit: float = 0.0,
                 valid: Callable[[str, str], bool] | None = None) -> list[tuple[int, int, str, float]]:
    """``(start, end, type, mean probability)`` runs of words of one entity type.

    A word's pieces ("Vito" "rov" "ić") are read as one (``by_type``: a row per piece, column 0 O, column k
    ``kinds[k - 1]`` with its B- and I- labels summed): the word's type is the most likely one of its pieces'
    average, and it is an entity when one of its pieces gives O less than that type's threshold (``limit``).
    So a word takes one type whatever its pieces' labels: a name the model reads as a person in two pieces
    and an address in a third stays one person. Neighbouring words of one type are one run: two mentions of
    a type side by side are one span, as span hygiene joins them anyway; sentence punctuation ends a run.

    A word below ``name_limit`` but above its type's threshold is an entity where other evidence backs the
    model's reading (:func:`_backed_names`): the name lists, or a capital letter inside a sentence. The
    evidence never starts a reading of its own: the model must give the word that type first.

    A run whose words cannot be its type (``valid(type, surface)`` false: "at acme" as an e-mail) is read
    again with that type ruled out for its words, so they take their next most likely type where it has some
    weight (:data:`RETYPE_MIN`: "acme" an organisation, beside "corporation")."""
    import numpy as np

    valid_pieces = [i for i, (s, e) in enumerate(offsets) if e > s]
    if not valid_pieces:
        return []
    first: list[int] = []  # the index (in ``valid_pieces``) of each word's first piece
    prev_end = -1
    for n, i in enumerate(valid_pieces):
        s, e = offsets[i]
        if not (s == prev_end and _WORD_CHAR.match(text[s]) and _WORD_CHAR.match(text[s - 1])):
            first.append(n)
        prev_end = e
    ends = first[1:] + [len(valid_pieces)]
    bounds = [(offsets[valid_pieces[a]][0], offsets[valid_pieces[b - 1]][1]) for a, b in zip(first, ends)]
    rows = by_type[valid_pieces]
    words = np.add.reduceat(rows, first, axis=0)[:, 1:] / np.diff(np.array(first + [len(valid_pieces)]))[:, None]
    p_o = np.minimum.reduceat(rows[:, 0], first)
    sentence = np.array([bool(_SENTENCE_PUNCT.fullmatch(text, s, e)) and (e == len(text) or text[e].isspace())
                         for s, e in bounds])  # "anna, maria": the comma ends the first name (not "1,234"'s)

    def read(words: Any) -> tuple[Any, Any]:
        kind = words.argmax(-1)
        entity = (p_o < limit[kind]) & ~sentence
        if name_limit > 0:
            entity[_backed_names(text, bounds, kind, p_o, entity, kinds, name_limit)] = True
        return kind, entity

    def runs(kind: Any, entity: Any) -> list[list[int]]:
        out: list[list[int]] = []  # [first word, last word, type index]
        for w in np.flatnonzero(entity).tolist():
            if out and out[-1][1] == w - 1 and out[-1][2] == kind[w]:
                out[-1][1] = w
            else:
                out.append([w, w, int(kind[w])])
        return out

    kind, entity = read(words)
    found = runs(kind, entity)
    if valid is not None:
        retyped = np.zeros(len(bounds), dtype=bool)
        for _ in range(2):
            wrong = [r for r in found if not valid(kinds[r[2]], text[bounds[r[0]][0]:bounds[r[1]][1]])]
            if not wrong:
                break
            words = words.copy()
            for a, b, k in wrong:
                words[a:b + 1, k] = -1.0
                retyped[a:b + 1] = True
            kind, entity = read(words)
            # a word read again keeps only a reading of some weight ("acme" an organisation at 0.39), not the
            # crumbs of one ("expiring" an id at 0.06 beside "09/27")
            entity &= ~retyped | (words[np.arange(len(bounds)), kind] >= RETYPE_MIN)
            found = runs(kind, entity)
    return [(bounds[a][0], bounds[b][1], kinds[k], float(words[a:b + 1, k].mean())) for a, b, k in found]


#: the types a capital letter backs (a person, organisation, place or product is a name)
_NAME_KINDS = ("PER", "ORG", "LOC", "MISC")
_SENTENCE_END = ".!?:\n\"“>#@"


def _backed_names(text: str, bounds: Sequence[tuple[int, int]], kind: Any, p_o: Any, entity: Any,
                  kinds: Sequence[str], name_limit: float) -> list[int]:
    """The words below ``name_limit`` but not their type's threshold that other evidence backs: a word read as a
    person that is a first name on the name lists and none of the 1,000 commonest words ("melanie", "gary"), or a
    last name and none of the 5,000 commonest ("vasquez's"; not "young", "green"), or a word read as a name of
    any kind written with a capital inside a sentence of cased text and no everyday word ("I miss Didga")."""
    import numpy as np

    from veil.mask.allow_list import common_words
    from veil.mask.neural.hygiene import everyday, person_name_words
    from veil.mask.neural.rules.lexical import last_nonspace

    candidates = np.flatnonzero(~entity & (p_o < name_limit)).tolist()
    if not candidates:
        return []
    first_names, names = person_name_words(first_only=True), person_name_words()
    cased = any(c.isupper() for c in text) and any(c.islower() for c in text)
    out = []
    for w in candidates:
        raw = text[bounds[w][0]:bounds[w][1]]
        word = raw.lower()
        word = word[:-2] if word.endswith(("'s", "’s")) else word
        k = kinds[int(kind[w])]
        if k == "PER" and (word in first_names and word not in common_words(1000) or
                           word in names and word not in common_words(5000)):
            out.append(w)  # not a surname that is an everyday word first ("young", "green", "long")
        elif cased and k in _NAME_KINDS and raw[:1].isupper() and raw[1:].islower() and not everyday(word):
            j = last_nonspace(text, bounds[w][0])
            if j >= 0 and text[j] not in _SENTENCE_END:  # a sentence's first word has its capital anyway
                out.append(w)
    return out


def widen(text: str, start: int, end: int) -> tuple[int, int]:
    """Grow a span to whole words (a tagged word piece masks its word), without sentence punctuation at its ends."""
    while start > 0 and _WORD_CHAR.match(text[start - 1]) and _WORD_CHAR.match(text[start]):
        start -= 1
    while end < len(text) and _WORD_CHAR.match(text[end]) and _WORD_CHAR.match(text[end - 1]):
        end += 1
    while start < end and text[start] in _EDGE_PUNCT:
        start += 1
    while end > start and (text[end - 1] in _EDGE_PUNCT or text[end - 1] == "." and end == len(text)):
        end -= 1
    return start, end


class NeuralTaggerMasker(Masker):
    """``NeuralTaggerMasker(model=None, precision="int8", batch_size=32, threads=None, types=None, o_threshold=None)``.

    ``model`` is a folder written by ``veil train-detector`` (default: the detector shipped with
    veil); ``types`` keeps only some of its types (e.g. ``"PER,ORG,LOC"``); a word piece counts as
    part of an entity when the model gives "not an entity" less than its type's calibrated threshold,
    or less than ``o_threshold`` for every type when that is given (higher: more recall, more masking).
    ``register`` (``auto``, ``written``, ``conversation``) says which thresholds and span rules apply: by
    default a long text without speech fillers is a written document (``detectors.base.is_written``);
    short written records (tweets, form fields) read better as ``written``.
    ``propagate`` masks every other occurrence in the text of a person, organisation or place the tagger
    found ("my name is Aantje Mourik but everyone calls me Aantje"), except a lower-case common word
    alone ("will", "bill"), which could be the everyday word elsewhere; with it and ``group_propagate``, a
    person's name found in one record of a group (``--group-field``: a call's utterances) is masked in every
    record of that group (:mod:`veil.mask.propagation`). ``judge`` (``default``: the span judge shipped with veil;
    ``off``; or a folder written by ``bench/train_judge.py``) drops the ages, conditions, places, organisations
    or jobs (the types its folder judges, each below its threshold) of conversation that its context says are
    nobody's ("find me a flight on Delta Airlines": a company searched for, no one's employer), among every
    masker's merged spans (:mod:`veil.mask.judge`).
    ``name_threshold`` (default
    :data:`NAME_THRESHOLD`; 0 turns it off) is the threshold of a word the model reads as a name that the name
    lists or a capital inside a sentence back, where it is above the type's own. ``rules`` chooses the span
    rules after the model (:mod:`veil.mask.neural.rules`): ``default``, ``all``, ``none``, ``-breed,-trim_edges``
    (the default ones but those) or a list of rule names; an unknown name is an error that lists them.
    """

    name = "neural_tagger"
    releases_gil = True  # tokenizers and onnxruntime run outside the GIL: the engine overlaps it with dlp

    def __init__(self, model: str | None = None, precision: str = "int8", batch_size: int = 32,
                 threads: int | None = None, max_length: int = 128, types: Sequence[str] | str | None = None,
                 o_threshold: float | None = None, propagate: bool = True, register: str = "auto",
                 name_threshold: float = NAME_THRESHOLD, rules: str | Sequence[str] = "default",
                 group_propagate: bool = True, judge: str | bool = "default") -> None:
        from veil.mask.detectors.base import check_register
        from veil.mask.neural.rules import select

        try:
            self.rules = select(rules)
        except VeilError as e:
            raise VeilError(f"neural_tagger: {e}") from None

        self.register = check_register("neural_tagger", register)
        if precision not in PRECISIONS:
            raise VeilError(f"neural_tagger: precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
        threads = default_threads() if threads is None else threads
        if batch_size < 1 or threads < 1 or not 8 <= max_length <= 512:
            raise VeilError("neural_tagger: batch_size and threads must be at least 1, max_length 8 to 512")
        if o_threshold is not None and not 0.0 < float(o_threshold) <= 1.0:
            raise VeilError("neural_tagger: o_threshold must be in (0, 1]")
        if not 0.0 <= float(name_threshold) <= 1.0:
            raise VeilError("neural_tagger: name_threshold must be in [0, 1] (0: the name lists play no part)")
        self.session, self.embeddings, self.tokenizer, meta = load_detector(model, precision, threads)
        from veil.mask.neural.data import TYPE_TO_LABEL

        labels = meta["labels"]
        known = sorted({lab[2:] for lab in labels if lab != "O"})
        if isinstance(types, str):
            types = [t.strip() for t in types.split(",") if t.strip()]
        self.types = frozenset(types) if types else frozenset(known)
        unknown = self.types - set(known)
        if unknown:
            raise VeilError(f"neural_tagger: unknown type(s) {', '.join(sorted(unknown))}; choose from {', '.join(known)}")
        if "PER" not in self.types:  # the naming contexts find persons: not asked for
            self.rules = tuple(r for r in self.rules if r.name != "naming_context")
        self.type_to_label = TYPE_TO_LABEL
        self.id2label = list(labels)
        # the model's labels summed per type: column 0 is O, column k the B- and I- labels of kinds[k - 1]
        import numpy as np

        self.kinds = tuple(known)
        self.collapse = np.zeros((len(labels), 1 + len(known)), dtype=np.float32)
        for j, lab in enumerate(labels):
            self.collapse[j, 0 if lab == "O" else 1 + known.index(lab[2:])] = 1.0
        self.batch_size = batch_size
        self.max_length = max_length
        # per-type thresholds calibrated on conversation apply to conversation; written documents (court
        # cases, reports: ``veil.mask.detectors.base.is_written``) take the one written threshold of training's
        # config (``DetectorTrainConfig.written_threshold``; 0.5 for folders that predate it)
        calibrated = meta.get("thresholds") or {}
        self.thresholds = {t: float(o_threshold) if o_threshold is not None else float(calibrated.get(t, 0.5))
                           for t in known}
        written = float((meta.get("config") or {}).get("written_threshold", 0.5))
        self.written_thresholds = {t: float(o_threshold) if o_threshold is not None else written for t in known}
        self.propagate = bool(propagate)
        self.group_propagate = bool(group_propagate)
        self.name_limit = float(name_threshold)
        self.judge = _span_judge(judge)

    @property
    def judges_merged(self) -> bool:
        """Whether the engine hands it every masker's merged spans to judge (:meth:`judge_merged`)."""
        return self.judge is not None

    def judge_merged(self, texts: Sequence[str], merged: Sequence[list[Span]],
                     found: Mapping[str, Sequence[Sequence[Span]]],
                     groups: Sequence[Any] | None = None) -> list[list[Span]]:
        """``merged`` (every masker's spans of ``texts``, merged) without the spans the span judge drops;
        ``found``: each masker's own spans by masker name; ``groups``: a value kept in one record of a group is
        kept in all of them. Written documents keep every span."""
        from veil.mask.detectors.base import written_in

        none: list[list[Span]] = [[] for _ in texts]
        return self.judge.judge(texts, merged, found.get(self.name, none), found.get("dlp", none),
                                [not written_in(self.register, t) for t in texts], groups)

    def logits(self, ids: Any, mask: Any) -> Any:
        """(batch, pieces, labels) scores of a padded batch of piece ids."""
        return self.session.run(None, {"inputs_embeds": self.embeddings[ids], "attention_mask": mask})[0]

    def detect(self, text: str) -> list[Span]:
        return self.detect_batch([text])[0]

    def detect_batch(self, texts: Sequence[str]) -> list[list[Span]]:
        scored = self.score_batch(texts)
        return [self.decode_scored(t, sc) for t, sc in zip(texts, scored)]

    @property
    def carries_groups(self) -> bool:
        """Whether what it finds in one record of a group is masked in the group's others."""
        return bool(self.propagate and self.group_propagate)

    def propagate_group(self, texts: Sequence[str], spans: Sequence[list[Span]],
                        groups: Sequence[Any]) -> list[list[Span]]:
        """With ``propagate``, a person's name found in one record of a group is masked in every record of that
        group (:func:`veil.mask.propagation.propagate_group`); never across groups."""
        if not self.carries_groups:
            return list(spans)
        from veil.mask.propagation import propagate_group

        return propagate_group(texts, spans, groups, self.name)

    def score_batch(self, texts: Sequence[str]) -> list[list[tuple[Any, Any]]]:
        """Per text, its windows as ``(piece offsets, per piece P(O) and each type's probability)`` (a
        ``(pieces, 1 + len(kinds))`` array, a type's B- and I- labels summed): the model's part of detection.

        :meth:`decode_scored` turns them into spans under the thresholds; calibration varies those
        without running the model again.
        """
        import numpy as np

        unique: dict[str, int] = {}
        for t in texts:
            if t.strip() and t not in unique:
                unique[t] = len(unique)
        utexts = list(unique)
        if not utexts:
            return [[] for _ in texts]
        tok = self.tokenizer
        body = self.max_length - 2
        windows = []  # (text index, piece ids, offsets)
        for u, (ids, offs) in enumerate(tok.pieces(utexts)):
            for i in range(0, max(1, len(ids)), body):
                windows.append((u, ids[i:i + body], offs[i:i + body]))
        order = sorted(range(len(windows)), key=lambda k: len(windows[k][1]))
        probs: list[Any] = [None] * len(windows)
        for b in range(0, len(order), self.batch_size):
            chunk = order[b:b + self.batch_size]
            n = max(len(windows[k][1]) for k in chunk) + 2
            ids = np.full((len(chunk), n), tok.pad_token_id, dtype=np.int64)
            mask = np.zeros((len(chunk), n), dtype=np.int64)
            for r, k in enumerate(chunk):
                piece_ids = windows[k][1]
                ids[r, 0], ids[r, 1:len(piece_ids) + 1], ids[r, len(piece_ids) + 1] = \
                    tok.cls_token_id, piece_ids, tok.sep_token_id
                mask[r, :len(piece_ids) + 2] = 1
            scores = self.logits(ids, mask).astype(np.float32)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            by_type = scores @ self.collapse
            for r, k in enumerate(chunk):
                probs[k] = by_type[r, 1:len(windows[k][1]) + 1]
        per_text: list[list[tuple[Any, Any]]] = [[] for _ in utexts]
        for k, (u, _, offs) in enumerate(windows):
            per_text[u].append((offs, probs[k]))
        return [per_text[unique[t]] if t in unique else [] for t in texts]

    def decode_scored(self, text: str, windows: Sequence[tuple[Any, Any]],
                      thresholds: dict[str, float] | None = None) -> list[Span]:
        """Spans of one text from its scored windows, under per-type thresholds (default: the masker's)."""
        import numpy as np

        from veil.mask.detectors.base import written_in
        from veil.mask.neural.hygiene import valid

        written = written_in(self.register, text)
        if thresholds is None:
            thresholds = self.written_thresholds if written else self.thresholds
        limit = np.array([thresholds.get(k, 0.5) for k in self.kinds], dtype=np.float32)
        spans: list[Span] = []
        for offs, by_type in windows:
            if not len(offs) or not (by_type[:, 0] < max(limit.max(), self.name_limit)).any():
                continue
            for s, e, kind, score in decode_words(text, offs, by_type, limit, self.kinds, self.name_limit, valid):
                if kind not in self.types:
                    continue
                s, e = widen(text, s, e)
                if s < e:
                    spans.append(Span(s, e, kind, self.name, round(score, 4)))
        out = [Span(sp.start, sp.end, self.type_to_label.get(sp.label, sp.label), sp.source, sp.score)
               for sp in tidy(text, spans, written, self.rules)]
        return propagate_names(text, out, self.name) if self.propagate else out


def _span_judge(judge: str | bool | None) -> Any:
    """The span judge of the ``judge`` option: ``default`` / true the shipped one, ``off`` / false none, or a folder."""
    word = judge.strip().lower() if isinstance(judge, str) else None
    if judge is None or judge is False or word in ("off", "false", "none", "no"):
        return None
    from veil.mask.judge import SpanJudge

    if judge is True or word in ("default", "true", "on", "yes"):
        return SpanJudge.load()
    if not isinstance(judge, (str, Path)):
        raise VeilError(f"neural_tagger: judge must be default, off or a folder, not {judge!r}")
    if not Path(judge).is_dir():
        raise VeilError(f"neural_tagger: judge {judge!r} is neither default, off nor a folder")
    return SpanJudge.load(judge)


_NAME_PART = re.compile(r"[^\W\d_][\w'’-]{2,}")
#: the labels whose other occurrences in a text are masked too (names: the same string is the same entity)
PROPAGATED_LABELS = frozenset({"PERSON_NAME", "ORGANIZATION_NAME", "LOCATION"})


def propagate_names(text: str, spans: list[Span], source: str) -> list[Span]:
    """``spans`` and every other whole-word occurrence (case-insensitive) of a name among them
    (:data:`PROPAGATED_LABELS`); a lower-case common word alone is not propagated ("will", "bill")."""
    from veil.mask.allow_list import common_words
    from veil.mask.entity_tagger import propagate

    common = common_words(5000)
    names = [sp for sp in spans if sp.label in PROPAGATED_LABELS
             and not ((w := text[sp.start:sp.end]).islower() and " " not in w and w in common)]
    # a person's first or last name alone is the person too ("Aantje Mourik" ... "Aantje")
    names += [Span(sp.start + m.start(), sp.start + m.end(), sp.label, sp.source, sp.score)
              for sp in names if sp.label == "PERSON_NAME"
              for m in _NAME_PART.finditer(text[sp.start:sp.end])
              if (m.end() - m.start()) < sp.end - sp.start and m.group().lower() not in common]
    if not names:
        return spans
    import bisect

    covered = sorted((sp.start, sp.end) for sp in spans)
    starts = [s for s, _ in covered]
    ends = list(itertools.accumulate((e for _, e in covered), max))  # the furthest end among the first k spans

    def overlaps(sp: Span) -> bool:
        k = bisect.bisect_left(starts, sp.end)  # the spans starting before this one ends
        return k > 0 and ends[k - 1] > sp.start

    return spans + [sp for sp in propagate(text, names, source) if not overlaps(sp)]
