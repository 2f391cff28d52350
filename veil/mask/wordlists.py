"""Detect and mask stage: the one home of the word lists the detection rules read, and of the tiers of "common word".

Each kind of word list is a file ``veil/data/lexicon/<kind>.txt`` (one word a line, ``#`` lines are comments,
order kept): :func:`words` reads it once as a frozen set, :func:`ordered` as a tuple. A rule that needs
honorifics, number words or organisation kind words reads them here, so a word added to a list reaches
every rule that reads it.

"Common word" has named tiers, all wordfreq's most frequent English words (lower case, both apostrophes):

- :data:`VERY_COMMON_1K`: a word too common to be a name unless the name lists say so ("as far as");
- :data:`ALLOW_5K`: the allow list's vocabulary, a "very common" word for the taggers ("will", "may", "said");
- :data:`COMMON_10K`: an ordinary English word for the detectors, and the stems a cut-off word is tested on;
- :data:`EVERYDAY_40K`: an everyday word that alone is no name; the rules take the name lists out of it
  (``veil.mask.neural.rules.lexical.everyday``: no first name, last name or place; ``everyday_no_place``:
  no place or first name, a surname may be one).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from veil.errors import VeilError

LEXICON_DIR = Path(__file__).resolve().parents[1] / "data" / "lexicon"

VERY_COMMON_1K = 1000
ALLOW_5K = 5000
COMMON_10K = 10000
EVERYDAY_40K = 40000
#: the tiers by name (``common("EVERYDAY_40K")``)
TIERS = {"VERY_COMMON_1K": VERY_COMMON_1K, "ALLOW_5K": ALLOW_5K, "COMMON_10K": COMMON_10K,
         "EVERYDAY_40K": EVERYDAY_40K}


def common(tier: int | str) -> frozenset[str]:
    """wordfreq's most frequent English words of a tier (a name of :data:`TIERS` or its size), lower case."""
    from veil.mask.allow_list import common_words

    n = TIERS.get(tier) if isinstance(tier, str) else tier
    if n is None:
        raise VeilError(f"unknown tier of common words {tier!r}; choose from {', '.join(TIERS)}")
    return common_words(n)


def kinds() -> list[str]:
    """The kinds of word list there are (the file names without ``.txt``)."""
    return sorted(p.stem for p in LEXICON_DIR.glob("*.txt"))


@lru_cache(maxsize=None)
def ordered(kind: str) -> tuple[str, ...]:
    """The words of ``veil/data/lexicon/<kind>.txt`` in file order."""
    path = LEXICON_DIR / f"{kind}.txt"
    if not path.is_file():
        raise VeilError(f"no word list {kind!r}; the lists are {', '.join(kinds())}")
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        w = line.strip()
        if w and not w.startswith("#"):
            out.append(w)
    return tuple(out)


@lru_cache(maxsize=None)
def words(kind: str) -> frozenset[str]:
    """The words of ``veil/data/lexicon/<kind>.txt`` as a set."""
    return frozenset(ordered(kind))
