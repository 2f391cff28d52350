"""Detect and mask stage: a name (or an occupation, age, date) found in one record of a group (a call's
utterance) is masked in all.

Within one text the tagger already masks every other occurrence of a name it found
(``tagger.propagate_names``: a document's long names are found again elsewhere by their parts). With a group
field the records of a group are one document (``veil.run.groups``): :func:`propagate_group` carries the
names (of people, organisations, places, products) found in any record of a group to every record of that
group, and never to another group: a call is one document for `veil verify` too, which reports a value masked
in one utterance and left in another.

What is carried: each name as found (a person's condition or group, ``DEMOGRAPHIC``: "American",
"Hispanic"; an occupation, "housewife"; an age, "late sixties"; a date, "Monday": each as found and never by
its parts), and each part of three letters or more ("Hope Ashworth": "Hope", "Ashworth"; "Ford Taurus":
"Taurus"); an acronym said letter by letter ("T I", "G M") as written, in capitals, and joined ("TI"), and
one written joined ("IBM") said letter by letter ("I B M"). A name or part that is
one of the 5,000 commonest words ("hope", "will", "mark") is matched only as written with its capital
("Hope", not "I hope so"; "AIDS"), as is a name of two letters ("Cy"; "qw" as written, where it is no
common word: never "is" or "to"); one that is not is matched in any
case ("ashworth"). A lower-case common word alone ("this is will") is carried nowhere: in a lower-cased
call the word and the name cannot be told apart. A carried name that only part of a span covers where it is said again
("Tex-Mex" where the tagger read "Mex Mexican", "Dodge Aries" where it read "Aries") is masked whole: the
spans overlap and the engine unites them. A name is the same name spelled: "C a n d y" masked carries "Candy"
(as any name: as written with its capital where it is a common word), and "Candy" carries "c a n d y" and
"c-a-n-d-y" in any case (spelled letters are no everyday talk).

Of any other value of several words (a street address, an e-mail address), the words that identify alone
(:mod:`veil.mask.value_words`: rarer than everyday words, and none a street word, number word or word the fill
writes of its own) are carried in any case: "sixty-nine cougar" masked as a street carries "Cougar", "42
Ashbury Lane" carries "ashbury", "maria dot lopez at gmail dot com" carries "Lopez" (never "gmail"). Any
other value of three digits or more, written or said ("Four Oh One K", "five five five oh one"), is carried
whole as said (not in another form: "555" for "five five five", which `veil verify` reads as one; a
transcript writes its numbers one way). `veil verify` looks for exactly these. Both run on the maskers'
merged spans (:func:`propagate_parts`).
"""

from __future__ import annotations

import re
from typing import Hashable, Sequence

from veil.types import Span

#: the labels carried across a group's records
GROUP_LABELS = frozenset({"PERSON_NAME", "ORGANIZATION_NAME", "LOCATION", "MISC", "DEMOGRAPHIC", "NATIONALITY",
                          "OCCUPATION", "AGE", "DATE"})
#: the labels carried only as the whole surface, never by a part ("disabled" of "disabled person" is a word,
#: "late" of "late sixties" too); `veil verify` looks for them whole too
WHOLE_LABELS = frozenset({"DEMOGRAPHIC", "NATIONALITY", "OCCUPATION", "AGE", "DATE"})
_SPELLED = re.compile(r"[A-Z](?: [A-Z])+")
_PART = re.compile(r"[^\W\d_][\w'’-]{2,}")
_LETTERS = re.compile(r"[^\W\d_](?:[ -][^\W\d_]){2,}")  # a word spelled letter by letter
_WORD = re.compile(r"(?<![\w'’-])[^\W\d_]{3,}(?![\w'’-])")  # a word of letters only


def _names(texts: Sequence[str], spans: Sequence[Sequence[Span]], members: Sequence[int]) -> tuple[dict, dict]:
    """(lower-case form -> label, exact form -> label): the group's names matched in any case, and those
    matched only as written."""
    from veil.mask.allow_list import common_words

    common = common_words(5000)
    anycase: dict[str, str] = {}
    exact: dict[str, str] = {}

    def add(surface: str, label: str) -> None:
        if _SPELLED.fullmatch(surface):
            exact.setdefault(surface, label)  # "T I": the capitals as said, never "t i" in lower-case talk
            exact.setdefault(surface.replace(" ", ""), label)  # and written as one word: "TI"
            return
        if surface.isupper() and surface.isalpha() and 1 < len(surface) <= 6:
            exact.setdefault(" ".join(surface), label)  # "IBM" said letter by letter: "I B M"
        if sum(c.isalnum() for c in surface) < 3:
            if len(surface) == 2 and surface.isalpha() and (surface[0].isupper() and surface[1].islower()
                                                            or surface.lower() not in common):
                exact.setdefault(surface, label)  # "Cy", "Ed", "qw": a name of two letters, only as written
            return
        low = surface.lower()
        if " " in surface or low not in common:
            anycase.setdefault(low, label)
        elif surface[:1].isupper():  # "Hope"; "AIDS", a condition written in capitals
            exact.setdefault(surface, label)

    for i in members:
        for sp in spans[i]:
            if sp.label not in GROUP_LABELS:
                continue
            surface = texts[i][sp.start:sp.end]
            add(surface, sp.label)
            if sp.label in WHOLE_LABELS:
                continue
            if _LETTERS.fullmatch(surface):  # "C a n d y" spelled: the name "Candy" said whole
                add(re.sub(r"[ -]", "", surface).capitalize(), sp.label)
            for m in _PART.finditer(surface):
                if m.end() - m.start() < len(surface):
                    add(m.group(), sp.label)
            for m in _WORD.finditer(surface):  # "Candy" said whole: the name spelled, "c a n d y", "C-A-N-D-Y"
                for sep in " -":
                    anycase.setdefault(sep.join(m.group().lower()), sp.label)
    return anycase, exact


