"""Core: public word lists that say what kind of name a value is (person names, places, organisation kinds).

Both sides of the privacy boundary read them: the mask stage to record a masked name's *kind* in its
shape (:mod:`veil.shapes`: a title, a country or a city, an organisation's "Bank"), the fill stage to
draw a substitute of that kind (:mod:`veil.fill.entities`). They are closed, public lists: a word on
them says how a value is built, never which value it was.

- person names: Faker's en_US first names (by gender) and last names (US census frequencies);
- places: ``veil/data/gazetteer/places.tsv.gz`` (GeoNames countries, US states, cities of 15,000 people
  or more, continents and regions; built by ``scripts/build_gazetteer.py``);
- titles, name suffixes, organisation kind words, street words: the lists below;
- quasi-identifiers (``veil/data/quasi``): job titles as people say them and Faker's, fields of work, health
  conditions, religions, and countryinfo's demonyms (nationalities): the mask stage's occupation, health and
  nationality detectors find them, the shape records which list a masked one is on, the fill draws from it.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

PLACES_FILE = Path(__file__).resolve().parent / "data" / "gazetteer" / "places.tsv.gz"

#: person titles (lower case, without the dot) -> the gender they imply (None: either)
TITLES: dict[str, str | None] = {
    "mr": "m", "mister": "m", "sir": "m", "mrs": "f", "ms": "f", "miss": "f", "madam": "f", "dame": "f",
    "mx": None, "dr": None, "doctor": None, "prof": None, "professor": None, "rev": None, "reverend": None,
    "judge": None, "officer": None, "detective": None, "sgt": None, "sergeant": None, "capt": None,
    "captain": None, "lt": None, "lieutenant": None, "coach": None, "nurse": None, "senator": None,
    "governor": None, "father": "m", "fr": "m", "sister": "f", "aunt": "f", "uncle": "m", "grandma": "f",
    "grandpa": "m",
}
#: name suffixes kept where the original had one, never invented
NAME_SUFFIXES = frozenset({"jr", "sr", "ii", "iii", "iv", "md", "phd", "dds", "esq"})
#: the word that says what kind of organisation (or facility) a name is: kept in the substitute
ORG_KINDS = frozenset({
    "bank", "bancorp", "credit", "union", "insurance", "financial", "capital", "investments", "trust",
    "inc", "llc", "llp", "ltd", "plc", "corp", "corporation", "company", "co", "group", "holdings", "partners",
    "associates", "enterprises", "industries", "international", "global", "sons", "brothers",
    "elementary", "school", "high", "middle", "primary", "academy", "college", "university", "institute",
    "hospital", "clinic", "medical", "health", "healthcare", "dental", "pharmacy", "care", "center", "centre",
    "foundation", "association", "society", "church", "council", "club", "league", "agency", "department",
    "ministry", "bureau", "office", "police", "fire", "court", "library", "museum", "airlines", "airways",
    "airport", "station", "stadium", "arena", "park", "mall", "hotel", "inn", "restaurant", "cafe", "bakery",
    "market", "store", "stores", "shop", "motors", "automotive", "foods", "services", "solutions",
    "technologies", "technology", "systems", "software", "labs", "media", "news", "press", "publishing",
    "records", "studios", "entertainment", "communications", "wireless", "telecom", "energy", "electric",
    "power", "gas", "oil", "logistics", "construction", "realty", "properties", "law", "firm", "consulting",
    "state", "national", "federal", "county", "city", "community", "regional", "memorial", "general",
})
#: street words (kept in a street address's substitute)
STREET_WORDS = frozenset({
    "street", "st", "avenue", "ave", "road", "rd", "boulevard", "blvd", "lane", "ln", "drive", "dr", "court",
    "ct", "way", "place", "pl", "terrace", "circle", "cir", "highway", "hwy", "parkway", "pkwy", "square",
    "sq", "trail", "route", "rte", "plaza", "alley", "crescent", "close", "row", "apt", "apartment", "suite",
    "ste", "unit", "floor", "fl", "box", "po", "north", "south", "east", "west", "n", "s", "e", "w", "ne",
    "nw", "se", "sw",
})
#: small words inside names of organisations and places, kept as they are ("Bank of ...", "... and Sons")
CONNECTORS = frozenset({"of", "the", "and", "for", "at", "on", "de", "la", "del", "van", "von"})
PLACE_KINDS = ("country", "state", "city", "region")


@dataclass
class Places:
    kind_of: dict[str, str] = field(default_factory=dict)  # lower-cased name -> kind (first listed kind wins)
    draws: dict[str, dict[int, list[str]]] = field(default_factory=dict)  # kind -> word count -> names
    state_codes: list[str] = field(default_factory=list)


@lru_cache(maxsize=1)
def places() -> Places:
    p = Places()
    with gzip.open(PLACES_FILE, "rt", encoding="utf-8") as f:
        next(f)
        rows = [line.rstrip("\n").split("\t") for line in f]
    rank = {k: i for i, k in enumerate(PLACE_KINDS)}  # "New York" is a state before it is a city
    kinds: dict[str, set[str]] = {}
    for kind, name, *_ in rows:
        kinds.setdefault(name.lower(), set()).add(kind)
    for kind, name, _cc, state, _pop, draw in sorted(rows, key=lambda r: rank[r[0]]):
        p.kind_of.setdefault(name.lower(), kind)
        if name.lower().startswith("the "):
            p.kind_of.setdefault(name[4:].lower(), kind)
        # a substitute is of one kind only: not "Georgia" (a state and a country) for a state
        if draw == "1" and len(kinds[name.lower()]) == 1:
            p.draws.setdefault(kind, {}).setdefault(len(name.split()), []).append(name)
        if kind == "state" and state and draw == "1":
            p.state_codes.append(state)
    return p


def place_kind(surface: str) -> str | None:
    """``country``, ``state``, ``city`` or ``region`` where ``surface`` is a place on the lists, else None."""
    name = " ".join(surface.replace("\n", " ").split()).strip(" ,.")
    if len(name) == 2 and name.upper() in _state_codes():  # "PA" is a state before it is a town
        return "state"
    return places().kind_of.get(name.lower())


@lru_cache(maxsize=1)
def _state_codes() -> frozenset[str]:
    return frozenset(places().state_codes)


@lru_cache(maxsize=1)
def _person_lists() -> dict[str, tuple[str, ...]]:
    from faker.providers.person.en_US import Provider

    return {"f": tuple(Provider.first_names_female), "m": tuple(Provider.first_names_male),
            "last": tuple(Provider.last_names)}


def first_names(gender: str) -> tuple[str, ...]:
    """Faker's en_US first names of ``gender`` (``f`` / ``m``)."""
    return _person_lists()[gender]


