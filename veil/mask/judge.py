"""Detect and mask stage: the span judge, a classifier learned from gold that keeps or drops a merged span.

In conversation, whether a date, a job, an age or a condition is personal depends on who it is about: "my
sister is a teacher" is a fact about a person, "there is a great incentive to be a doctor" is not; "I bought
mine a year ago" dates the speaker's life, "a couple of years ago" in a talk about prices does not. The
detectors (``dlp``'s patterns, the neural tagger) find the value; the judge reads the words around it and says
whether annotated calls would have marked it.

It is a logistic regression over hashed words of the span and its context (:func:`features`: the span's words,
the words just before and after it and their pairs, the utterance's first- and second-person words, which
maskers found it), each feature also conjoined with the span's type, so that "for" before an amount and "for"
before a date weigh apart. It is trained on the spans the default masking finds in gold conversations (the
annotated Switchboard train fold, SGD training dialogues outside the unseen families): a span is "keep" where
gold covers most of its words (DIRECT, QUASI or OPTIONAL). The types it judges, and a threshold for each, are
chosen on the dev sets (``bench/train_judge.py``; the shipped one judges conditions, places and organisations; not
ages, jobs, dates or amounts, whose judging lost a mention on some dev set: docs/detection.md, "The span
judge").

It judges only types of :data:`JUDGED` (those QUASI by nature), of them only those whose judging lost no DIRECT
or QUASI mention on any dev set, each at its own threshold (the folder's ``thresholds``), and only text in
conversation (written documents keep every span). It never drops a name, a phone number, an address or an
identifier.
"""

from __future__ import annotations

import bisect
import itertools
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Sequence

from veil.errors import VeilError
from veil.types import Span

#: the shipped judge
PACKAGED_DIR = Path(__file__).resolve().parents[1] / "data" / "judge"
WEIGHTS_FILE = "judge.npz"
META_FILE = "judge.json"
#: 2**18 hashed features (sklearn's ``FeatureHasher``: murmurhash3, stable across runs and machines)
N_FEATURES = 1 << 18
#: the types whose spans may be judged: QUASI by nature, where context says whether a value is about a person.
#: Not ``NUMBER``: a number read out ("six one seven, five five five ...") is often a phone number or an id.
#: A trained judge judges those of them that lost no DIRECT or QUASI mention on any dev set (its ``judged``)
JUDGED = frozenset({"DATE", "MONEY", "AGE", "OCCUPATION", "DEMOGRAPHIC", "ORGANIZATION_NAME", "LOCATION"})
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_FIRST = frozenset({"i", "i'm", "i've", "i'd", "i'll", "my", "me", "mine", "we", "we're", "we've", "our", "us"})
_SECOND = frozenset({"you", "your", "you're", "you've"})
_LEFT, _RIGHT = 6, 4
_WINDOW = 200  # characters each side of a span that hold its context words


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def kept_in_groups(texts: Sequence[str], merged: Sequence[Sequence[Span]], judged: Sequence[tuple[int, int]],
                   drop: set[tuple[int, int]], groups: Sequence[Any] | None) -> set[tuple[int, int]]:
    """``drop`` (``(text, span)`` indices among the ``judged`` ones) less the spans whose value, the same words of
    the same type, is kept in another record of their group."""
    if not drop or groups is None:
        return drop

    def key(i: int, j: int) -> tuple[Any, str, tuple[str, ...]]:
        s = merged[i][j]
        return groups[i], s.label, _key(texts[i][s.start:s.end])

    kept = {key(i, j) for i, j in judged if (i, j) not in drop and groups[i] is not None}
    return {(i, j) for i, j in drop if groups[i] is None or key(i, j) not in kept}


def _key(surface: str) -> tuple[str, ...]:
    """A value's words, as a call's other mentions of it are matched."""
    return tuple(_words(surface))


def text_words(text: str) -> frozenset[str]:
    """The words of a text, as :func:`features` reads them."""
    return frozenset(_words(text))


