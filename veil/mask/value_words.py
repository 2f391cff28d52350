"""Which words of a removed value name something alone: one rule for the masking, which carries such a
word over a call (:mod:`veil.mask.propagation`), and for `veil verify`, which looks for it
(:mod:`veil.audit.verify_match`).

A word of a value of several words (not a name: names have their own rule) identifies alone when it is
rarer than :data:`RARE_ZIPF` on wordfreq's Zipf scale ("cougar" of the street "sixty-nine cougar",
"northwind", "mifflin") and is not a word the fill writes of its own into substitutes (a shape's literal
words: "Street", "Bank", "PLC", "years old"; a title or name suffix), a word this value's shape keeps, a
number word ("sixty", "nine") or a decade ("sixties").
"""

from __future__ import annotations

from functools import lru_cache

#: a word of a longer value (not a name) identifies alone when rarer than this (wordfreq's Zipf
#: scale: "northwind" 1.6, "mifflin" 3.0 and "lopez" 3.8 are; "abc" 4.2, "fund" 4.8 and "bank" 5.2 are not)
RARE_ZIPF = 4.0


@lru_cache(maxsize=1)
def number_words() -> frozenset[str]:
    """Cardinals and ordinals below a hundred, and the words of larger numbers."""
    from veil.textforms import cardinal, ordinal

    words = {w for n in range(100) for w in cardinal(n) + ordinal(n)}
    return frozenset(words | {"hundred", "thousand", "million", "billion", "hundreds", "thousands", "millions"})


@lru_cache(maxsize=1)
def fill_words() -> frozenset[str]:
    """Lower-case words that name nothing alone: those the fill writes of its own, number words, decades."""
    from veil.gazetteer import CONNECTORS, NAME_SUFFIXES, ORG_KINDS, STREET_WORDS, TITLES
    from veil.mask.detectors.personal import DECADES
    from veil.shapes import LITERAL_WORDS

    # a decade ("the sixties") names nothing alone, as a number word does
    words = set(LITERAL_WORDS) | set(TITLES) | NAME_SUFFIXES | ORG_KINDS | STREET_WORDS | CONNECTORS | set(DECADES)
    return frozenset(w.lower() for w in words) | number_words()


def kept_words(label: str, value: str) -> frozenset[str]:
    """:func:`fill_words` and the words this value's shape keeps."""
    from veil.shapes import atoms, shape_of

    try:
        shape = shape_of(label, value)
    except (ValueError, KeyError):
        shape = None
    return fill_words() | {a[1:-1].lower() for a in atoms(shape or "") if a.startswith("{")}


@lru_cache(maxsize=65536)
def zipf(word: str) -> float:
    from wordfreq import zipf_frequency

    return zipf_frequency(word, "en")


def rare_word(word: str, kept: frozenset[str]) -> bool:
    """Whether a lower-case word of a value identifies alone (module docstring); ``kept``: the value's
    :func:`kept_words`."""
    return len(word) >= 3 and not word.isdigit() and word not in kept and zipf(word) < RARE_ZIPF
