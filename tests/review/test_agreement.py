import pytest

from veil.errors import VeilError
from veil.review.agreement import agreement, kappa
from veil.review.session import ReviewSession, reviewed


def test_kappa():
    assert kappa([(True, True), (False, False)]) == (1.0, 1.0)
    po, k = kappa([(True, True), (True, False), (False, False), (False, True)])
    assert po == 0.5 and k == pytest.approx(0.0)
    assert kappa([(True, True)] * 3) == (1.0, None)  # no chance correction possible
    assert kappa([]) == (None, None)


def _tag(s, i, text, label):
    t = s.view(i)["text"]
    s.decide(i, {"action": "missed", "start": t.index(text), "end": t.index(text) + len(text), "label": label})


def test_two_reviewers(corpus):
    original, masked = corpus
    with ReviewSession(masked, original, reviewer="ann") as a:
        _tag(a, 0, "Dunder Mifflin", "ORGANIZATION_NAME")
        _tag(a, 0, "Green", "PERSON_NAME")
        a.decide(0, {"action": "reject", "ph": 1})
        a.decide(1, {"action": "relabel", "ph": 1, "label": "ORGANIZATION_NAME"})
        for i in range(3):
            a.decide(i, {"action": "done"})
    with ReviewSession(masked, original, reviewer="bob") as b:
        _tag(b, 0, "Dunder", "ORGANIZATION_NAME")  # overlaps ann's tag, other boundaries
        _tag(b, 1, "555-0199", "PHONE_NUMBER")
        b.decide(0, {"action": "reject", "ph": 1})
        for i in range(2):
            b.decide(i, {"action": "done"})
    _, docs, sa = reviewed(a.path)
    _, _, sb = reviewed(b.path)
    r = agreement(docs, sa, sb)
    assert r["documents"] == 2  # d3 is done by ann only
    assert r["masks"]["compared"] == 5 and r["masks"]["agreement"] == 1.0 and r["masks"]["kappa"] == 1.0
    assert r["masks"]["same_type"] == pytest.approx(3 / 4)  # ann retyped ABC Trust Fund
    assert (r["missed"]["a"], r["missed"]["b"], r["missed"]["paired"]) == (2, 2, 1)
    assert r["missed"]["f1"] == pytest.approx(0.5) and r["missed"]["same_boundaries"] == 0.0
    assert r["missed"]["same_type"] == 1.0
    assert r["documents_with_missed"]["agreement"] == 0.5  # d1: both found a miss; d2: bob only


def test_nothing_in_common(corpus):
    original, masked = corpus
    with ReviewSession(masked, original, reviewer="ann") as a:
        a.decide(0, {"action": "done"})
    with ReviewSession(masked, original, reviewer="bob") as b:
        b.decide(1, {"action": "done"})
    _, docs, sa = reviewed(a.path)
    with pytest.raises(VeilError, match="done in both"):
        agreement(docs, sa, reviewed(b.path)[2])
