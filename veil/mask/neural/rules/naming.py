"""Detect and mask stage: the rules that run last, on evidence no list overrules.

A name said in a naming context ("his last name is Weight", "Doctor Collie", "I spoke to Jack Russell", "hi
dawn", "we named him buddy") is a person whatever the word lists say of the word; a spelled acronym with its
institution word ("N C State") is one organisation.
"""

from __future__ import annotations

import itertools
import re

from veil.mask.neural.rules.base import Context, rule
from veil.mask.neural.rules.lexical import EDGE_NAMES, LETTERS, NAME_LABELS, everyday, person_name_words
from veil.mask.wordlists import ALLOW_5K, VERY_COMMON_1K, common, words
from veil.types import Span

_W = r"[^\W\d_][\w'’-]*"
#: "my / his last name is X": X is a name, whatever it also means
_NAME_IS = re.compile(r"\b(?:my|his|her|their|your|our|the)\s+(?:(?:last|first|middle|maiden|family|given|real|full)"
                      r"\s+)?(?:name|surname)\s*(?:is|was|'s|’s)\s+(" + _W + r")", re.IGNORECASE)
#: "Doctor X": a person when X is written with a capital or is a name on the lists and no common word
_DOCTOR = re.compile(r"\b(?:doctor)\s+(" + _W + r")", re.IGNORECASE)
#: "Dr. X", "Mr X", "Mrs. X": a title written short, a person whatever X is
_TITLE = re.compile(r"\b(?:dr|mr|mrs|ms|mister|missus)\.?\s+(" + _W + r")", re.IGNORECASE)
#: "this is X", "hi X": a person when X is a first name and what follows it reads as after a name
_INTRODUCED = re.compile(r"\b(?:this\s+is|hi|hello|hey|bye|goodbye|thanks|thank\s+you)[ \t,]+(" + _W + r")",
                         re.IGNORECASE)
#: "I spoke to X Y": a person when X is a first name or written with a capital
_SPOKE_TO = re.compile(r"\b(?:spoke|spoken|speaking|talked|talking)\s+(?:to|with)\s+(" + _W + r")", re.IGNORECASE)
#: "we named him X", "a dog named X", "nicknamed X": X is the name given, whatever it also means
_NAMED = re.compile(r"\b(?:named|nicknamed)\s+(?:(?:him|her|it|them|me|us)\s+)?(" + _W + r")", re.IGNORECASE)
_NEXT = re.compile(r"[ \t]+(" + _W + r")")
#: words after a first name that say it was a name ("this is will speaking", "hi dawn how are you")
_AFTER_NAME = frozenset("""speaking calling here from with at and how i i'm im it's its thanks thank this my what
 good nice""".split())
#: words that follow "name is" without being a name ("my name is not important", "his name is spelled ...")
_NOT_A_NAME = frozenset("""not really actually kind sort pretty very so too hard easy long short funny weird strange
 common unusual different same spelled spelt pronounced unknown irrelevant important something nothing""".split())


#: words after "named" that are no name given ("named after", "named in the suit", "named one of the best")
_NOT_GIVEN = frozenset("""after for by in as on the a an it him her them me us that this his my our their your
 its one two three""".split())


def _cased(text: str) -> bool:
    return any(c.isupper() for c in text) and any(c.islower() for c in text)


def _capitalised(word: str) -> bool:
    return word[:1].isupper() and (len(word) == 1 or not word.isupper())


def _surname(text: str, end: int) -> tuple[int, str] | None:
    """The word after ``end`` when it reads as the rest of a name: capitalised and no everyday word, or a name on
    the lists that is no common word."""
    m = _NEXT.match(text, end)
    if m is None:
        return None
    w = m.group(1)
    low = w.lower()
    if low in EDGE_NAMES:
        return None
    if _capitalised(w) and _cased(text) and (not everyday(low) or low in person_name_words()):
        return m.end(1), low
    if low in person_name_words() and low not in common(ALLOW_5K):
        return m.end(1), low
    return None


def _reads_as_name(text: str, end: int) -> bool:
    """What follows a first name reads as after a name: nothing, punctuation, a word of :data:`_AFTER_NAME` or a
    surname ("this is will [PERSON]", "this is mark speaking"; not "this is will be fine")."""
    rest = text[end:end + 2].lstrip(" \t")
    if not rest or not (rest[0].isalpha()):
        return True
    m = _NEXT.match(text, end)
    return m is not None and (m.group(1).lower() in _AFTER_NAME or _surname(text, end) is not None)