def features(text: str, start: int, end: int, label: str, found_by: str, score: float,
             words: frozenset[str] | None = None) -> list[str]:
    """The hashed features of span ``[start, end)`` of type ``label`` in ``text``: string keys, each once plain
    and once with the type in front. ``found_by``: which maskers found it (``"t"`` the tagger, ``"d"`` dlp,
    ``"td"`` both); ``score``: the merged span's score (the surest of its maskers), in tenths; ``words``: the
    text's words (:func:`text_words`), computed once per text by a caller with many spans. Linear in the span:
    the context is read from a window of characters around it."""
    span = _words(text[start:end])
    left = _words(text[max(0, start - _WINDOW):start])[-_LEFT:]
    right = _words(text[end:end + _WINDOW])[:_RIGHT]
    every = text_words(text) if words is None else words
    keys = [f"by={found_by}", f"score={min(int(score * 10), 9)}", f"len={min(len(span), 5)}",
            f"first={bool(every & _FIRST)}",
            f"second={bool(every & _SECOND)}", f"lwords={min(len(left), 3)}", f"rwords={min(len(right), 2)}"]
    keys += [f"s={w}" for w in span]
    if span:
        keys += [f"s0={span[0]}", f"s-1={span[-1]}"]
    for i, w in enumerate(reversed(left[-3:])):
        keys.append(f"l{i + 1}={w}")
    if len(left) >= 2:
        keys.append(f"l12={left[-2]}_{left[-1]}")
    keys += [f"lb={w}" for w in left]
    for i, w in enumerate(right[:2]):
        keys.append(f"r{i + 1}={w}")
    if len(right) >= 2:
        keys.append(f"r12={right[0]}_{right[1]}")
    keys += [f"rb={w}" for w in right]
    return ["bias"] + keys + [f"{label}|{k}" for k in keys] + [f"lab={label}"]


def _hasher() -> Any:
    from sklearn.feature_extraction import FeatureHasher

    return FeatureHasher(n_features=N_FEATURES, input_type="string", alternate_sign=False)


def vectorise(rows: Iterable[list[str]]) -> Any:
    """A sparse matrix of hashed feature rows."""
    return _hasher().transform(rows)


class _Overlaps:
    """Whether any of some spans overlaps ``[start, end)``, in log time: starts sorted, the running maximum end."""

    def __init__(self, spans: Sequence[Span]) -> None:
        ordered = sorted((s.start, s.end) for s in spans)
        self.starts = [a for a, _ in ordered]
        self.reach = list(itertools.accumulate((b for _, b in ordered), max))

    def __call__(self, start: int, end: int) -> bool:
        i = bisect.bisect_left(self.starts, end)  # the spans starting before ``end``
        return i > 0 and self.reach[i - 1] > start


def found_by(span: Span, tagger: Sequence[Span] | _Overlaps, dlp: Sequence[Span] | _Overlaps) -> str:
    """``"t"``, ``"d"``, ``"td"`` or ``""``: which of the tagger's and dlp's own spans overlap ``span``."""
    t = (tagger if isinstance(tagger, _Overlaps) else _Overlaps(tagger))(span.start, span.end)
    d = (dlp if isinstance(dlp, _Overlaps) else _Overlaps(dlp))(span.start, span.end)
    return ("t" if t else "") + ("d" if d else "")


class SpanJudge:
    """A trained judge: ``SpanJudge.load(folder)``; :meth:`probabilities` of feature rows (:func:`features`) being
    kept; :meth:`judge` drops the merged spans of its judged types below their type's threshold (``thresholds``,
    one per judged type; a folder without them judges its ``judged`` types at its one ``threshold``)."""

    def __init__(self, weights: Any, bias: float, threshold: float, meta: dict[str, Any]) -> None:
        self.weights = weights
        self.bias = float(bias)
        self.threshold = float(threshold)
        self.meta = meta
        per_type = meta.get("thresholds")
        self.thresholds: dict[str, float] = ({str(k): float(v) for k, v in per_type.items()} if per_type else
                                             {t: self.threshold for t in meta.get("judged", ())})
        self.judged = frozenset(self.thresholds)

    @classmethod
    def load(cls, folder: str | Path | None = None) -> "SpanJudge":
        return _load(str(Path(folder) if folder else PACKAGED_DIR))

    def probabilities(self, rows: Sequence[list[str]]) -> Any:
        import numpy as np

        if not rows:
            return np.zeros(0, dtype=np.float64)
        z = vectorise(rows) @ self.weights + self.bias
        return 1.0 / (1.0 + np.exp(-np.asarray(z, dtype=np.float64)))

    def judge(self, texts: Sequence[str], merged: Sequence[list[Span]], tagger: Sequence[Sequence[Span]],
              dlp: Sequence[Sequence[Span]], conversation: Sequence[bool],
              groups: Sequence[Any] | None = None) -> list[list[Span]]:
        """``merged`` without the judged spans the judge drops (only in texts where ``conversation`` is true).

        With ``groups`` (a call's utterances share one), a value kept in one record of a group is kept in every
        record of it: the same words of the same type are masked throughout a call or nowhere, so no masked
        value survives elsewhere in the call (what ``veil verify`` checks)."""
        rows, where = [], []
        for i, (text, spans) in enumerate(zip(texts, merged)):
            if not conversation[i] or not any(s.label in self.judged for s in spans):
                continue
            words, by_tagger, by_dlp = text_words(text), _Overlaps(tagger[i]), _Overlaps(dlp[i])
            for j, s in enumerate(spans):
                if s.label in self.judged:
                    rows.append(features(text, s.start, s.end, s.label, found_by(s, by_tagger, by_dlp), s.score, words))
                    where.append((i, j))
        if not rows:
            return [list(s) for s in merged]
        p = self.probabilities(rows)
        below = {w for w, q in zip(where, p) if q < self.thresholds[merged[w[0]][w[1]].label]}
        drop = kept_in_groups(texts, merged, where, below, groups)
        return [[s for j, s in enumerate(spans) if (i, j) not in drop] for i, spans in enumerate(merged)]


