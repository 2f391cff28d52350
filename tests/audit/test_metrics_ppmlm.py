"""Utility, privacy and regurgitation on hand-made predictions (veil.audit.metrics)."""

import math

from veil.audit.metrics import Prediction, leaked_identifiers, privacy, regurgitation, regurgitation_by_repetition, utility


def P(truth, predicted, correct=None, purpose="identifier", seq=0, word=0):
    return Prediction(seq, word, truth, predicted, truth == predicted if correct is None else correct, purpose)


def test_utility_counts_only_utility_positions():
    preds = [P("cat", "cat", purpose="utility"), P("dog", "cat", purpose="utility"),
             P("smith", "smith", purpose="identifier"), P("ran", "ran", purpose="utility")]
    assert utility(preds) == 2 / 3
    assert math.isnan(utility([P("smith", "smith")]))


def test_utility_uses_the_whole_word_flag_not_the_string():
    # a multi-token word whose joined string matches but one sub-word differs is not correct
    assert utility([P("texan", "texan", correct=False, purpose="utility")]) == 0.0


def test_privacy_counts_distinct_identifiers_predicted_anywhere():
    ids = {"smith", "plano", "zorgon", "vertebra"}
    preds = [P("smith", "smith"), P("smith", "smith"),  # in place, twice: counts once
             P("the", "plano"),  # elsewhere: still a leak
             P("zorgon", "the")]  # probed but not predicted
    assert leaked_identifiers(preds, ids) == {"smith", "plano"}
    assert privacy(preds, ids) == 1 - 2 / 4
    assert privacy([], ids) == 1.0
    assert privacy(preds, set()) == 1.0


def test_regurgitation_rows_and_curve():
    kinds = {"smith": "direct", "plano": "indirect", "zorgon": "both"}
    counts = {"smith": 5, "plano": 1, "zorgon": 1}
    preds = [P("smith", "smith"), P("the", "smith"), P("plano", "plano"), P("a", "b")]
    rows = regurgitation(preds, kinds, counts)
    assert rows[0] == {"identifier": "smith", "kind": "direct", "repetitions": 5, "predicted": 2,
                       "predicted_in_place": 1}
    by = {r["identifier"]: r for r in rows}
    assert by["plano"]["predicted"] == 1 and by["zorgon"]["predicted"] == 0
    curve = regurgitation_by_repetition(rows)
    assert curve == [{"repetitions": 1, "identifiers": 2, "leaked": 1, "predicted": 1, "cumulative_predicted": 1},
                     {"repetitions": 5, "identifiers": 1, "leaked": 1, "predicted": 2, "cumulative_predicted": 3}]
