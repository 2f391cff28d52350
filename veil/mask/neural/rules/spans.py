"""Detect and mask stage: the span rules of a span's ends and type (one span at a time, in text order).

A span holds the value and nothing else: no greeting, filler, context word or punctuation at its ends; a spelled
acronym is whole; a span that cannot be its type goes.
"""

from __future__ import annotations

import re

from veil.mask.neural.rules.base import Context, rule, span
from veil.mask.neural.rules.lexical import (DIGIT_WORDS, EDGE_ALL, EDGE_WORDS, NUMBERS, TITLE_BEFORE)
from veil.mask.wordlists import COMMON_10K, VERY_COMMON_1K, common, words
from veil.types import Span

_EDGE_TOKEN = re.compile(r"[\w\u0300-\u036f'’-]+\.?|[^\w\s\u0300-\u036f]")
_ABBREVIATIONS = words("abbreviations")
_STREET_WORDS = words("street_words")
_DATE_CUES = words("date_cues")
_NOT_NAME_ACRONYMS = words("not_name_acronyms")
_COUNTED_UNITS = words("counted_units")
_CURRENCY_WORDS = words("currency_words")
#: one number said alone ("eighty", "eighty-nine")
NUMBER_WORD = re.compile(r"(?:" + "|".join(sorted(NUMBERS, key=len, reverse=True)) + r")(?:[\s-](?:" +
                         "|".join(NUMBERS[1:10]) + r"))?", re.IGNORECASE)


def _trim(text: str, start: int, end: int, edge: frozenset[str]) -> tuple[int, int]:
    """Drop edge words in ``edge`` and punctuation from both ends of ``text[start:end]`` (tokenised once)."""
    toks = list(_EDGE_TOKEN.finditer(text, start, end))
    a, b = 0, len(toks) - 1
    while a <= b:
        first = toks[a]
        f = first.group().lower().rstrip(".")
        if not f or not f[0].isalnum() or f in edge:
            start = first.end()
            while start < end and text[start].isspace():
                start += 1
            a += 1
            continue
        last = toks[b]
        word = last.group()
        w = word.lower().rstrip(".")
        spoken_zero = w in ("oh", "o") and b > a and toks[b - 1].group().lower() in DIGIT_WORDS
        if not w or not w[0].isalnum() or (w in edge and b > a and not spoken_zero):
            end = last.start()
            while end > start and text[end - 1].isspace():
                end -= 1
            b -= 1
            continue
        if word.endswith(".") and w not in _ABBREVIATIONS and len(w) > 1:
            end = last.end() - 1  # "Maria." -> "Maria"; "St." and "J." keep theirs
        return start, end
    return start, start


@rule("span")
def trim_edges(ctx: Context, sp: Span, out: list[Span]) -> Span | None:
    """Cut edge words and punctuation off both ends: greetings, fillers and function words for every type; for
    names, numbers and contacts also context words ("card", "zip", "number") and honorifics ("Dr. [PERSON]");
    a sentence's full stop too ("Maria." -> "Maria"; "St." keeps its own). A placeholder then replaces the
    value alone, and the filler's substitute does not repeat the word left beside it."""
    s, e = _trim(ctx.text, sp.start, sp.end, EDGE_WORDS.get(sp.label, EDGE_ALL))
    return span(sp, s, e)


def _spelled(ctx: Context, sp: Span) -> bool:
    from veil.mask.neural.rules.lexical import LETTERS

    return LETTERS.fullmatch(ctx.text[sp.start:sp.end]) is not None


@rule("span")
def spelled_acronym(ctx: Context, sp: Span, out: list[Span]) -> Span | None:
    """Part of an acronym spelled with spaces ("T" of "T I") is the whole acronym, without an article or pronoun
    beside its capitals ("a V C R", "T V a lot"): a placeholder for half an acronym leaves the other letters."""
    if not _spelled(ctx, sp):
        return sp
    text, s, e = ctx.text, sp.start, sp.end
    run = ctx.letters_run(s, e)
    if run is None:
        return sp
    start, end = run
    if start < s and text[start] in "aAiI" and end - start > 3 and (text[start].islower() or text[start + 2].isupper()):
        start += 2
    if end > e and text[end - 1] in "ai" and text[end - 3].isupper():
        end -= 2
    return span(sp, min(start, s), max(end, e))


@rule("span")
def not_name_acronym(ctx: Context, sp: Span, out: list[Span]) -> Span | None:
    """A spelled acronym that names no person or organisation ("T V", "V C R", "P H D",
    ``veil/data/lexicon/not_name_acronyms.txt``) goes."""
    if _spelled(ctx, sp) and "".join(ctx.text[sp.start:sp.end].split()).upper() in _NOT_NAME_ACRONYMS:
        return None
    return sp


@rule("span")
def initials_org(ctx: Context, sp: Span, out: list[Span]) -> Span | None:
    """Two or three letters said one by one and read as a person ("C N N", "T I", "G M") are an organisation,
    not a person's initials, unless an honorific stands before them or the talk is of spelling."""
    from veil.mask.detectors.spoken import SPELL_CUE

    text, s, e = ctx.text, sp.start, sp.end
    if sp.label == "PER" and 3 <= e - s <= 5 and _spelled(ctx, sp) and not TITLE_BEFORE.search(text[max(0, s - 12):s]) \
            and not ctx.once("spelling", lambda: SPELL_CUE.search(text) is not None):
        return span(sp, s, e, "ORG")
    return sp


