"""Fill stage: names, places, organisations and street addresses of the right kind, in the original's shape.

A typed placeholder of these labels carries an *entity shape* (:mod:`veil.shapes`): ``W`` for a one-word
name, ``{Mrs}. W W`` for a title and two names, ``<city>W W`` for a two-word city, ``W {Bank}`` for a
bank. :func:`entity_value` draws a substitute with the same layout from public lists
(:mod:`veil.gazetteer`), using only the document's RNG:

- a person: one first name stays one first name, first + last stays first + last, a title stays
  (with a first name of its gender: "Mrs." is followed by a woman's name), a suffix stays, none is
  invented; initials stay initials; ``gender`` (``f`` / ``m``) asks for that gender's first names
  (the fill loop's ranking passes it, see :mod:`veil.fill.loop`), else a title's or a coin's;
- a place: a real place of the same granularity (a country for a country, a US state for a state,
  a city for a city) with as many words where the lists have one; a place of unknown granularity
  gets a city;
- an organisation: its kind word and connectors stay ("... Bank", "Bank of ..."), the other words
  become surnames (a place after "of"), acronyms become capital letters;
- a street address: its numbers, street words ("Street", "Apt."), and after them a real city, a
  state code, a country, in the original's order.
"""

from __future__ import annotations

import random

from veil.gazetteer import NAME_SUFFIXES, TITLES, first_names, last_names, places
from veil.shapes import ADDRESS_LABELS, ORG_LABELS, PERSON_LABELS, PLACE_LABELS, atoms, shape_tag

ENTITY_LABELS = PERSON_LABELS | PLACE_LABELS | ORG_LABELS | ADDRESS_LABELS
_WORD = ("W", "w", "U")
_STREET_NAMES = ("Main", "Oak", "Maple", "Pine", "Cedar", "Elm", "Park", "Lake", "Hill", "Church", "Walnut",
                 "Spruce", "Chestnut", "Willow", "Sunset", "Highland", "Lincoln", "Washington", "Jefferson",
                 "Franklin", "Madison", "Jackson", "Adams", "Center", "Mill", "River", "Spring", "Forest",
                 "Meadow", "Ridge", "Valley", "Front", "Market", "Water", "Union", "School", "Railroad")
_DEFAULT_SHAPES = {
    "person": ("W W",),
    "place": ("<city>W", "<city>W", "<city>W W", "<state>W", "<country>W"),
    "org": ("W {Inc}", "W {LLC}", "W-W", "W, W {and} W", "W {Group}", "W {Bank}", "W {Corporation}"),
    "street": ("<street>dddd W {Street}", "<street>ddd W {Avenue}", "<street>ddd W {Road} {Apt}. dd",
               "<street>dddd W {Drive}", "<street>ddd W {Lane} {Suite} ddd"),
}


def entity_kind(label: str) -> str | None:
    if label in PERSON_LABELS:
        return "person"
    if label in PLACE_LABELS:
        return "place"
    if label in ORG_LABELS:
        return "org"
    if label in ADDRESS_LABELS:
        return "street"
    return None


def _case(word: str, code: str) -> str:
    if code == "U":
        return word.upper()
    if code == "w":
        return word.lower()
    return word


def _tokens(parts: list[str]) -> list[list[str]]:
    """Atoms grouped into whitespace-separated tokens (a space atom is a token of its own)."""
    out: list[list[str]] = []
    for a in parts:
        if a == " " or not out or out[-1] == [" "]:
            out.append([a])
        else:
            out[-1].append(a)
    return out


def person_value(shape: str, rng: random.Random, gender: str | None = None) -> str:
    """A person's name in ``shape`` (see the module docstring)."""
    toks = _tokens(atoms(shape))
    title_gender = None
    for t in toks:
        lit = t[0][1:-1].lower() if t[0].startswith("{") else None
        if lit in TITLES and TITLES[lit]:
            title_gender = TITLES[lit]
    gender = title_gender or gender or rng.choice("fm")
    names = [i for i, t in enumerate(toks) if any(a in _WORD for a in t)]
    has_title = any(t[0].startswith("{") and t[0][1:-1].lower() in TITLES for t in toks)
    initial_before = bool(names) and any(t[0] in ("L", "l") for t in toks[:names[0]])
    roles: dict[int, str] = {}
    if len(names) == 1:
        roles[names[0]] = "last" if has_title or initial_before else "first"
    elif names:
        comma = "," in toks[names[0]]  # "Smith, John"
        for j, i in enumerate(names):
            roles[i] = "first" if 0 < j < len(names) - 1 else ("last" if (j == 0) == comma else "first")
    out: list[str] = []
    for i, t in enumerate(toks):
        for a in t:
            if a in _WORD:
                pool = first_names(gender) if roles.get(i) == "first" else last_names()
                out.append(_case(rng.choice(pool), a))
            elif a in ("L", "l"):
                out.append(_case(rng.choice("ABCDEFGHJKLMNPRSTW"), "U" if a == "L" else "w"))
            elif a.startswith("{"):
                out.append(a[1:-1])
            elif a.startswith("<") or a == "?":
                continue
            else:
                out.append(a)
    return "".join(out)


def _place_name(kind: str, n_words: int, rng: random.Random, avoid: frozenset[str] = frozenset()) -> str:
    """A place of ``kind`` with ``n_words`` words (or the nearest count), none of them in ``avoid``."""
    by_len = places().draws.get(kind) or places().draws["city"]
    if n_words not in by_len:
        n_words = min(by_len, key=lambda n: (abs(n - n_words), n))
    for _ in range(20):
        name = rng.choice(by_len[n_words])
        if not avoid or not any(w.lower() in avoid for w in name.split()):
            break
    return name


