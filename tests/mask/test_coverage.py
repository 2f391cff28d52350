"""Detect and mask stage: the one covered / partial / missed rule shared by eval-detect and audit risk."""

from __future__ import annotations

import pytest

from veil.audit import risk
from veil.mask.coverage import COVERED, MISSED, PARTIAL, Coverage, leaks
from veil.mask.evaluate import evaluate_tab, missed_mentions
from veil.mask.gold import GoldDocument, GoldSpan
from veil.types import Document, Span


def test_coverage_counts_letters_and_digits_only():
    text = "call 555-0100."
    c = Coverage(text, [Span(5, 13, "PHONE", "t")]).mention(5, 14)
    assert (c.status, c.masked_chars, c.chars) == (COVERED, 7, 7)  # the period is not PI
    c = Coverage(text, [Span(5, 8, "PHONE", "t")]).mention(5, 14)
    assert (c.status, c.masked_chars, c.chars, c.visible) == (PARTIAL, 3, 7, "-0100.")


@pytest.mark.parametrize("text, masked, status", [
    ("Mr John Smith", ["John Smith"], COVERED),  # an honorific identifies no one
    ("Mr John Smith", ["John"], PARTIAL),
    ("Mr John Smith", [], MISSED),
    ("University of Oslo", ["University", "Oslo"], COVERED),
    ("Smith's", ["Smith"], COVERED),  # the possessive leaks nothing
    ("Smith", ["Smit"], PARTIAL),  # a letter left is a leak
    ("the", [], COVERED),  # nothing identifying to leak
    ("14 Rue Gafsa Apt. 3", ["14 Rue Gafsa", "3"], COVERED),
    ("14 Rue Gafsa Apt. 3", ["14", "3"], PARTIAL),
])
def test_status_table(text, masked, status):
    spans = [Span(text.index(m), text.index(m) + len(m), "X", "t") for m in masked]
    assert Coverage(text, spans).mention(0, len(text)).status == status


@pytest.mark.parametrize("visible, leaked", [
    ("Mr", False), ("of", False), ("the … and", False), ("Apt.", False), ("Suite … Box", False),
    ("Green", True), ("Rue Gafsa Apt.", True), ("14", True), ("village", True),
])
def test_only_identifying_leftovers_make_a_mention_partial(visible, leaked):
    assert leaks(visible) is leaked


TEXT = "Mr John Smith of Oslo met Mrs Jane Doe and Dr Who. Smith's dog: 11/2004."


def _gold():
    spans = []
    for surface, label, itype in [("Mr John Smith", "PERSON", "DIRECT"), ("Oslo", "LOC", "QUASI"),
                                  ("Mrs Jane Doe", "PERSON", "DIRECT"), ("Dr Who", "PERSON", "QUASI"),
                                  ("Smith's", "PERSON", "DIRECT"), ("11/2004", "CODE", "DIRECT")]:
        i = TEXT.index(surface)
        spans.append(GoldSpan(i, i + len(surface), label, itype, surface))
    return [GoldDocument(Document("d", TEXT), spans)]


@pytest.mark.parametrize("masked", [
    [], ["John"], ["John Smith", "Oslo"], ["Jane", "Doe", "Who"], ["Smith", "11"], ["11/2004", "Smith's"],
    ["Mr John Smith of Oslo met Mrs Jane Doe and Dr Who. Smith's dog: 11/2004."],
])
def test_eval_detect_and_audit_risk_agree_on_every_mention(masked):
    spans = []
    for m in masked:
        i = TEXT.index(m)
        spans.append(Span(i, i + len(m), "X", "t"))
    golds = _gold()
    missed_by_eval = {m["mention"] for m in missed_mentions(golds, [spans])}
    [r] = risk.audit_against_gold(golds, [spans], "tab")
    missed_by_audit = {TEXT[m.start:m.end] for m in risk.missed_against_gold(
        TEXT, golds[0].spans, spans, risk.GOLD_TYPE_MAPS["tab"])[0]}
    assert missed_by_eval == missed_by_audit
    result = evaluate_tab(golds, [spans])
    n_masked = sum(round(result[t]["mention_recall"] * result[t]["mentions"]) for t in ("DIRECT", "QUASI"))
    assert n_masked == len(golds[0].spans) - len(missed_by_eval)
    assert r.score == 0 or missed_by_audit


def test_precision_is_the_share_of_masked_words_inside_gold():
    golds = _gold()
    i = TEXT.index("John Smith")
    j = TEXT.index("dog")
    r = evaluate_tab(golds, [[Span(i, i + 10, "X", "t"), Span(j, j + 3, "X", "t")]])
    assert r["masked_words"] == 3 and r["precision"] == pytest.approx(2 / 3)
    assert evaluate_tab(golds, [[]])["precision"] is None