def naming_regions(text: str) -> list[tuple[int, int]]:
    """The names said in a naming context, as ``(start, end)``, in text order."""
    first_names = person_name_words(first_only=True) | words("first_name_words")
    cased = _cased(text)
    out: list[tuple[int, int]] = []
    for m in _NAME_IS.finditer(text):
        w = m.group(1).lower()
        if w in EDGE_NAMES or w in _NOT_A_NAME:
            continue
        end = m.end(1)
        more = _surname(text, end)
        out.append((m.start(1), more[0] if more else end))
    for m in _NAMED.finditer(text):
        w = m.group(1).lower()
        if w in EDGE_NAMES or w in _NOT_A_NAME or w in _NOT_GIVEN:
            continue  # "named after his grandfather", "named in the suit"
        more = _surname(text, m.end(1))
        out.append((m.start(1), more[0] if more else m.end(1)))
    for m in itertools.chain(_DOCTOR.finditer(text), _TITLE.finditer(text)):
        w = m.group(1)
        low = w.lower()
        if low in EDGE_NAMES or low in _NOT_A_NAME:
            continue
        if m.re is _DOCTOR and not (cased and _capitalised(w) or
                                    low in person_name_words() and low not in common(ALLOW_5K)):
            continue  # "my doctor appointment", "the doctor said"
        if m.re is _TITLE and not (cased and _capitalised(w) or low in person_name_words() or not everyday(low)):
            continue  # "22 Elm Dr. please": a street, not a title
        more = _surname(text, m.end(1))
        out.append((m.start(1), more[0] if more else m.end(1)))
    for pattern in (_INTRODUCED, _SPOKE_TO):
        for m in pattern.finditer(text):
            w = m.group(1)
            low = w.lower()
            if low in EDGE_NAMES:
                continue
            first = low in first_names
            capital = cased and _capitalised(w) and (first or not everyday(low))
            if not (first or capital):
                continue
            more = _surname(text, m.end(1))
            if more is None and not (capital and pattern is _SPOKE_TO) and not _reads_as_name(text, m.end(1)):
                continue  # "this is will be fine", "hi mark the box": the word, not the name
            if not capital and more is None and low in common(VERY_COMMON_1K) and pattern is _SPOKE_TO:
                continue  # "talked to may": too common a word without a capital or a surname
            out.append((m.start(1), more[0] if more else m.end(1)))
    return sorted(set(out))


@rule("list")
def naming_context(ctx: Context, spans: list[Span]) -> list[Span]:
    """A name said in a naming context is a person whatever any list says of its words: "my / his last name is
    X" (X and a surname after it), "we named him X" / "a dog named X" / "nicknamed X" (not "named after ...",
    "named in ..."), "Doctor X" / "Dr. X" (X capitalised, or a name on the lists and no common
    word), "this is X" / "hi X" / "thanks X" and "I spoke to X Y" (X a first name, or capitalised and no
    everyday word; what follows must read as after a name: nothing, punctuation, "speaking", "how", a surname;
    "this is great", "this is will be fine" are no names). A span of a name type inside it gives way; a span
    reaching beyond it stays as the tagger read it. The breed, thing and everyday-word rules dropped "Jack
    Russell", "Collie" and "Weight" said as names: a person's name leaked."""
    regions = naming_regions(ctx.text)
    if not regions:
        return spans
    import bisect

    order = sorted(spans, key=lambda sp: (sp.start, sp.end))
    starts = [sp.start for sp in order]
    reach = list(itertools.accumulate((sp.end for sp in order), max))  # the furthest end among the first k
    dropped: set[int] = set()
    added: list[Span] = []
    last_end = -1
    for s, e in regions:
        if s < last_end:
            continue  # overlaps a name already taken
        first, stop = bisect.bisect_left(starts, s), bisect.bisect_left(starts, e)
        if first > 0 and reach[first - 1] > s:
            continue  # a span from before reaches into the name: it stays as the tagger read it
        inside = list(range(first, stop))
        if any(order[j].end > e or order[j].label not in NAME_LABELS for j in inside):
            continue  # a span the tagger read beyond the name, or as another type: it stays
        dropped.update(inside)
        added.append(Span(s, e, "PER", order[inside[0]].source if inside else "neural_tagger", 1.0))
        last_end = e
    if not added:
        return spans
    return sorted([sp for j, sp in enumerate(order) if j not in dropped] + added, key=lambda sp: (sp.start, sp.end))


_INSTITUTION_AFTER = re.compile(r"[ \t]+(State|Tech|University|College|A&M)\b", re.IGNORECASE)


@rule("list")
def acronym_institution(ctx: Context, spans: list[Span]) -> list[Span]:
    """A spelled acronym with "State", "Tech", "University", "College" or "A&M" after it is one organisation ("N C
    State", "L S U" is one anyway): masked as its letters alone, "I went to [ORGANIZATION] State" keeps half the
    name. Place acronyms ("U S state") are left alone."""
    place = words("place_acronyms")
    out = []
    for i, sp in enumerate(spans):
        surface = ctx.text[sp.start:sp.end]
        m = _INSTITUTION_AFTER.match(ctx.text, sp.end)
        if m and sp.label in NAME_LABELS and " " in surface and LETTERS.fullmatch(surface) and \
                "".join(surface.split()).upper() not in place and \
                not (i + 1 < len(spans) and spans[i + 1].start < m.end()):
            sp = Span(sp.start, m.end(), "ORG", sp.source, sp.score)
        out.append(sp)
    return out
