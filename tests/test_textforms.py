"""Text forms (none / lower / asr): the rewritten text and where each gold span lands on it."""

from __future__ import annotations

import re

import pytest

from veil.errors import VeilError
from veil.mask.gold import GoldSpan
from veil.textforms import FORMS, transform, transform_documents
from veil.types import Document, Span


def _spans_of(text: str, surfaces: list[str]) -> list[tuple[int, int]]:
    """(start, end) of each surface, searched left to right so repeated words stay in order."""
    out, pos = [], 0
    for s in surfaces:
        i = text.index(s, pos)
        out.append((i, i + len(s)))
        pos = i + len(s)
    return out


# (text, gold surfaces, expected asr text, expected surfaces of the gold spans on the asr text)
ASR_TABLE = [
    ("Call me at 555-1234, John.", ["555-1234", "John"],
     "call me at five five five one two three four john", ["five five five one two three four", "john"]),
    ("Email john.smith@gmail.com now", ["john.smith@gmail.com"],
     "email john dot smith at gmail dot com now", ["john dot smith at gmail dot com"]),
    # a span on part of an address keeps only its words
    ("Email john.smith@gmail.com now", ["smith"], "email john dot smith at gmail dot com now", ["smith"]),
    ("Visit www.acme.org/help today.", ["www.acme.org/help"],
     "visit w w w dot acme dot org slash help today", ["w w w dot acme dot org slash help"]),
    ("SSN 123-45-6789.", ["123-45-6789"], "ssn one two three four five six seven eight nine",
     ["one two three four five six seven eight nine"]),
    ("Card 4111 1111 1111 1111 ok", ["4111 1111 1111 1111"],
     "card four one one one one one one one one one one one one one one one ok",
     ["four one one one one one one one one one one one one one one one"]),
    ("Phone (555) 123-4567!", ["(555) 123-4567"],
     "phone five five five one two three four five six seven", ["five five five one two three four five six seven"]),
    ("Ring +44 20 7946 0958.", ["+44 20 7946 0958"],
     "ring plus four four two zero seven nine four six zero nine five eight",
     ["plus four four two zero seven nine four six zero nine five eight"]),
    ("He lives at 22 Baker Street.", ["22 Baker Street"], "he lives at twenty two baker street",
     ["twenty two baker street"]),
    ("221B Baker St", ["221B"], "two hundred and twenty one b baker st", ["two hundred and twenty one b"]),
    ("Born in 1990 in Leeds", ["1990", "Leeds"], "born in nineteen ninety in leeds", ["nineteen ninety", "leeds"]),
    ("In 2005, he left", ["2005"], "in two thousand and five he left", ["two thousand and five"]),
    ("the 1990s were", ["1990s"], "the nineteen nineties were", ["nineteen nineties"]),
    ("his 3rd and 22nd visit", ["3rd", "22nd"], "his third and twenty second visit", ["third", "twenty second"]),
    ("paid $1,250.50 cash", ["$1,250.50"], "paid one thousand two hundred and fifty dollars and fifty cents cash",
     ["one thousand two hundred and fifty dollars and fifty cents"]),
    ("a £2.5m loan", ["£2.5m"], "a two point five million pounds loan", ["two point five million pounds"]),
    ("EUR 1,470,000 in damages", ["EUR 1,470,000"],
     "eur one million four hundred and seventy thousand in damages",
     ["eur one million four hundred and seventy thousand"]),
    ("rose 12% to 3.5", ["12%", "3.5"], "rose twelve percent to three point five", ["twelve percent", "three point five"]),
    ("at 10:30am or 9:05 or 7:00", ["10:30am", "9:05", "7:00"],
     "at ten thirty a m or nine oh five or seven o'clock", ["ten thirty a m", "nine oh five", "seven o'clock"]),
    ("on 12/03/1999 exactly", ["12/03/1999"], "on twelve three nineteen ninety nine exactly",
     ["twelve three nineteen ninety nine"]),
    ("application no. 18403/91 was", ["18403/91"], "application number one eight four zero three nine one was",
     ["one eight four zero three nine one"]),
    ("zip 02139 and code 007", ["02139", "007"], "zip zero two one three nine and code zero zero seven",
     ["zero two one three nine", "zero zero seven"]),
    ("postcode SW1A 1AA.", ["SW1A 1AA"], "postcode s w one a one a a", ["s w one a one a a"]),
    ("Smith & Sons, Ltd.", ["Smith & Sons, Ltd."], "smith and sons ltd", ["smith and sons ltd"]),
    ("Mr. O’Brien's car", ["O’Brien"], "mr o'brien's car", ["o'brien"]),
    ("A-L-P-H-A team", ["A-L-P-H-A"], "a l p h a team", ["a l p h a"]),
    ("well-known Dr. Jones", ["Jones"], "well known dr jones", ["jones"]),
    ("user jsmith1985 here", ["jsmith1985"], "user jsmith nineteen eighty five here", ["jsmith nineteen eighty five"]),
    # a gold span that starts or ends in punctuation keeps only its words
    ("(the Court) held", ["(the Court)"], "the court held", ["the court"]),
]


