"""Fill stage: choosing one substitute from a model's ranked candidates (Top-1, Top-K with avoidance).

The paper (§3.2): **Top-1** takes the best prediction; **Top-K** draws uniformly among the top K
(K = 10) and, for a mask placed by the *allowList* or *vocabThres* technique, draws again until the
word is not on that technique's list or no candidate is left. Drawing again without replacement is
the same as walking a random permutation of the K candidates and taking the first acceptable one,
which is what :func:`choose_topk` does (one permutation per draw, from the document's own RNG, so
the outcome depends only on the seed, the document and its earlier draws, never on batching).
When every candidate is on the list, the first draw is kept (the paper leaves this case open; an
allow-listed word is a safe, if less private-looking, substitute).
"""

from __future__ import annotations

import random
from typing import AbstractSet, Sequence

STRATEGIES = ("top1", "topk")


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


def choose(strategy: str, candidates: Sequence[str], k: int, rng: random.Random,
           avoid: AbstractSet[str] = frozenset(), avoid_in_top1: bool = False) -> str | None:
    if strategy == "top1":
        return choose_top1(candidates, avoid if avoid_in_top1 else frozenset())
    if strategy == "topk":
        return choose_topk(candidates, k, rng, avoid)
    raise ValueError(f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}")
