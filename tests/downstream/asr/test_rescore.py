"""ASR evaluation stage: n-best rescoring math, the lambda / beta grid search, and corpus WER."""

from __future__ import annotations

import pytest

from veil.downstream.asr import rescore
from veil.downstream.asr.rescore import NBest
from veil.errors import VeilError


def test_word_errors_counts_substitutions_deletions_insertions():
    assert rescore.word_errors("a b c d", "a x c d") == (1, 4)
    assert rescore.word_errors("a b c d", "a c d") == (1, 4)
    assert rescore.word_errors("a b c d", "a b c d e f") == (2, 4)
    assert rescore.word_errors("a b", "") == (2, 2)
    assert rescore.word_errors("", "a b") == (2, 0)


def test_corpus_wer_sums_errors_over_reference_words():
    lists = [NBest([-1.0, -2.0], [2, 2], [1, 0], 2), NBest([-1.0, -3.0], [3, 3], [0, 2], 8)]
    assert rescore.first_best_wer(lists) == pytest.approx(100 * 1 / 10)
    assert rescore.oracle_wer(lists) == 0.0
    assert rescore.wer(lists, [1, 1]) == pytest.approx(100 * 2 / 10)


def test_fused_score_is_asr_plus_lambda_lm_plus_beta_words():
    nb = NBest(asr=[-1.0, -1.5, -3.0], words=[3, 4, 6], errors=[1, 0, 2], ref_words=4)
    lm = [-20.0, -12.0, -30.0]
    assert rescore.choose(nb, lm, 0.0, 0.0) == 0  # the recogniser alone
    assert rescore.choose(nb, lm, 0.1, 0.0) == 1  # -1 - 2 = -3  <  -1.5 - 1.2 = -2.7
    assert rescore.choose(nb, None, 0.0, 1.0) == 2  # -3 + 6 beats -1 + 3 and -1.5 + 4
    assert rescore.choose(nb, lm, 0.1, 0.2) == 1
    tie = NBest(asr=[-1.0, -1.0], words=[2, 2], errors=[0, 1], ref_words=2)
    assert rescore.choose(tie, [-5.0, -5.0], 1.0, 0.0) == 0  # ties keep the beam's order


def test_tune_finds_the_weights_that_let_the_lm_fix_errors():
    # the recogniser prefers a wrong hypothesis; the LM knows better; beta matters only in one list
    lists = [NBest([-1.0, -1.2], [4, 4], [1, 0], 4), NBest([-2.0, -2.1], [5, 5], [2, 0], 5),
             NBest([-1.0, -1.4], [3, 4], [1, 0], 4)]
    lm = [[-10.0, -8.0], [-9.0, -6.0], [-12.0, -12.0]]
    lam, beta, w = rescore.tune(lists, lm, [0.0, 0.05, 0.5, 1.0], [0.0, 0.5, 1.0])
    assert (lam, beta) == (0.5, 0.5) and w == 0.0  # first grid point reaching 0 errors
    assert rescore.rescored_wer(lists, lm, 0.0, 0.0) == pytest.approx(100 * 4 / 13)


def test_tune_needs_one_lm_score_per_hypothesis():
    with pytest.raises(VeilError):
        rescore.tune([NBest([-1.0, -2.0], [1, 1], [0, 1], 1)], [[-1.0]], [0.0], [0.0])
    with pytest.raises(VeilError):
        NBest([], [], [], 3)


def test_paired_interval_orders_only_what_the_test_set_can_tell_apart():
    lists = [NBest([-1.0, -2.0], [5, 5], [2, 0], 5) for _ in range(40)]
    worse, better = [0] * 40, [1] * 40
    lo, hi = rescore.paired_interval(lists, worse, better)
    assert lo == pytest.approx(40.0) and hi == pytest.approx(40.0)  # every utterance differs by 2 of 5 words
    assert rescore.paired_interval(lists, better, better) == (0.0, 0.0)
    # one utterance in forty differs: a resample often leaves it out, so the interval holds 0
    lo, hi = rescore.paired_interval(lists, [0] + [1] * 39, better)
    assert lo == 0.0 < hi
    assert rescore.paired_interval(lists, [0] + [1] * 39, better, seed=3) == \
        rescore.paired_interval(lists, [0] + [1] * 39, better, seed=3)
    with pytest.raises(VeilError):
        rescore.paired_interval(lists, worse, better[:3])


def test_picks_of_is_what_rescored_wer_scores():
    lists = [NBest([-1.0, -1.2], [4, 4], [1, 0], 4), NBest([-2.0, -2.1], [5, 5], [2, 0], 5)]
    lm = [[-10.0, -8.0], [-9.0, -6.0]]
    picks = rescore.picks_of(lists, lm, 0.5, 0.0)
    assert picks == [1, 1] and rescore.wer(lists, picks) == rescore.rescored_wer(lists, lm, 0.5, 0.0)