def _rare_words(surface: str, label: str) -> list[str]:
    """The words of another value of several words (a street address, an e-mail's user part; not a name,
    which the group labels carry) that identify alone (:func:`veil.mask.value_words.rare_word`), lower-case."""
    from veil.mask.value_words import kept_words, rare_word

    if "EMAIL" in label.upper():  # the user part: the provider ("gmail") is shared by millions
        surface = re.split(r"@|\s+at\s+", surface, flags=re.IGNORECASE)[0]
    elif len(re.findall(r"\w+", surface)) < 2:
        return []  # a value of one word is found whole, as the engine finds it again
    words = [w.lower() for w in _WORD.findall(surface)]
    kept = kept_words(label, surface)
    return [w for w in words if rare_word(w, kept)]


#: the digits a number said with a scale word has at least ("three hundred sixty": 3)
_SCALE = {"hundred": 3, "thousand": 4, "million": 7, "billion": 10}


def _digits(surface: str) -> int:
    """The digits of a value, written or said ("four oh one k": 3; "three hundred sixty": 3; "a hundred": 0,
    an amount said in passing)."""
    from veil.mask.value_words import number_words
    from veil.shapes import DIGIT_WORDS

    words = [w.lower() for w in re.findall(r"[^\W\d_]+", surface)]
    said = sum(w in DIGIT_WORDS or w == "oh" for w in words)
    counted = any(w in number_words() and w not in _SCALE for w in words)  # "three hundred", not "a hundred"
    scale = max((_SCALE.get(w, 0) for w in words), default=0) if counted else 0
    return max(sum(c.isdigit() for c in surface) + said, scale)


def _pattern(keys: list[str], flags: int) -> re.Pattern[str] | None:
    if not keys:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(k) for k in sorted(keys, key=len, reverse=True)) + r")(?!\w)",
                      flags)


def _members(groups: Sequence[Hashable | None]) -> list[list[int]]:
    """The records of each group of two records or more."""
    members: dict[Hashable, list[int]] = {}
    for i, g in enumerate(groups):
        if g is not None:
            members.setdefault(g, []).append(i)
    return [idx for idx in members.values() if len(idx) > 1]


def _carry(texts: Sequence[str], out: list[list[Span]], idx: Sequence[int], anycase: dict, exact: dict,
           source: str) -> None:
    """Add to ``out[i]``, for each record ``i`` of a group, a span wherever a key of ``anycase`` (matched in any
    case) or ``exact`` (as written) stands and no span holds it: the key's label, and its source if the
    table gives ``(label, source)``, else ``source``."""
    import bisect
    import itertools

    patterns = [(p, table, low) for p, table, low in ((_pattern(list(anycase), re.IGNORECASE), anycase, True),
                                                       (_pattern(list(exact), 0), exact, False)) if p is not None]
    if not patterns:
        return
    for i in idx:
        text = texts[i]
        added: list[Span] = []
        for pattern, table, low in patterns:
            have = sorted((sp.start, sp.end) for sp in out[i] + added)
            starts = [s for s, _ in have]
            reach = list(itertools.accumulate((e for _, e in have), max))  # the furthest end of the first k
            for m in pattern.finditer(text):
                k = bisect.bisect_right(starts, m.start())  # the spans starting at or before the match
                if k > 0 and reach[k - 1] >= m.end():
                    continue  # one span holds it already
                label = table.get(m.group().lower() if low else m.group())
                if label is not None:
                    label, src = label if isinstance(label, tuple) else (label, source)
                    added.append(Span(m.start(), m.end(), label, src, 1.0))
        if added:
            out[i] = sorted(out[i] + added, key=lambda sp: (sp.start, sp.end))


def propagate_group(texts: Sequence[str], spans: Sequence[list[Span]], groups: Sequence[Hashable | None],
                    source: str) -> list[list[Span]]:
    """``spans`` per text, with every occurrence in a record of a name found in another record of its
    group (or elsewhere in its own) added where no span covers it. Records without a group, and groups of one
    record, are left as they are."""
    out = [list(s) for s in spans]
    for idx in _members(groups):
        anycase, exact = _names(texts, spans, idx)
        _carry(texts, out, idx, anycase, exact, source)
    return out


def propagate_parts(texts: Sequence[str], spans: Sequence[list[Span]],
                    groups: Sequence[Hashable | None]) -> list[list[Span]]:
    """``spans`` per text (the maskers' spans merged), with every occurrence in a record of a word that
    identifies alone (:func:`_rare_words`) of a value of another label than a name's, found in a record of its
    group, and of such a value with three digits or more (written or said: "Four Oh One K") said whole, added
    where no span covers it: the value's label and source. Run on the merged spans, since a
    value's extent is known only there ("eighty Volvo" a date to the tagger and "nineteen eighty" a number to
    ``dlp`` are one value, "nineteen eighty Volvo", whose "Volvo" `veil verify` looks for)."""
    out = [list(s) for s in spans]
    for idx in _members(groups):
        anycase: dict[str, tuple[str, str]] = {}
        for i in idx:
            for sp in spans[i]:
                if sp.label not in GROUP_LABELS:
                    surface = texts[i][sp.start:sp.end]
                    if _digits(surface) >= 3:  # "Four Oh One K", "five five five oh one": the number as said
                        anycase.setdefault(surface.lower(), (sp.label, sp.source))
                    for w in _rare_words(surface, sp.label):
                        anycase.setdefault(w, (sp.label, sp.source))
        _carry(texts, out, idx, anycase, {}, "")
    return out
