"""ASR evaluation stage: n-best rescoring (``log p_asr + lambda * log p_LM + beta * words``), its tuning, and WER.

WER is corpus-level: (substitutions + deletions + insertions) / reference words, summed over the
utterances (jiwer's definition), on :func:`veil.downstream.asr.text.normalise`\\ d text. Because it is a sum,
every hypothesis's errors are counted once (:func:`hypothesis_errors`) and any choice of
hypotheses is scored by adding them up; that makes the lambda x beta grid search exact and cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from veil.errors import VeilError


@dataclass
class NBest:
    """One utterance's n-best list: per hypothesis its ASR log-probability, length and word errors."""

    asr: list[float]  # log p_asr (nats): see :func:`acoustic_scores`
    words: list[int]  # words of the hypothesis (the word bonus counts these)
    errors: list[int]  # word errors against the reference
    ref_words: int

    def __post_init__(self) -> None:
        if not self.asr or not len(self.asr) == len(self.words) == len(self.errors):
            raise VeilError("an n-best list needs one ASR score, word count and error count per hypothesis")


def acoustic_scores(hyps: Sequence[dict]) -> list[float]:
    """The ``log p_asr`` of each hypothesis for the fusion: its length-normalised score (the one the
    recogniser ranks its beam by) times the first hypothesis's token count.

    So with lambda = beta = 0 the fused choice is the recogniser's own first hypothesis (ASR-without-LM
    lies inside the tuning grid), while the term keeps the scale of a sentence's log-probability for
    lambda. The raw total log-probability (``score x own length``) favours short hypotheses, which the
    recogniser's length normalisation does not: with it, a small dev split tuned beta to undo that and
    the Oracle LM raised the demo's WER from 20.2% to 25.6%.
    """
    if not hyps:
        raise VeilError("an n-best list needs at least one hypothesis")
    n = max(1, int(hyps[0].get("tokens") or 1))
    return [float(h["score"]) * n for h in hyps]


def word_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    """(S + D + I, reference words) of two normalised texts (jiwer's alignment)."""
    import jiwer

    ref, hyp = reference.split(), hypothesis.split()
    if not ref:  # jiwer refuses an empty reference: every hypothesis word is an insertion
        return len(hyp), 0
    if not hyp:
        return len(ref), len(ref)
    o = jiwer.process_words(reference, hypothesis)
    return o.substitutions + o.deletions + o.insertions, len(ref)


def hypothesis_errors(reference: str, hypotheses: Sequence[str]) -> tuple[list[int], int]:
    """Word errors of each (normalised) hypothesis against the (normalised) reference, and its length."""
    errs = [word_errors(reference, h)[0] for h in hypotheses]
    return errs, len(reference.split())


def choose(nb: NBest, lm: Sequence[float] | None, lam: float, beta: float) -> int:
    """Index of the hypothesis with the highest fused score (the first on ties: the beam's order)."""
    best, best_i = float("-inf"), 0
    for i, (a, w) in enumerate(zip(nb.asr, nb.words)):
        s = a + beta * w + (lam * lm[i] if lm is not None and lam else 0.0)
        if s > best:
            best, best_i = s, i
    return best_i


def wer(lists: Sequence[NBest], picks: Sequence[int]) -> float:
    """Corpus WER (percent) of the chosen hypotheses."""
    ref = sum(nb.ref_words for nb in lists)
    err = sum(nb.errors[i] for nb, i in zip(lists, picks))
    if ref == 0:
        raise VeilError("WER: the references have no words")
    return 100.0 * err / ref


def picks_of(lists: Sequence[NBest], lm: Sequence[Sequence[float]] | None, lam: float, beta: float) -> list[int]:
    """The hypothesis each list's fused score chooses (:func:`choose`)."""
    return [choose(nb, lm[j] if lm is not None else None, lam, beta) for j, nb in enumerate(lists)]


def rescored_wer(lists: Sequence[NBest], lm: Sequence[Sequence[float]] | None, lam: float, beta: float) -> float:
    return wer(lists, picks_of(lists, lm, lam, beta))


def first_best_wer(lists: Sequence[NBest]) -> float:
    """The recogniser alone: its first hypothesis (ASR-without-LM)."""
    return wer(lists, [0] * len(lists))


def oracle_wer(lists: Sequence[NBest]) -> float:
    """The n-best oracle: the fewest errors any rescoring of these lists could reach."""
    return wer(lists, [min(range(len(nb.errors)), key=nb.errors.__getitem__) for nb in lists])


def tune(lists: Sequence[NBest], lm: Sequence[Sequence[float]], lm_weights: Sequence[float],
         word_bonus: Sequence[float]) -> tuple[float, float, float]:
    """(lambda, beta, WER) with the lowest WER on ``lists`` over the grid; ties go to the earlier grid point."""
    if len(lm) != len(lists) or any(len(a) != len(nb.asr) for a, nb in zip(lm, lists)):
        raise VeilError("tune: one LM score per hypothesis is needed")
    best: tuple[float, float, float] | None = None
    for lam in lm_weights:
        for beta in word_bonus:
            w = rescored_wer(lists, lm, float(lam), float(beta))
            if best is None or w < best[2] - 1e-12:
                best = (float(lam), float(beta), w)
    assert best is not None
    return best


def paired_interval(lists: Sequence[NBest], picks_a: Sequence[int], picks_b: Sequence[int], resamples: int = 2000,
                    level: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """The ``level`` interval of WER(a) - WER(b), in points, by a paired bootstrap over utterances.

    Both systems choose from the same lists, so each resample draws utterances with replacement and recomputes
    both corpus WERs on that draw: an interval that holds 0 says the test set cannot order the two. Seeded, so a
    report is reproducible."""
    import numpy as np

    if not len(lists) == len(picks_a) == len(picks_b):
        raise VeilError("paired_interval: one pick per list and system is needed")
    if not lists or resamples < 1 or not 0 < level < 1:
        raise VeilError("paired_interval: needs lists, resamples >= 1 and 0 < level < 1")
    diff = np.array([nb.errors[a] - nb.errors[b] for nb, a, b in zip(lists, picks_a, picks_b)], dtype=float)
    ref = np.array([nb.ref_words for nb in lists], dtype=float)
    draws = np.random.default_rng(seed).integers(0, len(lists), size=(resamples, len(lists)))
    words = ref[draws].sum(axis=1)
    d = 100.0 * diff[draws].sum(axis=1) / np.maximum(words, 1.0)
    lo, hi = np.quantile(d, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)
