"""Detect and mask stage: the span rules that make a name whole (one span at a time, in text order).

The tagger may read one part of a name, or the parts of one name as two types: a name runs on over its
other words (after an honorific, in cased text, after a first name on the lists), a job title is an
occupation, a possessive stays outside, and spans of one type side by side are one.
"""

from __future__ import annotations

import re

from veil.mask.neural.rules.base import Context, rule, span
from veil.mask.neural.rules.lexical import (EDGE_ALL, EDGE_NAMES, NAME_LABELS, TITLE_BEFORE, everyday,
                                            everyday_words, person_name_words, places_only, proper_words,
                                            search_back, sentence_start)
from veil.mask.wordlists import ALLOW_5K, common, words
from veil.types import Span

_NEXT_WORD = re.compile(r"\s+([^\W\d_][\w'’\u0300-\u036f-]*)")
_ANY_NEXT = re.compile(r"[ \t]+([^\W\d_][\w'’-]*[^\W\d_])(?![\w])")
_CASED_NEXT = re.compile(r"[ \t]+([A-Z](?:[a-zà-ÿ'’-]+[a-zà-ÿ]|\.)?)(?![\w])")
_CASED_PREV = re.compile(r"(?<![\w.])([A-Z][a-zà-ÿ'’-]*[a-zà-ÿ])[ \t]+$")
_TITLE_WORD_NEXT = re.compile(r"[ \t]([A-Z][a-z'’-]*[a-z])(?![\w'’-])")
_TITLE_WORD_PREV = re.compile(r"(?<![\w'’-])([A-Z][a-z'’-]*[a-z])[ \t]$")
_BETWEEN_NAMES = re.compile(r"[ \t-]*")
_INITIAL_BETWEEN = re.compile(r"\s+[A-Za-z]\.?\s+")


def kind_words_only(surface: str) -> bool:
    """An organisation's kind word alone ("the [Union]" of "Credit Union", "Bank"): no organisation named."""
    from veil.gazetteer import ORG_KINDS

    names = re.findall(r"[^\W\d_]+", surface.lower())
    return len(names) == 1 and (names[0] in ORG_KINDS or names[0] in words("organisation_kinds"))


@rule("span")
def first_name_run(ctx: Context, sp: Span, out: list[Span]) -> Span | None:
    """A one-word person or organisation that is a first name on the name lists runs on over one word after it
    that is no common word at all (wordfreq's 40,000: "liisa [lepistö]", "Pirjo [Madetoja]"), in any case, and
    is then a person: the tagger may read the first name alone, or the two as an organisation."""
    text, s, e = ctx.text, sp.start, sp.end
    if sp.label not in ("PER", "ORG") or " " in text[s:e] or text[s:e].lower() not in person_name_words(first_only=True):
        return sp
    m = _ANY_NEXT.match(text, e)
    if m is None or m.group(1).lower() in everyday_words() or m.group(1).lower() in EDGE_NAMES:
        return sp
    return span(sp, s, m.end(1), "PER")


_TWO_WORDS = re.compile(r"([^\W\d_][\w'’-]*)[ \t]+([^\W\d_][\w'’-]*)")


@rule("span")
def listed_person(ctx: Context, sp: Span, out: list[Span]) -> Span | None:
    """An organisation of two words, a first name then a name of the name lists, neither an organisation's kind
    word, is a person: before "at" and a phone number the tagger may read "Call [John Smith] at 555-123-4560" as a
    company, but a first and a last name are someone's. A brand named like a person is then masked as one."""
    if sp.label != "ORG":
        return sp
    m = _TWO_WORDS.fullmatch(ctx.text, sp.start, sp.end)
    if m is None:
        return sp
    first, last = m.group(1).lower(), m.group(2).lower()
    if first not in person_name_words(first_only=True) or last not in person_name_words() or \
            kind_words_only(last) or kind_words_only(first):
        return sp
    return span(sp, sp.start, sp.end, "PER")


@rule("span")
def occupation(ctx: Context, sp: Span, out: list[Span]) -> Span | None:
    """A one-word person that is a job title and no name on the name lists ("who's a [beautician]"; not "Baker",
    "Taylor") is an occupation: a job, not a name."""
    from veil.mask.detectors.personal import _key, occupation_terms

    word = ctx.text[sp.start:sp.end]
    if sp.label == "PER" and " " not in word and _key(word.lower()) in occupation_terms() and \
            word.lower() not in person_name_words():
        return span(sp, sp.start, sp.end, "OCC")
    return sp


# where a place is said: "in, uh, [Plano]", "we went to [Austin]", "an hour away from [Tyler]"; "to" only after
# going ("talked to [Austin]" is a person)
_PLACE_BEFORE = re.compile(r"\b(?:in|into|from|through|near|outside|around|(?:went|go|goes|going|gone|moved|move|"
                           r"moving|drove|drive|driving|flew|fly|flying|came|come|coming|trip|back|down|up|out|over|"
                           r"way|transferred|relocated)\s+to)[\s,]*(?:(?:uh|um)[\s,]+)*$", re.IGNORECASE)


@rule("span")
def named_place(ctx: Context, sp: Span, out: list[Span]) -> Span | None:
    """A one-word person that is a town, a state or a country of the place lists (GeoNames) is a place where no
    name list has the word ("I'm in an apartment in, uh, [Plano]", "[Plano] has quite an elaborate ...") or where
    a place is said ("we went to, uh, [Austin]", "an hour away from [Tyler]"); "Tyler called" stays a person.
    The type decides the placeholder and what the filler draws."""
    if sp.label != "PER":
        return sp
    word = ctx.text[sp.start:sp.end]
    low = word.lower()
    if " " in word or low not in places_only() or ctx.text.startswith(("'s", "’s"), sp.end):
        return sp
    if low in person_name_words() and not _PLACE_BEFORE.search(ctx.text, max(0, sp.start - 40), sp.start):
        return sp
    return span(sp, sp.start, sp.end, "LOC")


