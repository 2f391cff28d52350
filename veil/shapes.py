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
- a surface longer than ``MAX_ATOMS`` tokens gets no shape, nor does a label outside
  ``SHAPED_LABELS`` and ``ENTITY_SHAPED`` (URLs, user-defined labels).

Names, places, organisations and street addresses (``ENTITY_SHAPED``) get an *entity shape*: the same
class codes, one per word whatever its letters (a word with an apostrophe or a hyphen inside is one
word: ``O'Brien`` is ``W``, ``Mary-Jane`` is ``W-W``), plus the words of closed public lists
(:mod:`veil.gazetteer`) kept with their case: a person's title and suffix (``{Mrs}. W W``, ``W W
{Jr}.``), an organisation's kind word and connectors (``W {Bank}``, ``{Bank} {of} W``), a street
address's street words (``ddd W {Street}``); a place's shape starts with its granularity when the
place is on the gazetteer's lists (``<city>W W``, ``<country>W``, ``<state>U``), a street address
with ``<street>``. So "Maria" and "Priya" have the same shape (``W``), and so have "Boston" and
"Denver" (``<city>W``); "Boston" and "Texas" do not (a city is not a state).

Quasi-identifiers (``QUASI_SHAPED``: occupations, health, nationality and religion) get the same class
codes after a *kind* tag from veil's public lists (``<job>w``, ``<jobs>w`` for a plural, ``<field>w``,
``<health>w``, ``<group>W``): the fill draws a job for a job and an illness for an illness; the tag says
which list holds the value, never which of its entries.

