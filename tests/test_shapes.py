"""Shape signatures (veil/shapes.py): what crosses the privacy boundary with a typed placeholder."""

from __future__ import annotations

import random
import re

import pytest

from veil.shapes import LITERAL_WORDS, SHAPED_LABELS, atoms, is_shape, shape_of
from veil.types import Placeholder


@pytest.mark.parametrize("label, surface, shape", [
    ("NUMBER", "94110", "ddddd"),
    ("NUMBER", "09/27", "dd/dd"),
    ("CREDIT_CARD_NUMBER", "4111 1111 1111 1111", "dddd dddd dddd dddd"),
    ("CREDIT_CARD_NUMBER", "4111-1111-1111-1111", "dddd-dddd-dddd-dddd"),
    ("SPELLED_WORD", "m-a-r-i-a", "l-l-l-l-l"),
    ("SPELLED_WORD", "M A R I A", "L L L L L"),
    ("PHONE_NUMBER", "(415) 555-0199", "(ddd) ddd-dddd"),
    ("PHONE_NUMBER", "+1 415 555 0199", "+d ddd ddd dddd"),
    ("NUMBER", "four one five", "n n n"),
    ("NUMBER", "thirty eight", "w n"),
    ("DATE", "September 27, 2024", "W dd, dddd"),
    ("DATE", "the 27th", "{the} dd{th}"),
    ("AGE", "38 years old", "dd {years} {old}"),
    ("EMAIL_ADDRESS", "john dot smith at gmail dot com", "w {dot} w {at} w {dot} w"),
    ("USERNAME", "AB-12345", "U-ddddd"),
    ("MONEY", "£450", "£ddd"),
    ("NUMBER", "12\u00a7", "dd?"),  # a character outside the separator set is not kept
    ("NUMBER", "  12 \t 34 ", "dd dd"),  # whitespace runs are one space; edges trimmed
])
def test_shape_of(label, surface, shape):
    assert shape_of(label, surface) == shape
    assert is_shape(shape)


@pytest.mark.parametrize("label", ["URL", "MASK", "WORD", "CUSTOM"])
def test_untyped_markers_get_no_shape(label):
    assert label not in SHAPED_LABELS
    assert shape_of(label, "Maria Lopez 12") is None


@pytest.mark.parametrize("label, surface, shape", [
    ("PERSON_NAME", "Priya", "W"),
    ("PERSON_NAME", "john smith", "w w"),
    ("PERSON_NAME", "Mrs. Laura Anderson", "{Mrs}. W W"),
    ("PERSON_NAME", "O'Brien", "W"),
    ("PERSON_NAME", "Mary-Jane Smith Jr.", "W-W W {Jr}."),
    ("PERSON_NAME", "J. Smith", "L. W"),
    ("LOCATION", "Boston", "<city>W"),
    ("LOCATION", "Los Angeles", "<city>W W"),
    ("LOCATION", "Texas", "<state>W"),
    ("LOCATION", "CO", "<state>U"),
    ("LOCATION", "Uruguay", "<country>W"),
    ("LOCATION", "the Midwest", "<region>w W"),
    ("LOCATION", "Christopherberg", "W"),  # not on the lists: no granularity
    ("ORGANIZATION_NAME", "Northwind Bank", "W {Bank}"),
    ("ORGANIZATION_NAME", "Bank of America", "{Bank} {of} W"),
    ("ORGANIZATION_NAME", "Pena, Welch and Smith", "W, W {and} W"),
    ("ORGANIZATION_NAME", "Lincoln Elementary", "W {Elementary}"),
    ("STREET_ADDRESS", "123 Main St.", "<street>ddd W {St}."),
])
def test_entity_shapes_keep_the_layout_the_kind_word_and_the_granularity(label, surface, shape):
    assert shape_of(label, surface) == shape
    assert is_shape(shape)


