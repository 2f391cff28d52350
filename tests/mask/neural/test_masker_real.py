"""The default masker (the shipped tagger + dlp) on the leaks its rules once caused, on a call's utterances
together, and its cost per character from 1k to 64k characters. Real model: slow."""

from __future__ import annotations

import time

import pytest

import veil

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("text, name", [
    ("I spoke to Jack Russell yesterday about the loan.", "Jack Russell"),  # a two-word dog breed
    ("Doctor Collie said I should rest.", "Collie"),
    ("and his last name is Weight", "Weight"),
    ("hi dawn how are you today", "dawn"),
    ("yeah this is will speaking", "will"),
])
def test_a_name_in_a_naming_context_is_masked(text, name):
    assert name not in veil.mask(text).text


def test_a_spelled_state_school_is_one_organisation():
    assert veil.mask("I went to N C State.").text == "I went to [ORGANIZATION_NAME_1]."


def test_a_name_found_in_one_utterance_is_masked_in_the_others_of_its_call_only():
    call = ["Hello, this is Hope Ashworth.", "Sure, Hope, one moment.", "Hope, are you still there?"]
    other = ["Sure, Hope, one moment.", "Hope, are you still there?"]
    masked = [[d.text for d in group] for group in veil.mask([call, other])]
    assert not any("Hope" in t for t in masked[0])
    # another call never sees the first one's names: it is masked as it is alone
    assert masked[1] == [d.text for d in veil.mask([other])[0]]


@pytest.mark.parametrize("unit", ["a b c d e f g h i j k l m n o p q r s t u v w x y z ",
                                  "I spoke to Hope Ashworth and Jack Russell yesterday. ",
                                  "four one five five five five zero one nine nine 1234 5678 9012 3456 "])
def test_the_default_masker_is_linear(unit):
    from veil.run.components import build_engine
    from veil.types import Document

    engine = build_engine()
    engine.detect([Document(id="w", text="warm up, John Smith")])
    costs = []
    for n in (1000, 8000, 64000):
        text = (unit * (n // len(unit) + 1))[:n]
        t0 = time.process_time()
        engine.detect([Document(id="x", text=text)])
        costs.append((time.process_time() - t0) / n)
    assert costs[2] / costs[0] < 3.0, [f"{c * 1e6:.0f} µs/char" for c in costs]
