"""Detect and mask stage: the one lexicon matcher (longest term first, word by word), and the lexicon detector on it.

Two maskers look word runs up in a lexicon: the ``quasi`` masker (TAB's quasi-identifiers, by
label) and the DLP detectors of terms said about a person (occupations, health, nationality:
:mod:`veil.mask.detectors.personal`). Both scan a text's words left to right, try the longest run
first (up to a few words) and go on after a hit: :func:`longest_terms`. They differ only in how a
run becomes a key and whether its context admits it, which each passes in.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable, Iterator, TypeVar

from veil.gazetteer import plural_keys
from veil.mask.detectors.base import Detector
from veil.types import Span

T = TypeVar("T")
R = TypeVar("R")


def longest_terms(n_words: int, max_words: int, lookup: Callable[[int, int], T | None],
                  accept: Callable[[int, int, T], R | None]) -> Iterator[tuple[int, int, R]]:
    """``(i, j, accepted)`` for every term found among words ``0 .. n_words``, left to right.

    At word ``i`` the longest run ``i:j`` (at most ``max_words``) that ``lookup`` knows is the
    candidate; ``accept`` (its context) admits it or not. A rejected term is not tried shorter:
    the scan moves one word on, as it does where no run is a term; after a hit it goes on at ``j``.
    """
    i = 0
    while i < n_words:
        hit = None
        for j in range(min(i + max_words, n_words), i, -1):
            found = lookup(i, j)
            if found is not None:
                hit = accept(i, j, found)
                break
        if hit is None:
            i += 1
            continue
        yield i, j, hit
        i = j


_TOKEN = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
_LOWER_WORD = re.compile(r"[^\W\d_]+")


def last_words(terms: frozenset[tuple[str, ...]]) -> frozenset[str]:
    """Every form the last word of a term can take in a text (plurals too): a text without one holds no term."""
    out: set[str] = set()
    for t in terms:
        w = t[-1]
        out |= {w, w + "s", w + "es"}
        if w.endswith("y"):
            out.add(w[:-1] + "ies")
        if w.endswith("man"):
            out.add(w[:-3] + "men")
    return frozenset(out)


@lru_cache(maxsize=16)
def words_of(text: str) -> list[tuple[int, int, str]]:
    """The lower-case words of a text, hyphenated and apostrophe words split ("baby-sitter", "alzheimer's").

    Cached: the lexicon detectors run one after another on the same text.
    """
    flat: list[tuple[int, int, str]] = []
    for m in _TOKEN.finditer(text):
        pos, w = m.start(), m.group().lower().replace("’", "'")
        for part in re.split(r"(['-])", w):
            if part in ("'", "-"):
                pos += 1
                continue
            if part:
                flat.append((pos, pos + len(part), part))
                pos += len(part)
    return flat


class LexiconDetector(Detector):
    """Finds lexicon terms (longest first, up to :attr:`MAX_WORDS` words) whose context says they are about a person."""

    MAX_WORDS = 4
    SCORE = 0.7

    def __init__(self) -> None:
        self._last = last_words(self.terms())

    def terms(self) -> frozenset[tuple[str, ...]]:
        raise NotImplementedError

    def accept(self, text: str, words: list[tuple[int, int, str]], i: int, j: int) -> tuple[int, int] | None:
        """The span to report for the term ``words[i:j]``, or None when its context is not about a person."""
        raise NotImplementedError

    def find(self, text: str, source: str) -> Iterator[Span]:
        if self._last.isdisjoint(_LOWER_WORD.findall(text.lower())):
            return
        terms = self.terms()
        flat = words_of(text)

        def lookup(i: int, j: int) -> bool | None:
            run = tuple(w for _, _, w in flat[i:j])
            return True if any(k in terms for k in plural_keys(run)) else None

        for _, _, (s, e) in longest_terms(len(flat), self.MAX_WORDS, lookup,
                                          lambda i, j, _: self.accept(text, flat, i, j)):
            yield Span(s, e, self.label, source, self.SCORE)