def last_names() -> tuple[str, ...]:
    return _person_lists()["last"]


@lru_cache(maxsize=1)
def _gender_of() -> dict[str, str]:
    out: dict[str, str] = {}
    for g in ("f", "m"):
        for n in first_names(g):
            out[n.lower()] = "?" if out.get(n.lower(), g) != g else g
    return out


def name_gender(first_name: str) -> str | None:
    """``f`` / ``m`` for a first name on Faker's lists of one gender only, else None."""
    g = _gender_of().get(first_name.lower())
    return g if g in ("f", "m") else None


# --- quasi-identifiers ------------------------------------------------------------------------------------

QUASI_DATA = Path(__file__).resolve().parent / "data" / "quasi"


def quasi_lines(name: str) -> list[str]:
    """The terms of one list in ``veil/data/quasi`` (one a line, lower case; ``#`` comments skipped)."""
    return [ln.strip().lower() for ln in (QUASI_DATA / name).read_text(encoding="utf-8").splitlines()
            if ln.strip() and not ln.lstrip().startswith("#")]


def term_key(term: str) -> tuple[str, ...]:
    """A term as lower-case word tuple, hyphens and apostrophes as separate words ("baby-sitter" -> baby sitter)."""
    return tuple(w for w in re.split(r"[^\w]+|_", term.lower().replace("’", "'")) if w)


def plural_keys(words: tuple[str, ...]) -> list[tuple[str, ...]]:
    """A term's lookup keys for a word run that may be plural ("teachers", "nurses", "salesmen")."""
    last = words[-1]
    keys = [words]
    if last.endswith("men"):
        keys.append(words[:-1] + (last[:-3] + "man",))
    if last.endswith("ies"):
        keys.append(words[:-1] + (last[:-3] + "y",))
    if last.endswith("es"):
        keys.append(words[:-1] + (last[:-2],))
    if last.endswith("s"):
        keys.append(words[:-1] + (last[:-1],))
    return keys


#: pieces of Faker's titles that are everyday words, not jobs ("Copy" of "Copy, advertising", "Land" of "Land/geomatics")
_NOT_JOBS = frozenset({("copy",), ("make",), ("land",), ("sub",), ("model",), ("buyer",), ("dealer",)})


@lru_cache(maxsize=1)
def job_titles() -> tuple[str, ...]:
    """Faker's job titles, the part before a comma ("Engineer, civil" -> "Engineer"), without "/" or brackets."""
    from faker.providers.job import Provider

    out = set()
    for job in Provider.jobs:
        head = job.split(",")[0].strip()
        if head and not any(c in head for c in "/()"):
            out.add(head)
    return tuple(sorted(out))


@lru_cache(maxsize=1)
def occupation_terms() -> frozenset[tuple[str, ...]]:
    """Everyday job titles (``occupations_spoken.txt``) and Faker's job titles (:func:`job_titles`, unhyphenated)."""
    terms = set(quasi_lines("occupations_spoken.txt"))
    terms.update(t.lower() for t in job_titles() if "-" not in t)
    return frozenset(term_key(t) for t in terms) - _NOT_JOBS


@lru_cache(maxsize=1)
def field_terms() -> frozenset[tuple[str, ...]]:
    return frozenset(term_key(t) for t in quasi_lines("fields_of_work.txt"))


@lru_cache(maxsize=1)
def health_terms() -> frozenset[tuple[str, ...]]:
    return frozenset(term_key(t) for t in quasi_lines("health_terms.txt"))


@lru_cache(maxsize=1)
def nationalities() -> tuple[str, ...]:
    """Demonyms of ``countryinfo``'s country records ("Swedish", "New Zealander", "Bosnian", "Herzegovinian")."""
    import countryinfo  # lazy: reads 250 JSON files

    from veil.errors import VeilError

    out: set[str] = set()
    for f in (Path(countryinfo.__file__).parent / "data").glob("*.json"):
        rec = json.loads(f.read_text(encoding="utf-8"))
        for d in re.split(r"[,/]", rec.get("demonym") or "") if isinstance(rec, dict) else ():
            if d.strip():
                out.add(d.strip())
    if not out:
        raise VeilError("countryinfo has no demonyms: is the countryinfo package installed whole?")
    return tuple(sorted(out))


@lru_cache(maxsize=1)
def group_terms() -> frozenset[tuple[str, ...]]:
    """Nationalities (countryinfo's demonyms), religions and ethnic groups."""
    terms = {t.lower() for t in nationalities()} | set(quasi_lines("religions.txt"))
    terms -= {"white", "black"}  # colours far more often than people
    return frozenset(term_key(t) for t in terms)
