"""Detect and mask stage: the list and drop rules (all of a text's spans at once, after the span rules).

Names that end with an organisation's kind word are one organisation, an institution's name runs over "of",
names of two types side by side are one; then a span that is no one's name goes: a kind word alone, a pet's
breed, a thing after an article, one everyday word.
"""

from __future__ import annotations

import re
from functools import lru_cache

from veil.mask.neural.rules.base import Context, rule
from veil.mask.neural.rules.lexical import (EDGE_ALL, NAME_LABELS, TITLE_BEFORE, everyday, everyday_no_place,
                                            last_nonspace, person_name_words, search_back, sentence_start, touches)
from veil.mask.neural.rules.names import kind_words_only
from veil.mask.wordlists import ordered, words
from veil.types import Span

_ORG_KINDS = words("organisation_kinds")
_ORG_NEXT_WORD = re.compile(r"[ \t]+([A-Za-z]+)\.?")
_CAPITALISED_WORD_BEFORE = re.compile(r"(?<![\w'’-])([A-Z][\w'’-]*)[ \t]+$")
_INSTITUTION_HEADS = ordered("institution_heads")
_HEAD_OF_BEFORE = re.compile(r"\b(?:" + "|".join(_INSTITUTION_HEADS) + r")\s+of\s+(?:the\s+)?$", re.IGNORECASE)
_CAPITALISED_BEFORE = re.compile(r"(?<![\w’'-])[A-Z][\w’'-]*\s+$")
_OF_CAPITALISED_AFTER = re.compile(r"\s+of\s+(?:the\s+)?[A-Z][\w’'-]*(?:\s+[A-Z][\w’'-]*)*")
_SPACES = re.compile(r"[ \t]*")
_NAME_GAP = re.compile(r"[ \t-]+")
_NAME_RANK = {"PER": 3, "ORG": 2, "LOC": 2, "MISC": 1}
_REGIONS = words("regions")


@rule("list")
def organisation_kind(ctx: Context, spans: list[Span]) -> list[Span]:
    """Names that end with an organisation's kind word are one organisation ("Northwind" + "Bank", a place and
    another place to the tagger); a name followed by such a word, capitalised, takes it in ("Acme" Bank), and a
    capitalised one the capitalised words before it ("Lubbock View [Christian] Church"; not a sentence's first
    everyday word: "Call Northwind Bank"). One organisation, one placeholder: its parts filled apart read as
    two things."""
    text = ctx.text
    out: list[Span] = []
    for sp in spans:
        s, e, label = sp.start, sp.end, sp.label
        if label in NAME_LABELS:
            nxt = _ORG_NEXT_WORD.match(text, e)
            if nxt and nxt.group(1).lower() in _ORG_KINDS and nxt.group(1)[0].isupper():
                e = nxt.end(1)
        names = re.findall(r"[A-Za-z]+", text[s:e])
        if label in NAME_LABELS and names and names[-1].lower() in _ORG_KINDS:
            taken = 0
            while True:
                prev = out[-1] if out else None
                if prev is not None and prev.label in NAME_LABELS and \
                        (prev.end >= s or _SPACES.fullmatch(text, prev.end, s)):
                    out.pop()  # "Lubbock" + "View" + ... + "Church"
                    s = prev.start
                    continue
                word = search_back(_CAPITALISED_WORD_BEFORE, text, s) if text[s:s + 1].isupper() and taken < 3 \
                    else None
                if word is None or word.group(1).isupper() or word.group(1).lower() in EDGE_ALL or \
                        (sentence_start(text, word.start()) and everyday(word.group(1).lower())):
                    break  # (capitals throughout are shouting, not a name)
                s = word.start()  # a capitalised word of the name the tagger left out ("... Christian Church")
                taken += 1
            out.append(Span(s, e, "ORG", sp.source, sp.score))
            continue
        if out and out[-1].end > s:  # a word the span before took in
            continue
        out.append(sp if (s, e) == (sp.start, sp.end) else Span(s, e, label, sp.source, sp.score))
    return out


def _institution_start(text: str, s: int) -> int:
    """Where a name at ``s`` starts once the heads before it are taken in ("Appeal Committee of the House of")."""
    moved = s
    for _ in range(4):
        m = _HEAD_OF_BEFORE.search(text, max(0, moved - 40), moved)
        if m is None:
            break
        moved = m.start()
        while (c := _CAPITALISED_BEFORE.search(text, max(0, moved - 30), moved)) is not None:
            j = last_nonspace(text, c.start())
            if j < 0 or text[j] in ".!?:\n\"“(" or c.group().strip() == "The":
                break  # a sentence's first word has its capital anyway
            moved = c.start()
    return moved


@rule("list")
def institution_of(ctx: Context, spans: list[Span]) -> list[Span]:
    """In written documents an institution's name runs over "of": an organisation or place after "House of",
    "Kingdom of", "Court of Justice of the" takes them in ("House of [Lords]", "Appeal Committee of the House of
    [Lords]"), and an organisation whose name ends in a head word takes the capitalised words after its "of"
    ("[Beyoğlu Civil Court] of General Jurisdiction"). Either way it is one organisation."""
    if not ctx.written:
        return spans
    text = ctx.text
    out: list[Span] = []
    for sp in spans:
        s, e, label = sp.start, sp.end, sp.label
        if label in ("ORG", "LOC"):
            start = _institution_start(text, s)
            if start < s and not (out and out[-1].end > start and out[-1].label not in ("ORG", "LOC")):
                s, label = start, "ORG"
            names = text[s:e].split()
            if label == "ORG" and names and names[-1].lower() in _INSTITUTION_HEADS:
                m = _OF_CAPITALISED_AFTER.match(text, e)
                if m:
                    e = m.end()
        while out and out[-1].start >= s:
            out.pop()  # a part of the name, found on its own
        if out and out[-1].end > s:
            s = out[-1].end
            while s < e and text[s].isspace():
                s += 1
            if s >= e:
                continue  # inside the name before it
        out.append(sp if (s, e, label) == (sp.start, sp.end, sp.label) else Span(s, e, label, sp.source, sp.score))
    return out


