"""A tiny reviewed corpus: originals, and masks that miss some PI and mask one word that is not PI."""

import json

import pytest

from veil.io.records import write_masked
from veil.mask.placeholders import render
from veil.types import Document, Span

DOCS = [
    # Dunder Mifflin and Green are missed; "Please" is masked though it is not PI (a false positive)
    ("d1", "Person 1: Dunder Mifflin, this is Rachel Green speaking. Please call me.",
     [("Rachel", "PERSON_NAME"), ("Please", "ORGANIZATION_NAME")]),
    # the phone number is missed; the organisation is masked with the wrong type
    ("d2", "Hi, this is Mark from ABC Trust Fund, email mk21@abc.com or call 555-0199.",
     [("Mark", "PERSON_NAME"), ("ABC Trust Fund", "LOCATION"), ("mk21@abc.com", "EMAIL_ADDRESS")]),
    ("d3", "Nothing personal here.", []),
]


def spans_of(text, marks):
    return [Span(text.index(s), text.index(s) + len(s), label, "test") for s, label in marks]


@pytest.fixture
def corpus(tmp_path):
    """(original.jsonl, masked.jsonl) of DOCS, masked with numbered placeholders."""
    original = tmp_path / "original.jsonl"
    original.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t, _ in DOCS), encoding="utf-8")
    masked = tmp_path / "masked.jsonl"
    write_masked(masked, [render(Document(i, t), spans_of(t, m), "numbered") for i, t, m in DOCS])
    return original, masked
