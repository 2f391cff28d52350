"""Audit stage, PPMLM: which words a method protects (direct and indirect identifiers, pseudonyms)."""

from __future__ import annotations

import re
from typing import Iterable, Mapping, Sequence

from veil.audit.ppmlm.methods import PSEUDONYM
from veil.textutil import iter_words
from veil.types import Document


def stop_words() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS  # a word list only; no pipeline is loaded

    return frozenset(w.lower() for w in STOP_WORDS)


def direct_words(direct: Mapping[str, set[str]], stop: Iterable[str] = ()) -> set[str]:
    """The word-level blacklist of direct identifiers: the words of every tagged entity, minus stop words."""
    stop = set(stop)
    out: set[str] = set()
    for strings in direct.values():
        for s in strings:
            out.update(w.lower() for _, _, w in iter_words(s) if w.lower() not in stop)
    return out


def split_indirect(indirect: Mapping[str, set[str]]) -> tuple[set[str], set[tuple[str, ...]]]:
    """Indirect identifiers as (single words, n-grams of >= 2 words as word tuples)."""
    words: set[str] = set()
    grams: set[tuple[str, ...]] = set()
    for strings in indirect.values():
        for s in strings:
            t = tuple(w.lower() for _, _, w in iter_words(s))
            if len(t) == 1:
                words.add(t[0])
            elif t:
                grams.add(t)
    return words, grams


def protected_flags(words: Sequence[str], blacklist: set[str], grams: set[tuple[str, ...]] = frozenset(),
                    max_n: int = 1) -> list[bool]:
    """Per word: is it a blacklisted word, or inside an occurrence of a blacklisted n-gram?"""
    flags = [w in blacklist for w in words]
    if grams:
        for n in range(2, max_n + 1):
            for i in range(len(words) - n + 1):
                if tuple(words[i:i + n]) in grams:
                    for j in range(i, i + n):
                        flags[j] = True
    return flags


def pseudonymise(docs: Iterable[Document], direct: Mapping[str, set[str]], placeholder: str = PSEUDONYM) -> list[Document]:
    """MLMA's training text: each occurrence of a person's direct identifiers replaced by ``placeholder``.

    Matching is case-insensitive on word boundaries, longest string first (as the entity tagger
    propagates a tagged surface through its document).
    """
    patterns: dict[str, re.Pattern | None] = {}
    out = []
    for d in docs:
        person = d.person or ""
        if person not in patterns:
            strings = sorted({s.strip() for s in direct.get(person, ()) if s.strip()}, key=len, reverse=True)
            patterns[person] = (re.compile(r"(?<!\w)(?:" + "|".join(re.escape(s) for s in strings) + r")(?!\w)",
                                           re.IGNORECASE) if strings else None)
        pat = patterns[person]
        text = pat.sub(placeholder, d.text) if pat else d.text
        out.append(Document(d.id, text, d.person, d.group, dict(d.meta)))
    return out
