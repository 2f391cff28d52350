"""Shape-keeping typed fills (veil/fill/typed.py) and the model-free ``faker`` filler (veil/fill/faker.py)."""

from __future__ import annotations

import random
import re

import pytest

from veil.fill.faker import FakerFiller
from veil.fill.formats import _ordinal_suffix, restyle
from veil.fill.typed import fake_value
from veil.mask.detectors.numbers import luhn_ok as luhn_valid
from veil.mask.placeholders import find_markers, render
from veil.registry import fillers
from veil.shapes import shape_of
from veil.types import Document, MaskedDocument, Span

_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"


def _valid_mmdd(a: str, b: str) -> bool:
    return 1 <= int(a) <= 12 and 1 <= int(b) <= 28


# (label, an original surface, a regex every substitute must match, extra check or None)
CASES = [
    ("NUMBER", "94110", r"\d{5}", None),  # zip
    ("NUMBER", "94110-1234", r"\d{5}-\d{4}", None),
    ("NUMBER", "09/27", r"(\d\d)/(\d\d)", lambda m: _valid_mmdd(*m.groups())),  # expiry MM/YY
    ("DATE", "03/14/1985", r"(\d\d)/(\d\d)/(19[5-9]\d|20[0-3]\d)", lambda m: _valid_mmdd(*m.groups()[:2])),
    ("DATE", "2024-03-14", r"(19[5-9]\d|20[0-3]\d)-(\d\d)-(\d\d)", lambda m: _valid_mmdd(*m.groups()[1:])),
    ("DATE", "September 27, 2024", _MONTH + r" \d\d, \d{4}", None),
    ("DATE", "september twenty seventh", r"[a-z]+ twenty [a-z]+th|[a-z]+ twenty (first|second|third)", None),
    ("DATE", "the 27th", r"the ([12]\d)(st|nd|rd|th)", lambda m: m.group(2) == _ordinal_suffix(int(m.group(1)))),
    ("NUMBER", "3:45", r"([1-9]):([0-5]\d)", None),  # a time
    ("CREDIT_CARD_NUMBER", "4111 1111 1111 1111", r"\d{4} \d{4} \d{4} \d{4}",
     lambda m: luhn_valid(m.group(0).replace(" ", ""))),
    ("CREDIT_CARD_NUMBER", "3782-822463-10005", r"\d{4}-\d{6}-\d{5}", lambda m: luhn_valid(m.group(0).replace("-", ""))),
    ("CREDIT_CARD_NUMBER", "four one one one " * 3 + "four one one one",
     r"(?:(?:zero|one|two|three|four|five|six|seven|eight|nine) ){15}(?:zero|one|two|three|four|five|six|seven|eight|nine)",
     lambda m: luhn_valid("".join(str("zero one two three four five six seven eight nine".split().index(w))
                                  for w in m.group(0).split()))),
    ("PHONE_NUMBER", "(415) 555-0199", r"\([2-9]\d\d\) [2-9]\d\d-\d{4}", None),
    ("PHONE_NUMBER", "415.555.0199", r"[2-9]\d\d\.[2-9]\d\d\.\d{4}", None),
    ("PHONE_NUMBER", "+1 415 555 0199", r"\+1 [2-9]\d\d [2-9]\d\d \d{4}", None),
    ("US_SOCIAL_SECURITY_NUMBER", "123-45-6789", r"(\d{3})-(\d\d)-(\d{4})",
     lambda m: m.group(1) not in ("000", "666") and m.group(1)[0] != "9" and m.group(2) != "00"),
    ("SPELLED_WORD", "m-a-r-i-a", r"[a-z]-[a-z]-[a-z]-[a-z]-[a-z]", None),
    ("SPELLED_WORD", "M A R I A", r"[A-Z] [A-Z] [A-Z] [A-Z] [A-Z]", None),
    ("SPELLED_WORD", "j.o.h.n", r"[a-z]\.[a-z]\.[a-z]\.[a-z]", None),
    ("EMAIL_ADDRESS", "john.smith@gmail.com", r"[\w.+-]+@[\w-]+\.[a-z]+", None),
    ("EMAIL_ADDRESS", "john dot smith at gmail dot com", r"[a-z ]+ at [a-z]+ dot [a-z]+", None),
    ("AGE", "38 years old", r"[1-9]\d years old", None),
    ("MONEY", "$450", r"\$[1-9]\d\d", None),
    ("USERNAME", "jsmith42", r"[a-z]+\d\d", None),
    ("IP_ADDRESS", "192.168.1.20", r"(\d{1,3})\.(\d{1,3})\.(\d)\.(\d\d)", lambda m: all(int(g) < 256 for g in m.groups())),
]