@pytest.mark.parametrize("text, surfaces, expected, expected_surfaces", ASR_TABLE)
def test_asr_text_and_spans(text, surfaces, expected, expected_surfaces):
    spans = [Span(s, e, "X", "gold") for s, e in _spans_of(text, surfaces)]
    out, moved = transform(text, spans, "asr")
    assert out == expected
    assert [out[s.start:s.end] for s in moved] == expected_surfaces
    assert [s.label for s in moved] == ["X"] * len(surfaces)


LOWER_TABLE = [
    ("John Smith met ACME", ["John Smith", "ACME"], "john smith met acme", ["john smith", "acme"]),
    ("Mr. O’Brien", ["O’Br"], "mr. o’brien", ["o’br"]),  # a span inside a word stays inside it
    # "İ" lower-cases to two characters: later offsets shift by one
    ("İzmir and Ankara", ["İzmir", "Ankara"], "i̇zmir and ankara", ["i̇zmir", "ankara"]),
]


@pytest.mark.parametrize("text, surfaces, expected, expected_surfaces", LOWER_TABLE)
def test_lower_text_and_spans(text, surfaces, expected, expected_surfaces):
    out, moved = transform(text, _spans_of(text, surfaces), "lower")
    assert out == expected
    assert [out[s:e] for s, e, *_ in moved] == expected_surfaces


def test_none_is_identity():
    spans = [Span(0, 4, "PERSON_NAME", "gold")]
    assert transform("John left.", spans, "none") == ("John left.", spans)


def test_asr_keeps_line_breaks_and_collapses_other_whitespace():
    out, _ = transform("Hello,  John.\n\nBye   now!", [], "asr")
    assert out == "hello john\nbye now"


def test_span_of_only_punctuation_is_dropped():
    text = "Hi -- there"
    out, moved = transform(text, [(3, 5, "X"), (6, 11, "Y")], "asr")
    assert out == "hi there" and moved == [(3, 8, "Y")]


def test_tuples_and_gold_spans_keep_their_fields():
    text = "Mr Smith paid $25."
    gold = GoldSpan(3, 8, "PERSON", "DIRECT", "e1")
    out, (moved,) = transform(text, [gold], "asr")
    assert moved == GoldSpan(3, 8, "PERSON", "DIRECT", "e1")  # "smith" did not move
    _, (moved,) = transform(text, [(14, 17, "MONEY", 0.5)], "asr")
    assert moved[2:] == ("MONEY", 0.5)
    assert out[moved[0]:moved[1]] == "twenty five dollars"


def test_transform_documents_on_gold_documents():
    from veil.mask.gold import GoldDocument

    gd = GoldDocument(Document("d1", "Call John at 555-1234."), [GoldSpan(5, 9, "PERSON"), GoldSpan(13, 21, "PHONE")])
    (asr,) = transform_documents([gd], "asr")
    assert asr.doc.id == "d1"
    assert [asr.doc.text[s.start:s.end] for s in asr.spans] == ["john", "five five five one two three four"]
    assert gd.doc.text == "Call John at 555-1234."  # the input is not changed


def test_unknown_form_is_an_error():
    with pytest.raises(VeilError, match="unknown text form 'upper'"):
        transform("x", [], "upper")


@pytest.mark.parametrize("form", FORMS)
def test_every_span_points_at_words_of_the_output(form):
    """On a mixed text every span survives, in order; on asr text each starts and ends on a word character."""
    text = ("On 22 June 2005 Ms. Jane Doe (born 1961, SSN 078-05-1120) wrote to jane.doe@mail.com "
            "from 14 Crown St., paying €300 on 1/2/2003 at 9:15 pm; ref. no. 11/2005-E.1.")
    spans = [Span(m.start(), m.end(), "W", "gold") for m in re.finditer(r"\S+", text)]
    out, moved = transform(text, spans, form)
    assert len(moved) == len(spans)
    if form == "asr":
        assert all(out[s.start].isalnum() and out[s.end - 1].isalnum() for s in moved)
    else:
        assert [out[s.start:s.end] for s in moved] == [text[s.start:s.end].lower() if form == "lower"
                                                        else text[s.start:s.end] for s in spans]
    assert [s.start for s in moved] == sorted(s.start for s in moved)
    assert transform(text, spans, form) == (out, moved)  # deterministic
