"""Review stage: which documents (or calls) a reviewer reads first -- a seeded random sample, or those the tagger is
least sure of that cover the most distinct uncertain words.

:func:`pick_documents` is the one entry point (``veil review --sample N --pick``; ``bench/bench_adapt.py``
simulates a reviewer with it). ``uncertain`` is greedy on a monotone submodular gain: a unit's candidate words
are the words whose reading sits near the tagger's decision threshold, each with an uncertainty ``u`` in (0, 1]
(:class:`TaggerScorer`); a set of picked units is worth ``sum over distinct words w of sqrt(U_w)``, ``U_w`` the
summed uncertainty of ``w`` over the set. A word's first uncertain tokens count most and its repeats less and
less, so the next pick is the unit that brings the most uncertainty on words not read yet ("Ventura" read as a
person in ten calls is one lesson, not ten). Greedy order is kept: the first ``k`` of ``n`` picks are the ``k``
picks, so a learning curve over 10, 30, 100 reviewed documents reviews nested sets.
"""

from __future__ import annotations

import heapq
import math
import random
import re
from typing import Any, Callable, Sequence

from veil.errors import VeilError

PICKS = ("random", "uncertain")
#: a word is a candidate when its uncertainty (:class:`TaggerScorer`) is at least this: within about 2.3 nats of
#: log-odds of the threshold that decides whether it is masked
MIN_UNCERTAINTY = 0.1

#: scorer(texts) -> per text, its candidate words as (word, uncertainty in (0, 1]) pairs (a word may repeat)
Scorer = Callable[[Sequence[str]], Sequence[Sequence[tuple[str, float]]]]


def pick_documents(docs: Sequence[str | Sequence[str]], n: int, how: str = "random", seed: int = 0,
                   scorer: Scorer | None = None) -> list[int]:
    """The indices of the ``n`` units of ``docs`` to review, in pick order (all of them when ``n`` is larger).

    ``docs``: one item per unit -- a document's text, or a call's texts (a sequence of its utterances);
    ``how``: ``random`` (``random.Random(seed).sample``; ``scorer`` unused) or ``uncertain`` (greedy on the
    gain in the module docstring; units with no candidate word left come last, in seeded random order;
    ties break by the same seeded order, so a seed gives one answer). ``scorer``: see :data:`Scorer`; default
    :class:`TaggerScorer` (the shipped neural tagger). Deterministic for a given seed and scorer.
    """
    if how not in PICKS:
        raise VeilError(f"--pick {how!r}: choose {' or '.join(PICKS)}")
    if n < 1:
        raise VeilError("--sample must be at least 1")
    rng = random.Random(seed)
    if how == "random":
        return rng.sample(range(len(docs)), min(n, len(docs)))
    units = [[d] if isinstance(d, str) else list(d) for d in docs]
    flat = [t for u in units for t in u]
    scored = list((scorer or TaggerScorer())(flat))
    if len(scored) != len(flat):
        raise VeilError(f"the pick's scorer returned {len(scored)} results for {len(flat)} texts")
    masses: list[dict[str, float]] = []
    k = 0
    for u in units:
        mass: dict[str, float] = {}
        for words in scored[k:k + len(u)]:
            for word, unc in words:
                if unc > 0 and math.isfinite(unc):
                    mass[word] = mass.get(word, 0.0) + float(unc)
        masses.append(mass)
        k += len(u)
    return greedy_cover(masses, n, rng)


def greedy_cover(masses: Sequence[dict[str, float]], n: int, rng: random.Random) -> list[int]:
    """Greedy (lazy: a gain only shrinks as the set grows) on ``sum_w sqrt(U_w)``; see the module docstring."""
    tie = list(range(len(masses)))
    rng.shuffle(tie)
    covered: dict[str, float] = {}

    def gain(i: int) -> float:
        return sum(math.sqrt(covered.get(w, 0.0) + m) - math.sqrt(covered.get(w, 0.0)) for w, m in masses[i].items())

    heap = [(-gain(i), tie[i], i) for i in range(len(masses))]
    heapq.heapify(heap)
    picked: list[int] = []
    while heap and len(picked) < n:
        _, t, i = heapq.heappop(heap)
        now = gain(i)
        if heap and (-now, t) > heap[0][:2]:  # its bound was stale: put it back with its true gain
            heapq.heappush(heap, (-now, t, i))
            continue
        picked.append(i)
        for w, m in masses[i].items():
            covered[w] = covered.get(w, 0.0) + m
    return picked