Hence the shape is a function of the value's *class sequence* only: every value with the same
layout (same number of digits, single letters and words, in the same order, with the same
separators) has the same shape, so the shape cannot tell such values apart. What it does reveal is
the layout: how many digits (a zip has five anyway), how many letters were spelled (a five-letter
name is one of thousands), whether words were capitalised. ``tests/test_shapes.py`` checks the
invariance on generated values.
"""

from __future__ import annotations

import re
from functools import lru_cache
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
    "older", "younger", "ago", "about", "around", "almost", "nearly", "over", "under", "than", "half",
    # how a date is said relative to now: its tense, not which date ("last summer", "a couple of years ago")
    "last", "next", "this", "past", "coming", "couple", "few", "several", "or", "so",
    # words a detector may take into a number's span ("card 4111 ..."): what the number is, not which
    "card", "number", "no", "phone", "cell", "mobile", "ext", "extension", "visa", "mastercard", "amex",
    "account", "acct", "ssn", "social", "security", "zip", "code", "pin", "id", "license", "expiry", "exp",
})
MAX_ATOMS = 64
_TOKEN_RE = re.compile(r"(\d)|([^\W\d_]+)|(\s+)|(.)", re.S)
_SHAPE_ATOM_RE = re.compile(r"\{([A-Za-z]+)\}|<([a-z]+)>|(.)", re.S)
CLASS_CODES = frozenset("dnlLwWU")

#: labels whose placeholders carry an entity shape (words of a name, its kind)
PERSON_LABELS = frozenset({"PERSON_NAME", "PERSON"})
PLACE_LABELS = frozenset({"LOCATION", "GPE", "LOC"})
ORG_LABELS = frozenset({"ORGANIZATION_NAME", "ORGANIZATION", "ORG", "FACILITY", "FAC"})
ADDRESS_LABELS = frozenset({"STREET_ADDRESS"})
ENTITY_SHAPED = PERSON_LABELS | PLACE_LABELS | ORG_LABELS | ADDRESS_LABELS
#: quasi-identifiers drawn from their kind's list (:func:`quasi_shape`: a job for a job, an illness for an illness)
QUASI_SHAPED = frozenset({"OCCUPATION", "DEMOGRAPHIC", "NATIONALITY"})
#: the granularity tags of a place shape (``<city>``): the gazetteer's kinds, and a street address; the kind
#: tags of a quasi-identifier's shape (``<job>``, ``<jobs>`` for a plural, ``<field>`` of work, ``<health>``,
#: ``<group>``: a nationality, religion or ethnic group)
TAGS = frozenset({"country", "state", "city", "region", "street", "job", "jobs", "field", "health", "group"})
_ENTITY_TOKEN_RE = re.compile(r"(\d)|([^\W\d_]+(?:['\u2019][^\W\d_]+)*)|(\s+)|(.)", re.S)


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


def _entity_literals(label: str) -> frozenset[str]:
    from veil.gazetteer import CONNECTORS, NAME_SUFFIXES, ORG_KINDS, STREET_WORDS, TITLES

    if label in PERSON_LABELS:
        return frozenset(TITLES) | NAME_SUFFIXES
    if label in ADDRESS_LABELS:
        return STREET_WORDS | CONNECTORS
    if label in ORG_LABELS:
        return ORG_KINDS | CONNECTORS
    return frozenset()  # a place's words are its name: "New W City" would all but name it


def entity_shape(label: str, surface: str) -> str | None:
    """The entity shape of a masked name, place, organisation or street address (see the module docstring)."""
    literals = _entity_literals(label)
    codes: list[str] = []
    for m in _ENTITY_TOKEN_RE.finditer(surface.strip()):
        digit, word, space, other = m.groups()
        if digit is not None:
            codes.append("d")
        elif word is not None:
            low = word.lower()
            if low in literals and not (label in PERSON_LABELS and len(word) == 1):
                codes.append("{" + word + "}" if word.isalpha() else "W")
            elif len(word) == 1:
                codes.append("L" if word.isupper() else "l")
            elif word.isupper():
                codes.append("U")
            else:
                codes.append("W" if word[0].isupper() else "w")
        elif space is not None:
            codes.append(" ")
        else:
            codes.append(other if other in SEPARATORS else "?")
    if not codes or sum(1 for c in codes if c != " ") > MAX_ATOMS:
        return None
    tag = ""
    if label in ADDRESS_LABELS:
        tag = "<street>"
    elif label in PLACE_LABELS:
        from veil.gazetteer import place_kind

        kind = place_kind(surface)
        tag = f"<{kind}>" if kind else ("<street>" if "d" in codes else "")
    return tag + "".join(codes)


def quasi_kind(label: str, surface: str) -> str | None:
    """The kind of a quasi-identifier by veil's public lists (``veil/data/quasi``): ``job`` (``jobs`` if
    plural), ``field``, ``health`` or ``group``; None when no list holds it."""
    from veil.gazetteer import field_terms, group_terms, health_terms, occupation_terms, plural_keys, term_key

    key = term_key(surface)
    if not key:
        return None
    # the whole value first, then the words of it ("Alzheimer's patients": an illness; "local authority
    # housing officer": a job)
    runs = [key[i:i + n] for n in range(len(key), 0, -1) for i in range(len(key) - n + 1)]
    for run in runs:
        if label != "OCCUPATION":
            if run in group_terms():
                return "group"
            if any(k in health_terms() for k in plural_keys(run)):
                return "health"
        if label != "NATIONALITY":
            if run in occupation_terms():
                return "job"
            if any(k in occupation_terms() for k in plural_keys(run)[1:]):
                return "jobs"
            if run in field_terms():
                return "field"
    return None


def quasi_shape(label: str, surface: str) -> str | None:
    """A quasi-identifier's shape: its kind tag (:func:`quasi_kind`) and one class code per word, as an entity
    shape without literals ("a nurse" is ``<job>w``, "Catholic" ``<group>W``): what kind of value, never which."""
    codes = entity_shape("QUASI", surface)
    if codes is None:
        return None
    kind = quasi_kind(label, surface)
    return (f"<{kind}>" if kind else "") + codes


def shape_of(label: str, surface: str) -> str | None:
    """The shape signature of a masked surface, or None (label not shaped, or too long)."""
    if label in ENTITY_SHAPED:
        return entity_shape(label, surface)
    if label in QUASI_SHAPED:
        return quasi_shape(label, surface)
    if label not in SHAPED_LABELS:
        return None
    codes = [code for code, _ in tokens(surface.strip())]
    if not codes or sum(1 for c in codes if c != " ") > MAX_ATOMS:
        return None
    return "".join(codes)


def atoms(shape: str) -> list[str]:
    """A shape split into its atoms: class codes, separators, ``{literal}`` words and ``<tag>`` granularity."""
    return [("{" + m.group(1) + "}") if m.group(1) else ("<" + m.group(2) + ">") if m.group(2) else m.group(3)
            for m in _SHAPE_ATOM_RE.finditer(shape)]


def shape_tag(shape: str | None) -> str | None:
    """The granularity of a place shape (``city`` for ``<city>W W``), or None."""
    m = re.match(r"<([a-z]+)>", shape or "")
    return m.group(1) if m else None


@lru_cache(maxsize=1)
def _all_literals() -> frozenset[str]:
    return LITERAL_WORDS | frozenset().union(*(_entity_literals(lab) for lab in
                                               ("PERSON", "ORG", "STREET_ADDRESS", "LOCATION")))


def is_shape(shape: str) -> bool:
    """Whether ``shape`` is a well-formed signature (checked when a masked record is read)."""
    if len(shape) > 8 * MAX_ATOMS:
        return False
    return all(a in CLASS_CODES or a in SEPARATORS or a == "?"
               or (a.startswith("{") and a[1:-1].lower() in _all_literals())
               or (a.startswith("<") and a[1:-1] in TAGS) for a in atoms(shape))
