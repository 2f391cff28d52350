"""Fill stage: choosing one substitute from a model's ranked candidates (Top-1, Top-K with avoidance).

The paper (§3.2): **Top-1** takes the best prediction; **Top-K** draws uniformly among the top K
(K = 10) and, for a mask placed by the *allowList* or *vocabThres* technique, draws again until the
word is not on that technique's list or no candidate is left. Drawing again without replacement is
the same as walking a random permutation of the K candidates and taking the first acceptable one,
which is what :func:`choose_topk` does (one permutation per draw, from the document's own RNG, so
the outcome depends only on the seed, the document and its earlier draws, never on batching).
When every candidate is on the list, the first draw is kept (the paper leaves this case open; an
allow-listed word is a safe, if less private-looking, substitute).

**sample** (not in the paper) draws among the top K with the model's own probabilities,
``softmax(score / temperature)``, after the same avoidance. Uniform Top-K gives the 10th candidate
as much weight as the 1st, and Top-1 gives every context its single most likely word; a corpus
drawn from the model's posterior is the one whose statistics match the masked words' best
(a downstream LM trained on it learns the model's distribution, not its mode or a flattened tail).
The scores are the back-end's: the ``llm`` filler's whole-sentence log-likelihoods (so the softmax
is its posterior over the candidates), the ``mlm`` filler's log-probabilities at the mask.
"""

from __future__ import annotations

import math
import random
from typing import AbstractSet, Sequence

STRATEGIES = ("top1", "topk", "sample")
#: what each strategy puts in a placeholder (the report's legend)
DESCRIPTIONS = {"top1": "the model's best word", "topk": "a word drawn among the model's top K",
                "sample": "a word drawn with the model's probabilities"}
#: strategies that look past the best candidate (they ask the model for K candidates)
K_STRATEGIES = ("topk", "sample")


def choose_top1(candidates: Sequence[str], avoid: AbstractSet[str] = frozenset()) -> str | None:
    """The best candidate; with a non-empty ``avoid``, the best one not on it (else the best)."""
    if not candidates:
        return None
    if avoid:
        for c in candidates:
            if c.lower() not in avoid:
                return c
    return candidates[0]


def choose_topk(candidates: Sequence[str], k: int, rng: random.Random,
                avoid: AbstractSet[str] = frozenset()) -> str | None:
    """Uniform among the first ``k`` candidates, re-drawn while the word is in ``avoid``
    (lower-cased comparison); the first draw when every candidate is in ``avoid``."""
    pool = list(candidates[:k])
    if not pool:
        return None
    rng.shuffle(pool)
    if avoid:
        for c in pool:
            if c.lower() not in avoid:
                return c
    return pool[0]


def choose_sample(candidates: Sequence[str], scores: Sequence[float], k: int, rng: random.Random,
                  avoid: AbstractSet[str] = frozenset(), temperature: float = 1.0) -> str | None:
    """One of the first ``k`` candidates with probability ``softmax(score / temperature)``, among
    those not in ``avoid`` (lower-cased comparison; all of them when every one is in ``avoid``).
    Exactly one ``rng.random()`` draw per call."""
    pool = [(c, s) for c, s in zip(candidates[:k], scores[:k])]
    if not pool:
        return None
    if avoid:
        pool = [(c, s) for c, s in pool if c.lower() not in avoid] or pool
    t = max(temperature, 1e-6)
    top = max(s for _, s in pool)
    weights = [math.exp((s - top) / t) for _, s in pool]
    u = rng.random() * sum(weights)
    for (c, _), w in zip(pool, weights):
        u -= w
        if u < 0:
            return c
    return pool[-1][0]


def choose(strategy: str, candidates: Sequence[str], k: int, rng: random.Random,
           avoid: AbstractSet[str] = frozenset(), avoid_in_top1: bool = False,
           scores: Sequence[float] | None = None, temperature: float = 1.0) -> str | None:
    if strategy == "top1":
        return choose_top1(candidates, avoid if avoid_in_top1 else frozenset())
    if strategy == "topk":
        return choose_topk(candidates, k, rng, avoid)
    if strategy == "sample":
        if scores is None or len(scores) != len(candidates):
            raise ValueError("strategy 'sample' needs one score per candidate")
        return choose_sample(candidates, scores, k, rng, avoid, temperature)
    raise ValueError(f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}")