_WORD_CHAR = re.compile(r"\w")


class TaggerScorer:
    """The default scorer: the neural tagger's reading of each word against its decision threshold.

    A word's P(not an entity) is its pieces' least (as the tagger decodes it), its type the most likely
    one; its margin is the distance in log-odds between that P and the type's calibrated threshold (the
    written one for a written document), and its uncertainty ``exp(-margin)``: 1 on the threshold, 0.37
    one nat away. Words with an uncertainty of :data:`MIN_UNCERTAINTY` or more are the candidates, keyed
    by their lower-cased surface. ``options`` go to :class:`veil.mask.neural.tagger.NeuralTaggerMasker`
    (``model=DIR`` scores with an adapted detector); ``progress`` shows a bar on standard error (the tagger
    reads every document: about 30 s for 2,000 utterances on 2 CPUs).
    """

    #: texts the tagger reads between two updates of the progress bar
    CHUNK = 256

    def __init__(self, progress: bool = False, **options: Any) -> None:
        self.options = options
        self.progress = progress
        self._tagger: Any = None

    def __call__(self, texts: Sequence[str]) -> list[list[tuple[str, float]]]:
        if self._tagger is None:
            from veil.mask.neural.tagger import NeuralTaggerMasker

            self._tagger = NeuralTaggerMasker(**self.options)
        from tqdm import tqdm

        tagger = self._tagger
        out: list[list[tuple[str, float]]] = []
        with tqdm(total=len(texts), desc="pick uncertain", unit="doc", disable=not self.progress, leave=False) as bar:
            for k in range(0, len(texts), self.CHUNK):
                chunk = texts[k:k + self.CHUNK]
                for text, windows in zip(chunk, tagger.score_batch(chunk)):
                    out.append(word_uncertainty(text, windows, tagger))
                bar.update(len(chunk))
        return out


def word_uncertainty(text: str, windows: Sequence[tuple[Any, Any]], tagger: Any) -> list[tuple[str, float]]:
    """``(word, uncertainty)`` of the candidate words of one text from the tagger's scored windows."""
    import numpy as np

    from veil.mask.detectors.base import written_in

    limits = tagger.written_thresholds if written_in(tagger.register, text) else tagger.thresholds
    limit = np.array([limits.get(k, 0.5) for k in tagger.kinds], dtype=np.float64)
    out: list[tuple[str, float]] = []
    for offsets, by_type in windows:
        words: list[list[int]] = []  # piece indices of each word
        prev = -1
        for i, (s, e) in enumerate(offsets):
            if e <= s:
                continue
            if words and s == prev and _WORD_CHAR.match(text[s]) and _WORD_CHAR.match(text[s - 1]):
                words[-1].append(i)
            else:
                words.append([i])
            prev = e
        for pieces in words:
            rows = np.asarray(by_type[pieces], dtype=np.float64)
            start, end = offsets[pieces[0]][0], offsets[pieces[-1]][1]
            key = text[start:end].casefold()
            if not _WORD_CHAR.search(key):
                continue
            p_o = float(np.clip(rows[:, 0].min(), 1e-6, 1 - 1e-6))
            t = float(np.clip(limit[int(rows[:, 1:].mean(0).argmax())], 1e-6, 1 - 1e-6))
            margin = abs(math.log(p_o / (1 - p_o)) - math.log(t / (1 - t)))
            unc = math.exp(-margin)
            if unc >= MIN_UNCERTAINTY:
                out.append((key, round(unc, 6)))
    return out