@pytest.mark.parametrize("label, surface, pattern, check", CASES, ids=[f"{c[0]}:{c[1][:20]}" for c in CASES])
def test_a_substitute_keeps_type_and_shape(label, surface, pattern, check):
    shape = shape_of(label, surface)
    rng = random.Random(0)
    values = [fake_value(label, rng, shape) for _ in range(40)]
    for v in values:
        m = re.fullmatch(pattern, v)
        assert m, (shape, v)
        assert check is None or check(m), v
    assert len(set(values)) >= 10  # drawn, not one fixed value


def test_spelled_letters_spell_a_plausible_word():
    from veil.fill.formats import _names_by_length

    rng = random.Random(1)
    for _ in range(20):
        v = fake_value("SPELLED_WORD", rng, "l-l-l-l-l")
        assert v.replace("-", "") in _names_by_length()[5]


def test_without_a_shape_the_type_default_is_drawn():
    v = fake_value("PHONE_NUMBER", random.Random(0))
    assert re.fullmatch(r"\d{3}-\d{3}-\d{4}", v)


@pytest.mark.parametrize("value, shape, expected", [
    ("p-a-t-t-y", "L-L-L-L-L", "P-A-T-T-Y"),
    ("Maria", "w", "maria"),
    ("maria", "W", "Maria"),
    ("41654", "dd-ddd", "41654"),  # another layout: the value is kept as it is
])
def test_restyle(value, shape, expected):
    assert restyle(value, shape) == expected


def _masked(doc_id: str, text: str, spans: list[tuple[str, str]]) -> MaskedDocument:
    out = []
    for surface, label in spans:
        start = text.index(surface, out[-1].end if out else 0)
        out.append(Span(start, start + len(surface), label, "dlp"))
    return render(Document(doc_id, text), out, "numbered")


def test_faker_filler_is_registered_needs_no_model_and_leaves_no_marker():
    assert fillers.get("faker") is FakerFiller
    text = "Hi, I'm Maria Lopez, zip 94110, card 4111 1111 1111 1111, that's m-a-r-i-a, call (415) 555-0199."
    md = _masked("d1", text, [("Maria Lopez", "PERSON_NAME"), ("94110", "NUMBER"),
                              ("4111 1111 1111 1111", "CREDIT_CARD_NUMBER"), ("m-a-r-i-a", "SPELLED_WORD"),
                              ("(415) 555-0199", "PHONE_NUMBER")])
    [fd] = FakerFiller(seed=0).fill([md])
    assert not find_markers(fd.text)
    for original in ("Maria Lopez", "94110", "4111 1111 1111 1111", "m-a-r-i-a", "(415) 555-0199"):
        assert original not in fd.text
    values = {s.label: s.substitute for s in fd.substitutions}
    assert re.fullmatch(r"\d{5}", values["NUMBER"])
    assert re.fullmatch(r"\(\d{3}\) \d{3}-\d{4}", values["PHONE_NUMBER"])
    assert len(values["PERSON_NAME"].split()) >= 2