@rule("span")
def titled_name(ctx: Context, sp: Span, out: list[Span]) -> Span | None:
    """After an honorific a person's name runs on over up to three words that are no everyday words ("ms Melahat
    [Filiz]"); a very common word ends it, a surname or not ("Dr. Connor said")."""
    text, s, end = ctx.text, sp.start, sp.end
    if sp.label != "PER" or not TITLE_BEFORE.search(text[max(0, s - 12):s]):
        return sp
    for _ in range(3):
        m = _NEXT_WORD.match(text, end)
        word = m.group(1).lower() if m else ""
        if m is None or everyday(word) or word in EDGE_NAMES or word in common(ALLOW_5K):
            break
        end = m.end()
    return span(sp, s, end)


def _is_name_word(word: str) -> bool:
    low = word.lower().rstrip(".")
    return len(low) == 1 or ((not everyday(low) or low in proper_words()) and low not in EDGE_NAMES)


@rule("span")
def cased_name(ctx: Context, sp: Span, out: list[Span]) -> Span | None:
    """In cased text a person's name runs on over the capitalised words beside it that are no everyday words, and
    over initials ("Sophie [Lang]", "[Calquín] Cazares", "Abby [M.] [Laidlaw]"), up to a possessive, and not
    back over a sentence's first word: the tagger may read one part only."""
    text, start, end = ctx.text, sp.start, sp.end
    if sp.label != "PER" or not text[start:start + 1].isupper():
        return sp
    for _ in range(3):
        if text.endswith(("'s", "’s"), 0, end):
            break  # "Tom Clancy's [A] CLEAR AND PRESENT DANGER": a possessive ends the name
        m = _CASED_NEXT.match(text, end)
        if m is None or not _is_name_word(m.group(1)):
            break
        end = m.end(1)
    for _ in range(2):
        m = _CASED_PREV.search(text[max(0, start - 40):start])
        if m is None or not _is_name_word(m.group(1)):
            break
        if sentence_start(text, start - len(m.group(0))):  # a sentence's first word is capitalised anyway
            break
        start -= len(m.group(0))
    return span(sp, start, end)


@rule("span", pure=False)
def cased_entity(ctx: Context, sp: Span, out: list[Span]) -> Span | None:
    """In cased text a place, organisation or other name runs on over the capitalised words right beside it (at
    most two a side; not "I", a greeting or function word, nor a sentence's first everyday word): "Soviet
    [Union]", "the [White] House", "Chicago [Bulls]" are one name; a word of it read before as something else
    ("[Meech] Lake Accord") is taken in."""
    if sp.label not in ("ORG", "LOC", "MISC"):
        return sp
    grown = ctx.once(("cased_entity", sp.start, sp.end, sp.label), lambda: _cased_entity(ctx.text, sp))
    if grown is None:
        return sp
    start, end = grown
    while out and start <= out[-1].start and out[-1].end <= end:
        out.pop()  # a word of the name, read as something else ("[Meech] Lake Accord")
    return span(sp, start, end)


def _cased_entity(text: str, sp: Span) -> tuple[int, int] | None:
    """:func:`cased_entity`'s bounds for ``sp`` (``None``: the rule leaves it alone)."""
    start, end = sp.start, sp.end
    if sp.label == "ORG" and kind_words_only(text[start:end]):
        return None
    if text[start:start + 1].isupper() and not text[start:end].isupper():
        for _ in range(2):
            m = _TITLE_WORD_NEXT.match(text, end)
            if m is None or m.group(1).lower() in EDGE_ALL:
                break
            end = m.end(1)
        for _ in range(2):
            m = search_back(_TITLE_WORD_PREV, text, start)
            if m is None or m.group(1).lower() in EDGE_ALL or \
                    (sentence_start(text, m.start(1)) and everyday(m.group(1).lower())):
                break
            start = m.start(1)
    return start, end


@rule("span")
def possessive(ctx: Context, sp: Span, out: list[Span]) -> Span | None:
    """A name's possessive "'s" (or a contracted "is") stays outside it ("[Ford]'s got", "[Sally]'s car"): the
    substitute takes it, whatever the substitute is."""
    s, e = sp.start, sp.end
    if sp.label in NAME_LABELS and e - s > 3 and ctx.text[e - 2:e] in ("'s", "’s"):
        return span(sp, s, e - 2)
    return sp


@rule("span", pure=False)
def join_same_type(ctx: Context, sp: Span, out: list[Span]) -> Span | None:
    """Spans of one type that overlap or have only spaces or a hyphen between them are one ("John" + "Smith", the
    same word widened twice); two person names with an initial between them are one ("Mijail" C "Adomo"): one
    placeholder, one substitute."""
    if not out or out[-1].label != sp.label:
        return sp
    prev, s = out[-1], sp.start
    if s < prev.end or _BETWEEN_NAMES.fullmatch(ctx.text, prev.end, s) or \
            (sp.label == "PER" and _INITIAL_BETWEEN.fullmatch(ctx.text, prev.end, s)):
        out.pop()
        out.append(Span(prev.start, max(prev.end, sp.end), prev.label, prev.source, max(prev.score, sp.score)))
        return None
    return sp
