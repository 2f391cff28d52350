"""Word tokenisation shared by every stage (masking statistics, allow lists, perplexity per word)."""

from __future__ import annotations

import re
from typing import Iterator

# A word: letters/digits with internal apostrophes ("don't", "o'clock"); punctuation is not a word.
WORD_RE = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")


def iter_words(text: str) -> Iterator[tuple[int, int, str]]:
    for m in WORD_RE.finditer(text):
        yield m.start(), m.end(), m.group()


def count_words(text: str) -> int:
    return sum(1 for _ in WORD_RE.finditer(text))


def normalise_surface(s: str) -> str:
    """The key under which two mentions count as the same entity (case, spacing, edge punctuation)."""
    return " ".join(re.sub(r"^\W+|\W+$", "", s).casefold().split())