@pytest.mark.parametrize("label, values", [
    ("PERSON_NAME", ["Maria", "Priya", "Wolfeschlegelsteinhausen", "Al", "O'Neil"]),
    ("PERSON_NAME", ["Maria Lopez", "Li Na", "John Smith-Jones"[:10], "Ann Wu"]),
    ("PERSON_NAME", ["Dr. Maria Lopez", "Dr. Li Na", "Dr. Ann Wu"]),
    ("LOCATION", ["Boston", "Denver", "Chicago", "Seattle"]),
    ("LOCATION", ["Texas", "Ohio", "Oregon"]),
    ("LOCATION", ["Uruguay", "Germany", "Peru"]),
    ("ORGANIZATION_NAME", ["Northwind Bank", "Contoso Bank", "Garcia Bank"]),
    # a quasi-identifier's shape says its kind, not which one
    ("OCCUPATION", ["nurse", "dentist", "engineer", "plumber"]),
    ("OCCUPATION", ["quality manager", "dental hygienist", "truck driver"]),
    ("DEMOGRAPHIC", ["asthma", "diabetes", "cancer"]),
    ("DEMOGRAPHIC", ["Catholic", "Swedish", "Baptist", "Mexican"]),
])
def test_an_entity_shape_cannot_tell_apart_two_names_of_one_kind_and_layout(label, values):
    assert len({shape_of(label, v) for v in values}) == 1
    assert is_shape(shape_of(label, values[0]))


def test_a_surface_too_long_gets_no_shape():
    assert shape_of("NUMBER", " ".join(["1"] * 65)) is None
    assert shape_of("NUMBER", " ".join(["1"] * 64)) is not None


_WORDS = ["one", "three", "seven", "maria", "smith", "Maria", "Smith", "MARIA", "AB", "x", "Q", "thirty", "gmail"]


def _same_layout_variant(surface: str, rng: random.Random) -> str:
    """Another value of the same layout: every digit, letter and word replaced by one of its class."""
    def word(m: re.Match) -> str:
        w = m.group()
        if w.lower() in LITERAL_WORDS:
            return w
        if len(w) == 1:
            return rng.choice("ABCXYZ") if w.isupper() else rng.choice("abcxyz")
        if w.lower() in ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "oh"):
            return rng.choice(["zero", "two", "three", "seven", "oh"])
        pick = rng.choice(["lopez", "ng", "wolfeschlegelstein", "ab"])
        return pick.upper() if w.isupper() else pick.title() if w[0].isupper() else pick
    return re.sub(r"[^\W\d_]+", word, re.sub(r"\d", lambda _: str(rng.randrange(10)), surface))


@pytest.mark.parametrize("seed", range(30))
def test_the_shape_cannot_tell_apart_two_values_of_one_layout(seed):
    """The privacy property: a shape is a function of the layout only, so it carries nothing about
    which value of that layout was masked (word lengths included: "one" and "three" look alike)."""
    rng = random.Random(seed)
    seps = [" ", "-", "/", ".", ", ", " at ", " dot "]
    surface = "".join(rng.choice(["4", "17", "2024", "one", "three", "maria", "Smith", "MARIA", "x", "Q", "thirty",
                                  "years", "th"]) + rng.choice(seps) for _ in range(rng.randint(1, 6))).strip()
    shape = shape_of("NUMBER", surface)
    for _ in range(5):
        assert shape_of("NUMBER", _same_layout_variant(surface, rng)) == shape
    # and no letter or digit of the value survives in it, except the class codes and literal words
    stripped = re.sub(r"\{[a-z]+\}", "", shape)
    assert set(stripped) <= set("dnlLwWU") | set(" -/.:,()+@#_'$%&*€£¥°?"), shape


def test_placeholder_round_trips_its_shape_and_rejects_a_forged_one():
    p = Placeholder(3, 13, "NUMBER", "NUMBER_1", "dlp", "ddddd")
    assert Placeholder.from_dict(p.to_dict()) == p
    assert "shape" not in Placeholder(3, 13, "NUMBER", "NUMBER_1", "dlp").to_dict()
    with pytest.raises(ValueError, match="not a shape"):
        Placeholder.from_dict({**p.to_dict(), "shape": "94110"})  # a value smuggled in as a shape
    with pytest.raises(ValueError, match="not a shape"):
        Placeholder.from_dict({**p.to_dict(), "shape": "{maria}"})  # only listed literal words


def test_atoms():
    assert atoms("dd {years} {old}") == ["d", "d", " ", "{years}", " ", "{old}"]