@rule("list")
def one_name(ctx: Context, spans: list[Span]) -> list[Span]:
    """In conversation names of different types right beside each other are one name read in two ("san" as an
    organisation, "francisco" as a place): one span, so no part of it is filled apart; a person where one part
    was read as a person, else the surer reading, MISC last."""
    if ctx.written:
        return spans
    out: list[Span] = []
    for sp in spans:
        prev = out[-1] if out else None
        if prev is not None and prev.label != sp.label and {prev.label, sp.label} <= NAME_LABELS and \
                prev.end <= sp.start and _NAME_GAP.fullmatch(ctx.text, prev.end, sp.start):
            best = max((prev, sp), key=lambda x: (_NAME_RANK[x.label], x.score))
            out[-1] = Span(prev.start, sp.end, best.label, best.source, max(prev.score, sp.score))
            continue
        out.append(sp)
    return out


@rule("list")
def kind_word_alone(ctx: Context, spans: list[Span]) -> list[Span]:
    """An organisation that is its kind word alone ("the Credit [Union]", "the [Bank]") names none and goes,
    unless another span stands right beside it ("[Southwark] [Council]")."""
    return [sp for i, sp in enumerate(spans) if sp.label != "ORG" or not kind_words_only(ctx.text[sp.start:sp.end])
            or touches(ctx.text, spans, i)]


_PET_WORDS = re.compile(r"\b(?:dogs?|cats?|pupp(?:y|ies)|pups?|kittens?|breeds?|pets?|birds?|mix|mixed|part|kennels?|"
                        r"vets?|parrots?)\b", re.IGNORECASE)


@lru_cache(maxsize=1)
def _breeds() -> frozenset[tuple[str, ...]]:
    from veil.gazetteer import quasi_lines, term_key

    return frozenset(term_key(t) for t in quasi_lines("breeds.txt"))


@lru_cache(maxsize=1)
def _longest_breed() -> int:
    return max(len(k) for k in _breeds())


@rule("drop")
def breed(ctx: Context, spans: list[Span], i: int) -> bool:
    """A name, place or product that is an animal's breed (``veil/data/quasi/breeds.txt``, plural too) is a pet's
    breed, no one's name ("a Golden Retriever", "part Collie"): a breed of two words anywhere, one that is also a
    name ("Shepherd") only where the text talks of pets; never after an honorific ("Mr. Shepherd")."""
    from veil.gazetteer import plural_keys, term_key

    sp, text = spans[i], ctx.text
    if sp.label not in NAME_LABELS:
        return False
    key = term_key(text[sp.start:sp.end])
    if not key or TITLE_BEFORE.search(text[max(0, sp.start - 12):sp.start]):
        return False
    after = tuple(w.lower() for w in re.findall(r"[A-Za-z]+", text[sp.end:sp.end + 30])[:2])
    # "part Chow": the everyday words before a breed go with it; a breed has at most ``longest`` words, so only
    # the last ones of a long span can start one, and the everyday words before them are counted once
    longest = _longest_breed()
    first = max(0, len(key) - longest)
    prefix = 0  # how many everyday words the span starts with
    while prefix < len(key) - 1 and everyday(key[prefix]):
        prefix += 1
    for n in range(first, len(key)):
        run = key[n:]
        if n > prefix:
            break
        for tail in ((), after[:1], after[:2]):  # "[Golden] Retriever": the tagger read half of it
            full = run + tail
            if any(k in _breeds() for k in plural_keys(full)):
                return len(full) > 1 or full[0] not in person_name_words() or \
                    ctx.once("pets", lambda: _PET_WORDS.search(text) is not None)
    return False


def _capitalised_name(text: str, sp: Span) -> bool:
    """A person's name written with a capital inside a sentence ("said Gladys", "Roxanne is"): an everyday word
    that is a first name ("Rose", "Gladys") keeps it; after a full stop it is a sentence's start, so no."""
    if sp.label != "PER" or not text[sp.start:sp.start + 1].isupper() or text[sp.start:sp.end].isupper():
        return False
    return not sentence_start(text, sp.start)


@rule("drop", default=False)
def everyday_word(ctx: Context, spans: list[Span], i: int) -> bool:
    """A person or organisation (and in conversation a product or place) that is one everyday word ("watermelon",
    "quart", "hills", wordfreq's 40,000) and no name or place as well goes, unless another span stands right
    beside it ("Texas" "Tech") or it is a person written with a capital inside a sentence ("said Gladys");
    compass regions stay ("raised in the south")."""
    sp, text = spans[i], ctx.text
    word = text[sp.start:sp.end].lower().strip(".'’")
    if not (sp.label in ("PER", "ORG") or (sp.label in ("MISC", "LOC") and not ctx.written)) or " " in word or \
            word in _REGIONS:
        return False
    if not (everyday(word) or sp.label in ("MISC", "LOC") and everyday_no_place(word)):
        return False
    return not _capitalised_name(text, sp) and not touches(text, spans, i)