def test_same_key_same_substitute_in_a_document_not_across_documents():
    text = "Maria called. Maria's zip is 94110, and 94110 it stays. Bob's zip is 10001."
    spans = [("Maria", "PERSON_NAME"), ("Maria", "PERSON_NAME"), ("94110", "NUMBER"), ("94110", "NUMBER"),
             ("Bob", "PERSON_NAME"), ("10001", "NUMBER")]
    docs = [_masked(f"doc{i}", text, spans) for i in range(6)]
    filled = FakerFiller(seed=0).fill(docs)
    per_doc = []
    for fd in filled:
        by_key: dict[str, set[str]] = {}
        for s in fd.substitutions:
            by_key.setdefault(s.key, set()).add(s.substitute)
        assert all(len(v) == 1 for v in by_key.values()), by_key  # one entity, one substitute
        assert by_key["PERSON_NAME_1"] != by_key["PERSON_NAME_2"]  # two entities, two substitutes
        assert by_key["NUMBER_1"] != by_key["NUMBER_2"]
        per_doc.append(next(iter(by_key["PERSON_NAME_1"])))
    assert len(set(per_doc)) > 1  # not one global mapping: a new draw in every document
    again = FakerFiller(seed=0).fill(docs)
    assert [f.text for f in again] == [f.text for f in filled]  # reproducible from (seed, id)


def test_faker_filler_fills_plain_markers_with_a_word_and_refuses_a_model():
    md = render(Document("x", "the cat sat on the mat"), [Span(19, 22, "WORD", "allow_list")], "mask")
    [fd] = FakerFiller().fill([md])
    assert fd.text.startswith("the cat sat on the ") and re.fullmatch(r"[a-z]+", fd.text[19:])
    with pytest.raises(Exception, match="uses no model"):
        FakerFiller(model="bert-base-uncased")


def test_faker_filler_keeps_a_lower_case_transcript_lower_case():
    md = _masked("asr", "hi this is james oconnor from denver", [("james oconnor", "PERSON_NAME"), ("denver", "LOCATION")])
    [fd] = FakerFiller().fill([md])
    assert fd.text == fd.text.lower() and not find_markers(fd.text)


def test_a_masked_capital_is_not_taken_for_a_lower_case_transcript():
    md = _masked("c", "Maria here, my name is Maria Lopez", [("Maria", "PERSON_NAME"), ("Maria Lopez", "PERSON_NAME")])
    [fd] = FakerFiller().fill([md])
    assert fd.text[0].isupper()  # "[PERSON_NAME_1], my name is ...": no evidence of lower-casing


@pytest.mark.parametrize("value, value_shape, shape, after_title, expected", [
    ("Sally Horton", "W W", "W", False, "Sally"),  # "Maria Lopez" ... "Thanks Maria"
    ("Sally Horton", "W W", "W", True, "Horton"),  # ... "Mrs. [PERSON_NAME_1]" (the title outside the span)
    ("Sally Horton", "W W", "{Mrs}. W", False, "Mrs. Horton"),
    ("Sally Horton", "W W", "w", False, "sally"),
    ("Dr. Sally Horton", "{Dr}. W W", "W", False, "Sally"),
    ("Sally Horton", "W W", "W W", False, None),  # as many names: the substitute itself
    ("Sally Horton", "W W", "W L. W", False, None),
])
def test_a_shorter_mention_of_a_person_takes_the_matching_part_of_the_substitute(value, value_shape, shape,
                                                                                 after_title, expected):
    from veil.fill.formats import person_mention

    assert person_mention(value, value_shape, shape, after_title) == expected


def test_one_person_through_a_call_keeps_one_name_in_each_mention():
    import veil

    call = [["Hi, my name is Maria Lopez.", "Thanks Maria.", "Mrs. Lopez, one more thing."]]
    full, first, title = veil.anonymize(call, maskers=["neural_tagger"], seed=1)[0]
    name = full[len("Hi, my name is "):-1].split()
    assert len(name) == 2 and first == f"Thanks {name[0]}." and title == f"Mrs. {name[1]}, one more thing."


@pytest.mark.parametrize("shape, pattern", [
    ("w {month}", r"(last|next|this) month"),  # "last month": a relative date, not "september month"
    ("w {week}", r"(last|next|this) week"),
    ("w W", r"(last|next|this) [A-Z][a-z]+"),  # "last March"
    ("dd/dd/dddd", r"\d\d/\d\d/(19[5-9]\d|20[01]\d|202[0-6])"),  # a year of a birth or a past event
])
def test_dates_keep_their_kind(shape, pattern):
    import random

    rng = random.Random(5)
    for _ in range(30):
        assert re.fullmatch(pattern, fake_value("DATE", rng, shape))


