"""Detect and mask stage: the quasi-identifier masker (professions, nationalities, groups, illnesses)."""

from __future__ import annotations

import pytest

from veil.errors import VeilError
from veil.mask.quasi import QuasiIdentifierMasker


@pytest.fixture(scope="module")
def masker():
    return QuasiIdentifierMasker()


@pytest.mark.parametrize("text, expected", [
    ("a Kurdish primary school teacher", [("Kurdish", "DEMOGRAPHIC"), ("primary school teacher", "OCCUPATION")]),
    ("two Swedish nationals and a Nigerian", [("Swedish", "NATIONALITY"), ("Nigerian", "NATIONALITY")]),
    ("she is an accountant; they were electricians", [("accountant", "OCCUPATION"), ("electricians", "DEMOGRAPHIC")]),
    ("an actuary and two acupuncturists", [("actuary", "OCCUPATION"), ("acupuncturists", "OCCUPATION")]),
    # speech-recognition spellings: no case, no apostrophe, no hyphen
    ("jehovahs witnesses and greek cypriot families", [("jehovahs witnesses", "DEMOGRAPHIC"),
                                                       ("greek cypriot", "DEMOGRAPHIC")]),
    ("Jehovah’s Witnesses", [("Jehovah’s Witnesses", "DEMOGRAPHIC")]),
    ("the court held a hearing", []),
    ("Swedishness is not a word here", []),  # whole words only
])
def test_quasi_table(masker, text, expected):
    assert [(text[s.start:s.end], s.label) for s in masker.detect(text)] == expected


def test_user_terms_and_bad_sources(tmp_path):
    f = tmp_path / "terms.tsv"
    f.write_text("rare disease x\tDEMOGRAPHIC\n", encoding="utf-8")
    m = QuasiIdentifierMasker(sources=(), terms_file=f)
    assert [s.label for s in m.detect("with Rare-Disease X")] == ["DEMOGRAPHIC"]
    # a type the fill stage would not read as a placeholder label is refused, in one located line
    f.write_text("rare disease x\tILLNESS\n", encoding="utf-8")
    with pytest.raises(VeilError, match="terms.tsv:1: type 'ILLNESS' is not one of veil's placeholder labels"):
        QuasiIdentifierMasker(sources=(), terms_file=f)
    with pytest.raises(VeilError):
        QuasiIdentifierMasker(sources=["wikipedia"])
    with pytest.raises(VeilError):
        QuasiIdentifierMasker(sources=())
