"""Spoken and spelled personal data (the forms a call transcript has) against (text, expected spans) tables."""

import pytest

from veil.registry import detectors as DETECTORS
from veil.mask.detectors.numbers import NumberDetector
from veil.mask.detectors.spoken import SpelledNameDetector, SpokenAddressDetector, SpokenEmailDetector
from veil.mask.dlp import DLPMasker


def found(detector, text: str) -> list[str]:
    return [text[s.start:s.end] for s in detector.find(text, "test")]


SPELLED = [
    ("s m i t h", ["s m i t h"]),
    ("it's s-m-i-t-h", ["s-m-i-t-h"]),
    ("that's S-M-I-T-H.", ["S-M-I-T-H"]),
    ("S. M. I. T. H. is right", ["S. M. I. T. H."]),
    ("last name smith s m i t h", ["smith s m i t h"]),
    ("smith that's s m i t h", ["smith that's s m i t h"]),
    ("s m i t h smith", ["s m i t h smith"]),
    ("S as in Sam, M as in Mary, I as in India", ["S as in Sam, M as in Mary, I as in India"]),
    ("b for bravo o for oscar b for bravo", ["b for bravo o for oscar b for bravo"]),
    ("m i double l e r", ["m i double l e r"]),
    ("k as in kilo, o", ["k as in kilo, o"]),
    ("m-a-r-i-a dot gonzalez", ["m-a-r-i-a"]),  # the e-mail detector takes the rest with "at ..."
    ("o'brien o apostrophe b r i e n", ["b r i e n"]),
    # not spellings
    ("i i i don't know", []),
    ("and i and i do know that", []),  # the "a" of "and" is no spelled letter
    ("Please call [S_M_I_T_H] tomorrow.", ["S_M_I_T_H"]),  # letters joined by underscores
    ("the U_S_A and FOO_S_M_I", []),
    ("more like a taxi driver type job then a then a doctor", []),
    ("the u s a and the f b i", []),
    ("a b", []),
    ("plan b or c", []),
    # an article before capitals and a pronoun after a comma spell nothing
    ("My friend had a V W Rabbit,", ["V W"]),
    ("and I watch so little T V, I did not even know", []),
    ("my name is s m i t h, i think", ["s m i t h"]),
]


@pytest.mark.parametrize("text, expected", SPELLED)
def test_spelled_names(text, expected):
    assert found(SpelledNameDetector(), text) == expected


@pytest.mark.parametrize("text, label", [
    # three letters that spell no word beside them, with no talk of spelling, are an acronym
    ("most of the engine parts seem to be S A E,", "ORGANIZATION_NAME"),
    ("an organization called T A D", "ORGANIZATION_NAME"),
    # a name of three letters is spelled as one
    ("my name is Bob, B O B", "PERSON_NAME"),
    ("it's spelled K I M", "PERSON_NAME"),
    ("s m i t h", "PERSON_NAME"),
])
def test_three_letters_without_a_word_are_an_acronym(text, label):
    assert [s.label for s in SpelledNameDetector().find(text, "test")] == [label]


EMAILS = [
    ("john dot smith at gmail dot com", ["john dot smith at gmail dot com"]),
    ("my email is john smith eighty four at yahoo dot com", ["john smith eighty four at yahoo dot com"]),
    ("it's m-a-r-i-a dot gonzalez at gmail dot com thanks", ["m-a-r-i-a dot gonzalez at gmail dot com"]),
    ("send it to j underscore doe at acme dash corp dot co dot uk", ["j underscore doe at acme dash corp dot co dot uk"]),
    ("email is jdoe one two three at outlook dot net", ["jdoe one two three at outlook dot net"]),
    ("i was at home dot then left", []),
    ("we met at the office", []),
]


@pytest.mark.parametrize("text, expected", EMAILS)
def test_spoken_emails(text, expected):
    assert found(SpokenEmailDetector(), text) == expected


ADDRESSES = [
    ("i live at twenty two baker street", ["twenty two baker street"]),
    ("it's four twenty first boulevard", ["four twenty first boulevard"]),
    ("one two three main st apartment four b", ["one two three main st apartment four b"]),
    ("ship it to 22 baker street please", ["22 baker street"]),
    ("fifteen hundred pennsylvania avenue", ["fifteen hundred pennsylvania avenue"]),
    ("nine eight seven oak lane unit twelve", ["nine eight seven oak lane unit twelve"]),
    ("five of them walk street", []),
    ("two of my friends", []),
]


@pytest.mark.parametrize("text, expected", ADDRESSES)
def test_spoken_addresses(text, expected):
    assert found(SpokenAddressDetector(), text) == expected


NUMBERS = [
    # phone, digit by digit, in groups, with "oh" and "double"
    ("my number is five five five one two three four", ["five five five one two three four"]),
    ("it's five five five, twelve thirty four", ["five five five, twelve thirty four"]),
    ("call double five oh one two", ["double five oh one two"]),
    ("two oh one five five five oh one four three", ["two oh one five five five oh one four three"]),
    # card and SSN
    ("card four one one one one one one one one one one one one one one one",
     ["four one one one one one one one one one one one one one one one"]),
    ("social is one two three forty five sixty seven eighty nine", ["one two three forty five sixty seven eighty nine"]),
    ("the last four are six seven eight nine", ["six seven eight nine"]),
    # account and zip
    ("account twenty two forty five sixty", ["twenty two forty five sixty"]),
    ("zip code oh two one three nine", ["two one three nine"]),
    ("zip nine oh two one oh", ["nine oh two one oh"]),
    # not numbers to mask
    ("one or two of them", []),
    ("twenty one people", []),
]


@pytest.mark.parametrize("text, expected", NUMBERS)
def test_spoken_numbers(text, expected):
    assert found(NumberDetector(), text) == expected


def test_spoken_detectors_are_registered_and_run_by_default():
    for name in ("spelled_name", "spoken_email", "spoken_address"):
        assert name in DETECTORS
    text = "yeah it's m-a-r-i-a dot gonzalez at gmail dot com and i live at twenty two baker street"
    masked = {text[s.start:s.end] for s in DLPMasker().detect(text)}
    assert "m-a-r-i-a dot gonzalez at gmail dot com" in masked
    assert "twenty two baker street" in masked
