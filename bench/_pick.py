"""Which documents a reviewer sees first: at random, or those the tagger is least sure of (bench_adapt's own copy).

``pick_documents(docs, n, how, seed, scorer)`` returns the indices of ``n`` documents of ``docs`` (anything with
``.text``). ``uncertain`` reads each document with ``scorer`` (a ``NeuralTaggerMasker``: its ``score_batch``
gives every word piece's probability of "not an entity") and takes, greedily, the document whose candidate words
(a piece with some entity probability) are least decided and not yet covered by a picked document: a reviewer's
first documents then hold the most distinct doubtful words. Ties and the rest go in a seeded random order.
"""

from __future__ import annotations

import random
import re
from typing import Any, Sequence

#: a piece is a candidate when the model gives an entity this much probability at least
CANDIDATE = 0.05
_WORD = re.compile(r"[\w'’-]+")


def candidate_words(text: str, windows: Sequence[tuple[Any, Any]]) -> dict[str, float]:
    """Lower-cased word -> its doubt (1 at P(O) = 0.5, 0 when the model is sure either way), for the words one of
    whose pieces the model gives an entity :data:`CANDIDATE` probability or more."""
    out: dict[str, float] = {}
    for offsets, by_type in windows:
        for (s, e), row in zip(offsets, by_type):
            p_o = float(row[0])
            if e <= s or p_o > 1 - CANDIDATE:
                continue
            m = next((m for m in _WORD.finditer(text, max(0, s - 40), min(len(text), e + 40))
                      if m.start() <= s < m.end()), None)
            word = (m.group() if m else text[s:e]).lower()
            out[word] = max(out.get(word, 0.0), 1 - abs(2 * p_o - 1))
    return out


def pick_documents(docs: Sequence[Any], n: int, how: str = "random", seed: int = 0, scorer: Any = None) -> list[int]:
    order = list(range(len(docs)))
    random.Random(seed).shuffle(order)
    n = min(n, len(docs))
    if how == "random":
        return order[:n]
    if how != "uncertain":
        raise ValueError(f"pick: {how!r} is not random or uncertain")
    if scorer is None:
        raise ValueError("pick uncertain needs a scorer (the tagger)")
    texts = [d.text for d in docs]
    words = [candidate_words(t, w) for t, w in zip(texts, scorer.score_batch(texts))]
    covered: set[str] = set()
    chosen: list[int] = []
    left = list(order)
    while len(chosen) < n:
        gains = [sum(u for w, u in words[i].items() if w not in covered) for i in left]
        best = max(range(len(left)), key=lambda k: gains[k])  # the first of equals: seeded order
        i = left.pop(best)
        chosen.append(i)
        covered.update(words[i])
    return chosen