def place_value(shape: str, rng: random.Random) -> str:
    """A real place of the shape's granularity (a city where it has none) with as many words."""
    tag = shape_tag(shape)
    if tag == "street":
        return address_value(shape, rng)
    parts = [a for a in atoms(shape) if not a.startswith("<")]
    codes = [a for a in parts if a in _WORD or a in ("L", "l")]
    if tag == "state" and codes == ["U"]:
        return rng.choice(places().state_codes)
    if len(codes) in (2, 3) and all(c in ("L", "l") for c in codes):
        # a place said letter by letter ("U S", "d c", "U.S.A."): another in the same layout and case
        letters = iter(rng.choice(places().state_codes) if len(codes) == 2 else rng.choice(("USA", "UAE", "NYC")))
        return "".join(_case(next(letters), "U" if a == "L" else "w") if a in ("L", "l") else a
                       for a in parts if a != "?")
    name = _place_name(tag or "city", max(1, len(codes)), rng)
    if codes and all(c in ("w", "l") for c in codes):
        return name.lower()
    if codes and all(c == "U" for c in codes):
        return name.upper()
    return name


def org_value(shape: str, rng: random.Random) -> str:
    """An organisation with the shape's kind word and connectors; surnames for its other words."""
    parts = [a for a in atoms(shape) if not a.startswith("<")]
    out: list[str] = []
    prev_word = None
    for a in parts:
        if a in ("W", "w"):
            word = _place_name(rng.choice(("state", "city", "country")), 1, rng) if prev_word == "of" \
                else rng.choice(last_names())
            out.append(_case(word, a))
        elif a == "U":
            out.append("".join(rng.choice("ABCDEFGHIJKLMNOPRSTUVW") for _ in range(3)))
        elif a in ("L", "l"):
            out.append(_case(rng.choice("ABCDEFGHJKLMNPRSTW"), "U" if a == "L" else "w"))
        elif a == "d":
            out.append(str(rng.randint(1, 9)))
        elif a.startswith("{"):
            out.append(a[1:-1])
        elif a != "?":
            out.append(a)
        if a != " ":
            prev_word = a[1:-1].lower() if a.startswith("{") else a
    return "".join(out)


def address_value(shape: str, rng: random.Random) -> str:
    """A street address in the shape: its numbers, its street words, then a city, a state, a country."""
    parts = [a for a in atoms(shape) if not a.startswith("<")]
    from veil.gazetteer import CONNECTORS, STREET_WORDS

    literal = STREET_WORDS | CONNECTORS  # a drawn name with "West" or "The" in it would change the shape
    street_seen = False
    after: list[str] = ["city", "state", "country"]  # what word runs after the street name are, in order
    out: list[str] = []
    i = 0
    while i < len(parts):
        a = parts[i]
        if a in _WORD:
            j = i  # a run of words separated by single spaces is one name
            while j + 2 < len(parts) and parts[j + 1] == " " and parts[j + 2] == a:
                j += 2
            n = (j - i) // 2 + 1
            if not street_seen:
                words = [rng.choice(_STREET_NAMES if rng.random() < 0.5 else last_names()) for _ in range(n)]
                name = " ".join(words)
            elif a == "U" and n == 1:  # "CO", "RS": a state's code
                if "state" in after:
                    after.remove("state")
                name = rng.choice([c for c in places().state_codes if c.lower() not in literal])
            else:
                kind = after.pop(0) if after else "city"
                name = _place_name(kind, n, rng, literal)
            out.append(_case(name, a))
            i = j + 1
            continue
        if a.startswith("{"):
            out.append(a[1:-1])
            street_seen = street_seen or a[1:-1].lower() in STREET_WORDS
        elif a == "d":
            first = i == 0 or parts[i - 1] != "d"
            out.append(str(rng.randint(1, 9) if first and i + 1 < len(parts) and parts[i + 1] == "d"
                           else rng.randrange(10)))
        elif a in ("L", "l"):  # not N, S, E, W: a direction is a street word
            out.append(_case(rng.choice("ABCDFGHJKLMPRT"), "U" if a == "L" else "w"))
        elif a == ",":
            street_seen = True
            out.append(a)
        else:  # a separator; "?" (a symbol the shape does not name) stays a symbol
            out.append("\u00b7" if a == "?" else a)
        i += 1
    return "".join(out)


def entity_value(label: str, shape: str | None, rng: random.Random, gender: str | None = None) -> str:
    """A substitute for an entity label, in ``shape`` (a default layout of the type where none was recorded)."""
    kind = entity_kind(label)
    if kind is None:
        raise KeyError(label)
    if not shape:
        shape = rng.choice(_DEFAULT_SHAPES[kind])
    if kind == "person":
        return person_value(shape, rng, gender)
    if kind == "place":
        return place_value(shape, rng)
    if kind == "org":
        return org_value(shape, rng)
    return address_value(shape, rng)


def person_has_first_name(shape: str | None) -> bool:
    """Whether a person shape has a first name (whose gender the context can choose) and no gendered title."""
    parts = atoms(shape or "W W")
    if any(a.startswith("{") and TITLES.get(a[1:-1].lower()) for a in parts):
        return False
    toks = [t for t in _tokens(parts) if any(a in _WORD for a in t)]
    has_title = any(a.startswith("{") and a[1:-1].lower() in TITLES for a in parts)
    return bool(toks) and not (len(toks) == 1 and has_title)


__all__ = ["ENTITY_LABELS", "NAME_SUFFIXES", "entity_kind", "entity_value", "person_has_first_name"]
