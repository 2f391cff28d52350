"""Detect and mask stage: the share of word tokens a masking covers (the paper's Table 2 statistic)."""

from __future__ import annotations

from bisect import bisect_right
from typing import Sequence

from veil.textutil import iter_words
from veil.types import Span


def masked_word_counts(text: str, spans: Sequence[Span]) -> tuple[int, int]:
    """(words overlapped by any span, all words) for one text; spans must be merged (sorted, disjoint)."""
    starts = [s.start for s in spans]
    masked = total = 0
    for ws, we, _ in iter_words(text):
        total += 1
        i = bisect_right(starts, we - 1) - 1  # last span starting before the word's end
        if i >= 0 and spans[i].end > ws:
            masked += 1
    return masked, total