_AGO = r"(a|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\d+|a couple of|a few) {unit}s? " \
       r"(and a half |or two )?ago"


@pytest.mark.parametrize("surface, pattern", [
    # a time said as a duration before now stays one, in its unit ("a year and [n] half ago" was written)
    ("a year and a half ago", _AGO.format(unit="year")),
    ("a year or two ago", _AGO.format(unit="year")),
    ("a few months ago", _AGO.format(unit="month")),
    ("a couple of weeks ago", _AGO.format(unit="week")),
    ("two years ago", _AGO.format(unit="year")),
    ("Christmas a year ago", r"(Christmas|Thanksgiving|Easter|summer|winter|spring|fall) " + _AGO.format(unit="year")),
    # a date said relative to now keeps its tense ("last summer" never becomes "next June")
    ("last summer", r"last [a-z]+"),
    ("this past summer", r"this past [a-z]+"),
    ("next week", r"next (month|year|weekend|summer|winter|spring|fall)"),  # never the original again
    ("last month", r"last (week|year|weekend|summer|winter|spring|fall)"),
    ("last March", r"last ([A-Z][a-z]+|summer|winter|spring|fall)"),
    # a year said in two words is another one, never "july-six"
    ("eighty-nine", r"(fifty|sixty|seventy|eighty|ninety)-(one|two|three|four|five|six|seven|eight|nine)"),
])
def test_spoken_dates_read_as_dates(surface, pattern):
    rng = random.Random(3)
    for _ in range(30):
        assert re.fullmatch(pattern, fake_value("DATE", rng, shape_of("DATE", surface)))


@pytest.mark.parametrize("label, surface, pool", [
    # a quasi-identifier is another of its kind: a job for a job ("a represent" was written), an illness for
    # an illness, a religion or nationality for a group, in the original's number of words where one exists
    ("OCCUPATION", "dentist", "job"),
    ("OCCUPATION", "quality manager", "job"),
    ("OCCUPATION", "engineers", "jobs"),
    ("OCCUPATION", "construction", "field"),
    ("DEMOGRAPHIC", "asthma", "health"),
    ("DEMOGRAPHIC", "Alzheimer", "health"),
    ("DEMOGRAPHIC", "Christian", "group"),
    ("DEMOGRAPHIC", "catholic", "group"),
])
def test_quasi_identifiers_are_drawn_from_their_kind(label, surface, pool):
    from veil.fill.typed import _plural_of, _quasi_pool

    shape = shape_of(label, surface)
    assert shape.startswith(f"<{pool}>")
    terms = {t.lower() for t in _quasi_pool(pool)}
    if pool == "jobs":
        terms = {_plural_of(t) for t in terms}
    rng = random.Random(4)
    for _ in range(20):
        value = fake_value(label, rng, shape)
        assert value.lower() in terms
        assert len(value.replace("-", " ").split()) == len(surface.replace("-", " ").split())
        # case: an illness lower-case, a group capitalised as written, lower-case text stays lower-case
        assert value == value.lower() if pool == "health" or surface.islower() else value[0].isupper()


@pytest.mark.parametrize("surface, pattern", [("U S", r"[A-Z] [A-Z]"), ("u s", r"[a-z] [a-z]"),
                                            ("D.C.", r"[A-Z]\.[A-Z]\.")])
def test_a_place_said_letter_by_letter_is_another_in_its_layout(surface, pattern):
    rng = random.Random(1)
    for _ in range(10):
        assert re.fullmatch(pattern, fake_value("LOCATION", rng, shape_of("LOCATION", surface)))


def test_a_spelled_name_the_tagger_calls_a_person_is_another_name_spelled():
    import random

    rng = random.Random(2)
    for _ in range(10):
        value = fake_value("PERSON_NAME", rng, "L-L-L-L-L")
        assert re.fullmatch(r"[A-Z](-[A-Z]){4}", value)
        assert value.replace("-", "").capitalize() in _names()


def _names():
    from veil.gazetteer import first_names, last_names

    return set(first_names("f")) | set(first_names("m")) | set(last_names())
