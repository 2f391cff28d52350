"""`veil.review.pick`: random and uncertainty-and-coverage picks, deterministic by seed; the scorer is a fake here
(one tagger run checks the real one's shape)."""

import pytest

from veil.errors import VeilError
from veil.review.pick import TaggerScorer, pick_documents


def fake_scorer(table):
    """A scorer reading candidate words from a table: text -> [(word, uncertainty)]."""
    calls = []

    def score(texts):
        calls.append(list(texts))
        return [table.get(t, []) for t in texts]
    score.calls = calls
    return score


TABLE = {
    "a": [("ventura", 0.9), ("ventura", 0.9), ("ventura", 0.9)],  # one word, much uncertainty
    "b": [("ventura", 0.9)],  # nothing new after a
    "c": [("gala", 0.5), ("ridge", 0.5)],  # two new words
    "d": [],
    "e": [("elm", 0.2)],
}


def test_uncertain_prefers_new_words_over_repeats():
    docs = ["a", "b", "c", "d", "e"]
    order = pick_documents(docs, 5, "uncertain", seed=0, scorer=fake_scorer(TABLE))
    assert order[:3] == [0, 2, 4]  # a (sqrt 2.7), c (2 sqrt 0.5), e; b adds little once a is in
    assert order[3] == 1 and order[4] == 3  # b's small gain beats d's none
    # greedy: the first k of n picks are the k picks (nested review sets for a learning curve)
    assert pick_documents(docs, 2, "uncertain", seed=0, scorer=fake_scorer(TABLE)) == order[:2]


def test_a_group_is_scored_as_one_unit():
    calls = [["b", "d"], ["a"], ["c", "e"]]
    sc = fake_scorer(TABLE)
    assert pick_documents(calls, 2, "uncertain", seed=1, scorer=sc) == [2, 1]  # c+e (1.86) before a (1.64)
    assert sc.calls == [["b", "d", "a", "c", "e"]]  # one batch, every utterance


@pytest.mark.parametrize("how", ["random", "uncertain"])
def test_deterministic_by_seed(how):
    docs = [f"t{i}" for i in range(40)]
    table = {t: [] for t in docs}  # uncertain with no candidates: seeded random order
    one = pick_documents(docs, 10, how, seed=7, scorer=fake_scorer(table))
    assert one == pick_documents(docs, 10, how, seed=7, scorer=fake_scorer(table))
    assert one != pick_documents(docs, 10, how, seed=8, scorer=fake_scorer(table))
    assert len(set(one)) == 10
    assert sorted(pick_documents(docs, 99, how, seed=7, scorer=fake_scorer(table))) == list(range(40))


def test_bad_arguments_are_one_line_errors():
    with pytest.raises(VeilError, match="--pick"):
        pick_documents(["a"], 1, "best")
    with pytest.raises(VeilError, match="at least 1"):
        pick_documents(["a"], 0)
    with pytest.raises(VeilError, match="results"):
        pick_documents(["a", "b"], 1, "uncertain", scorer=lambda texts: [[]])


def test_the_tagger_scorer_returns_candidate_words():
    texts = ["yes I would like the pepperoni from dominos on elm street", "thanks bye"]
    got = TaggerScorer()(texts)
    assert len(got) == 2
    for words in got:
        for word, u in words:
            assert word == word.casefold() and 0.1 <= u <= 1.0
