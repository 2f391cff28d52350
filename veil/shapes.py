"""Mask and fill stages: the *shape* of a masked value, the one thing about it that crosses the privacy boundary.

A zip code filled with "2", an expiry date "09/27" filled with "37", or "m-a-r-i-a" filled with
"D Z E" reads wrong and teaches a downstream model wrong formats. So the mask stage records, next
to each typed placeholder, a shape signature of the surface it replaced, and the fill stage draws a
substitute of that type *and* shape (:mod:`veil.fill.typed`).

The signature is built so that it cannot reveal the value, only its format:

- every digit becomes ``d``, every spoken digit word (``zero`` .. ``nine``, ``oh``) ``n``, every
  single letter ``l`` / ``L`` (its case), every longer word ``w`` / ``W`` / ``U`` (lower, capitalised,
  all caps) *whatever its length*: word lengths are not kept, because for spoken numbers they would
  leak digits ("one", "two", "six" have 3 letters, "three", "seven", "eight" 5);
- separators are kept only from a fixed set of punctuation (``SEPARATORS``); any other character
  becomes ``?``; runs of whitespace become one space;
- a word is kept verbatim (written ``{word}``) only when it is in ``LITERAL_WORDS``, a closed list
  of format words (units, "dot" / "at" of a spoken email, ordinal suffixes): public vocabulary that
  says how a value is written, not which value it is;
- labels outside ``SHAPED_LABELS`` (names, places, organisations, addresses, URLs) get no shape,
  and a surface longer than ``MAX_ATOMS`` tokens gets none either.

Hence the shape is a function of the value's *class sequence* only: every value with the same
layout (same number of digits, single letters and words, in the same order, with the same
separators) has the same shape, so the shape cannot tell such values apart. What it does reveal is
the layout: how many digits (a zip has five anyway), how many letters were spelled (a five-letter
name is one of thousands), whether words were capitalised. ``tests/test_shapes.py`` checks the
invariance on generated values.
"""

from __future__ import annotations

import re
from typing import Iterator

#: labels whose placeholders carry a shape (format values; names and places are filled by type only)
SHAPED_LABELS = frozenset({
    "PHONE_NUMBER", "CREDIT_CARD_NUMBER", "US_SOCIAL_SECURITY_NUMBER", "NUMBER", "CARDINAL", "DATE",
    "TIME", "AGE", "DURATION", "MONEY", "QUANTITY", "PERCENT", "SPELLED_WORD", "USERNAME", "GENERIC_ID",
    "ZIP_CODE", "IP_ADDRESS", "EMAIL_ADDRESS",
})
SEPARATORS = frozenset(" -/.:,()+@#_'$%&*€£¥°")
DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_DIGIT_WORD_SET = frozenset(DIGIT_WORDS) | {"oh"}
#: format words kept verbatim in a shape (closed list: units, spoken punctuation, ordinal suffixes)
LITERAL_WORDS = frozenset({
    "dot", "at", "dash", "hyphen", "slash", "underscore", "point", "plus", "double", "triple",
    "hundred", "thousand", "million", "and", "st", "nd", "rd", "th", "am", "pm",
    "year", "years", "old", "month", "months", "week", "weeks", "day", "days", "hour", "hours",
    "minute", "minutes", "seconds", "dollar", "dollars", "bucks", "cent", "cents",
    "percent", "pound", "pounds", "mile", "miles", "foot", "feet", "inch", "inches", "gallon",
    "gallons", "ounce", "ounces", "kilo", "kilos", "kg", "lbs", "usd", "the", "of",
})
MAX_ATOMS = 64
_TOKEN_RE = re.compile(r"(\d)|([^\W\d_]+)|(\s+)|(.)", re.S)
_SHAPE_ATOM_RE = re.compile(r"\{([a-z]+)\}|(.)", re.S)
CLASS_CODES = frozenset("dnlLwWU")


def _word_code(word: str) -> str:
    low = word.lower()
    if low in LITERAL_WORDS:
        return "{" + low + "}"
    if low in _DIGIT_WORD_SET:
        return "n"
    if len(word) == 1:
        return "L" if word.isupper() else "l"
    if word.isupper():
        return "U"
    return "W" if word[0].isupper() else "w"


def tokens(surface: str) -> Iterator[tuple[str, str]]:
    """``(code, text)`` per token of ``surface``: digits, words, whitespace, other characters."""
    for m in _TOKEN_RE.finditer(surface):
        digit, word, space, other = m.groups()
        if digit is not None:
            yield "d", digit
        elif word is not None:
            yield _word_code(word), word
        elif space is not None:
            yield " ", space
        else:
            yield (other if other in SEPARATORS else "?"), other


def shape_of(label: str, surface: str) -> str | None:
    """The shape signature of a masked surface, or None (label not shaped, or too long)."""
    if label not in SHAPED_LABELS:
        return None
    codes = [code for code, _ in tokens(surface.strip())]
    if not codes or sum(1 for c in codes if c != " ") > MAX_ATOMS:
        return None
    return "".join(codes)


def atoms(shape: str) -> list[str]:
    """A shape split into its atoms: class codes, separators and ``{literal}`` words."""
    return [m.group(1) and "{" + m.group(1) + "}" or m.group(2) for m in _SHAPE_ATOM_RE.finditer(shape)]


def is_shape(shape: str) -> bool:
    """Whether ``shape`` is a well-formed signature (checked when a masked record is read)."""
    if len(shape) > 8 * MAX_ATOMS:
        return False
    return all(a in CLASS_CODES or a in SEPARATORS or a == "?"
               or (a.startswith("{") and a[1:-1] in LITERAL_WORDS) for a in atoms(shape))