@lru_cache(maxsize=4)
def _load(folder: str) -> SpanJudge:
    import numpy as np

    path = Path(folder)
    if not (path / META_FILE).is_file() or not (path / WEIGHTS_FILE).is_file():
        raise VeilError(f"no span judge in {path} (need {META_FILE} and {WEIGHTS_FILE}); "
                        f"train one with `python bench/train_judge.py --out {path}`")
    try:
        meta = json.loads((path / META_FILE).read_text(encoding="utf-8"))
        with np.load(path / WEIGHTS_FILE) as z:
            weights = np.zeros(N_FEATURES, dtype=np.float32)
            weights[z["index"]] = z["value"]
            bias = float(z["bias"])
    except Exception as e:  # a damaged folder: numpy and json raise many types
        raise VeilError(f"the span judge in {path} cannot be loaded ({type(e).__name__}: {e})") from None
    if not isinstance(meta.get("threshold"), (int, float)) or not 0.0 <= float(meta["threshold"]) <= 1.0:
        raise VeilError(f"the span judge in {path} has no threshold in [0, 1] in its {META_FILE}")
    if int(meta.get("n_features", N_FEATURES)) != N_FEATURES:
        raise VeilError(f"the span judge in {path} hashes {meta.get('n_features')} features, this veil {N_FEATURES}")
    per_type = meta.get("thresholds")
    if per_type is not None and not (isinstance(per_type, dict) and all(
            isinstance(v, (int, float)) and 0.0 <= float(v) <= 1.0 for v in per_type.values())):
        raise VeilError(f"the span judge in {path} has thresholds that are not a type -> number in [0, 1] in its "
                        f"{META_FILE}")
    unknown = (set(meta.get("judged", ())) | set(per_type or ())) - JUDGED
    if unknown:
        raise VeilError(f"the span judge in {path} judges types veil never lets it drop: {', '.join(sorted(unknown))}")
    return SpanJudge(weights, bias, float(meta["threshold"]), meta)


def save(folder: Path, weights: Any, bias: float, threshold: float, meta: dict[str, Any]) -> None:
    """Write a judge folder: the non-zero hashed weights (``judge.npz``) and what produced them (``judge.json``)."""
    import io

    import numpy as np

    from veil.io.atomic import atomic_write

    idx = np.flatnonzero(weights).astype(np.int32)
    buf = io.BytesIO()
    np.savez_compressed(buf, index=idx, value=weights[idx].astype(np.float32), bias=np.float64(bias))
    with atomic_write(Path(folder) / WEIGHTS_FILE, "wb") as f:
        f.write(buf.getvalue())
    meta = dict(meta, threshold=float(threshold), n_features=N_FEATURES, judged=sorted(meta.get("judged", ())))
    if meta.get("thresholds"):
        meta["thresholds"] = {k: float(v) for k, v in sorted(meta["thresholds"].items())}
        meta["judged"] = sorted(meta["thresholds"])
    with atomic_write(Path(folder) / META_FILE, "w") as f:
        f.write(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    _load.cache_clear()
