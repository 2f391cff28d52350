"""Core: numeric summaries every stage reports the same way (the spread over seeds, over documents)."""

from __future__ import annotations

import math
from typing import Iterable


def sample_std(xs: Iterable[float | None]) -> float | None:
    """Sample standard deviation (n - 1) of the finite values; None for fewer than two."""
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    if len(xs) < 2:
        return None
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))
