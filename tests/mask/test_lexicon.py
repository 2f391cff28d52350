"""The one lexicon matcher (``veil.mask.detectors.lexicon.longest_terms``), read by the quasi masker and the DLP lexicons."""

from __future__ import annotations

from veil.mask.detectors.lexicon import longest_terms

WORDS = "the chief executive officer met a nurse".split()
TERMS = {("chief", "executive", "officer"): "JOB", ("executive", "officer"): "JOB", ("nurse",): "JOB",
         ("officer",): "JOB"}


def scan(accept):
    def lookup(i, j):
        return TERMS.get(tuple(WORDS[i:j]))
    return [(" ".join(WORDS[i:j]), hit) for i, j, hit in longest_terms(len(WORDS), 4, lookup, accept)]


def test_the_longest_term_wins_and_the_scan_goes_on_after_it():
    assert scan(lambda i, j, found: found) == [("chief executive officer", "JOB"), ("nurse", "JOB")]


def test_a_term_its_context_rejects_is_not_tried_shorter():
    # "chief executive officer" rejected: the scan moves one word on, where "executive officer" is the longest
    got = scan(lambda i, j, found: None if WORDS[i] == "chief" else found)
    assert got == [("executive officer", "JOB"), ("nurse", "JOB")]


def test_nothing_found_in_an_empty_text():
    assert list(longest_terms(0, 4, lambda i, j: "X", lambda i, j, f: f)) == []