def _digits_in(surface: str) -> int:
    words_ = re.findall(r"\d|[a-z]+", surface.lower())
    return sum(1 for w in words_ if w.isdigit() or w in DIGIT_WORDS)


def valid(kind: str, surface: str) -> bool:
    """Whether a span's words can be its type at all ("at" is no e-mail, "3.5" no phone number)."""
    low = surface.lower()
    words_ = set(re.findall(r"[a-z]+", low))
    if kind == "EMAIL":
        return "@" in low or ("at" in words_ and "dot" in words_)
    if kind == "PHONE":
        # said digit by digit or in pairs; "ninety-four thousand" is an amount (a long number with "hundred"
        # in it, "three hundred and sixteen zero seven", stays: an application number read out)
        amount = words_ & {"hundred", "thousand", "million", "dollars", "dollar", "miles"}
        return _digits_in(low) >= (5 if amount else 3) and not words_ & {"dollars", "dollar", "miles"}
    if kind == "ID":
        return _digits_in(low) >= 3 or (bool(re.search(r"\d", low)) and bool(re.search(r"[a-z]", low)))
    if kind == "URL":
        return "." in low or "dot" in words_ or "www" in words_
    if kind == "ADDR":
        # a street word, a zip code or house number read out (3+ digits), or a number with a name that is no
        # everyday word ("52 Søndergade"); not "eighty-six Chevy", "fifty dollar", "fourteen inch"
        if words_ & _STREET_WORDS or _digits_in(low) >= 3:
            return True
        names = [w for w in re.findall(r"[^\W\d_]+", low) if w not in DIGIT_WORDS]
        return _digits_in(low) >= 1 and bool(names) and not any(w in common(COMMON_10K) for w in names)
    if kind == "DATE":
        if words_ & {"billion", "million", "thousand", "hundred", "dollars", "dollar", "cents", "percent", "miles"}:
            return False
        return bool(re.search(r"\d", low)) or bool(set(re.findall(r"[a-z']+", low)) & _DATE_CUES)
    if kind == "PER":
        # a name has a word that is a name, an initial or no very common word: "as far as" is none, "will smith"
        # and "C N N" are
        from veil.mask.neural.rules.lexical import person_name_words

        names = [w[:-2] if w.endswith(("'s", "’s")) else w for w in re.findall(r"[^\W\d_][\w'’]*", low)]
        return not names or any(len(w) < 2 or w not in common(VERY_COMMON_1K) or w in person_name_words()
                                for w in names)
    if kind == "MONEY":
        # an amount with its currency, or a number said in hundreds or thousands ("twenty-five hundred"); not a
        # count of something else ("a hundred thousand miles")
        if words_ & _COUNTED_UNITS:
            return False
        if not (_digits_in(low) or NUMBER_WORD.search(low) or words_ & {"hundred", "thousand", "million", "grand"}):
            return False  # "pounds" alone ("fourteen pounds" of weight, the number left out): no amount
        return bool(words_ & _CURRENCY_WORDS) or "$" in low or \
            (_digits_in(low) >= 2 and bool(words_ & {"hundred", "thousand"}))
    return True


@rule("span")
def valid_type(ctx: Context, sp: Span, out: list[Span]) -> Span | None:
    """A span that cannot be its type goes (:func:`valid`): an e-mail needs "@" or "at" and "dot", a phone or id
    number three digits, an address a street word or a number, a date a date's word or a digit, a person a word
    that is a name, an initial or no very common word ("as far as"), an amount its currency; a span with no
    letter or digit goes too. The model's type decides the placeholder; a wrong one misleads the filler."""
    surface = ctx.text[sp.start:sp.end]
    if not any(c.isalnum() for c in surface) or not valid(sp.label, surface):
        return None
    return sp


@rule("span")
def topic_nationality(ctx: Context, sp: Span, out: list[Span]) -> Span | None:
    """In conversation a nationality or group alone read as a product or work ("American cars") is the talk's
    topic, nobody's; a court's "Swedish national" (written) is the applicant and stays."""
    from veil.mask.detectors.personal import _key, group_terms

    if sp.label == "MISC" and not ctx.written and _key(ctx.text[sp.start:sp.end]) in group_terms():
        return None
    return sp


_NUMBER_DATE_BEFORE = re.compile(r"\b(?:in|since|from|until|till|to|of|by)\s+$", re.IGNORECASE)


@rule("span")
def bare_number_date(ctx: Context, sp: Span, out: list[Span]) -> Span | None:
    """A number said alone ("eighty-nine") is a year only after "in", "since", "from", "until", "to", "of" or
    "by" ("bought one in eighty-nine"); elsewhere the tagger's date is a count and goes."""
    s = sp.start
    if sp.label == "DATE" and NUMBER_WORD.fullmatch(ctx.text[s:sp.end]) and \
            not _NUMBER_DATE_BEFORE.search(ctx.text[max(0, s - 8):s]):
        return None
    return sp
