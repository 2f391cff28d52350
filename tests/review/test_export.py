import json

import pytest
from starlette.testclient import TestClient

from veil.audit.review import import_reviews
from veil.errors import VeilError
from veil.mask.deny_list import DenyListMasker
from veil.mask.evaluate import evaluate
from veil.mask.gold import read_gold
from veil.review import export
from veil.review.app import TOKEN_HEADER, create_app
from veil.review.session import ReviewSession, reviewed
from veil.types import Span

H = {TOKEN_HEADER: "t"}


def review(masked, original, **kw):
    """A reviewer's work on the corpus of conftest: d1 and d2 reviewed and done, d3 left open."""
    with ReviewSession(masked, original, **kw) as s:
        c = TestClient(create_app(s, "t"))

        def missed(i, text, label, itype="DIRECT", partial=False):
            t = c.get(f"/api/doc/{i}", headers=H).json()["text"]
            r = c.post(f"/api/doc/{i}", headers=H, json={"action": "missed", "start": t.index(text),
                                                         "end": t.index(text) + len(text), "label": label,
                                                         "itype": itype, "partial": partial})
            assert r.status_code == 200, r.json()

        missed(0, "Dunder Mifflin", "ORGANIZATION_NAME", "QUASI")
        missed(0, "Green", "PERSON_NAME", partial=True)
        c.post("/api/doc/0", headers=H, json={"action": "reject", "ph": 1})  # "Please"
        c.post("/api/doc/0", headers=H, json={"action": "done"})
        missed(1, "555-0199", "PHONE_NUMBER")
        c.post("/api/doc/1", headers=H, json={"action": "relabel", "ph": 1, "label": "ORGANIZATION_NAME"})
        c.post("/api/doc/1", headers=H, json={"action": "done"})
        return s.path


def test_gold_export_is_scored_by_eval_detect(corpus, tmp_path):
    original, masked = corpus
    path = review(masked, original)
    header, docs, states = reviewed(path)
    counts = export.export_gold(tmp_path / "gold.jsonl", docs, states)
    assert counts == {"documents": 2, "spans": 7, "missed": 3, "rejected": 1}
    golds = read_gold(tmp_path / "gold.jsonl", "review")
    g1 = golds[0]
    assert [(g1.doc.text[g.start:g.end], g.label, g.identifier_type) for g in g1.spans] == [
        ("Dunder Mifflin", "ORGANIZATION_NAME", "QUASI"), ("Rachel", "PERSON_NAME", "DIRECT"),
        ("Green", "PERSON_NAME", "DIRECT")]
    rec = json.loads((tmp_path / "gold.jsonl").read_text().splitlines()[0])
    assert [rec["text"][r["start"]:r["end"]] for r in rec["rejected"]] == ["Please"]
    # the masking as it was: masks kept by the reviewer are hits, misses are misses, "Please" costs precision
    as_masked = []
    for gd in golds:
        d = next(x for x in docs if x.masked.id == gd.doc.id)
        as_masked.append([Span(s, e, p.label, "m") for (s, e), p in zip(d.alignment.spans, d.masked.placeholders)])
    r = evaluate(golds, as_masked, "review")
    assert r["DIRECT"]["mentions"] == 5 and r["DIRECT"]["mention_recall"] == pytest.approx(3 / 5)
    assert r["QUASI"]["mention_recall"] == pytest.approx(1 / 2)  # ABC Trust Fund masked, Dunder Mifflin missed
    assert r["precision"] < 1.0
    assert r["type_accuracy"] == pytest.approx(3 / 4)  # ABC Trust Fund was masked as a LOCATION
    # a perfect masking
    perfect = [[Span(g.start, g.end, g.label, "m") for g in gd.spans] for gd in golds]
    r = evaluate(golds, perfect, "review")
    assert r["DIRECT"]["mention_recall"] == 1.0 and r["precision"] == 1.0 and r["type_accuracy"] == 1.0


def test_gold_needs_the_original(corpus, tmp_path):
    original, masked = corpus
    path = review(masked, None, review_file=tmp_path / "r.jsonl")
    _, docs, states = reviewed(path)
    with pytest.raises(VeilError, match="--original"):
        export.export_gold(tmp_path / "gold.jsonl", docs, states)
    _, docs, states = reviewed(path, original=original)  # given at export time
    assert export.export_gold(tmp_path / "gold.jsonl", docs, states)["documents"] == 2


def test_missed_export_is_scored_by_audit_review_import(corpus, tmp_path):
    original, masked = corpus
    header, docs, states = reviewed(review(masked, original))
    res = export.export_missed(tmp_path / "paper", docs, states, header)
    assert res["documents"] == 2 and res["unscored"] == {}
    body = (tmp_path / "paper" / "1.txt").read_text()
    assert "(Dunder Mifflin)[MISSED_ORGANIZATION_NAME_SPEAKER]" in body
    assert "(Green)[MISSED_PERSON_NAME_PARTIAL]" in body
    assert "(555-0199)[MISSED_PHONE]" in (tmp_path / "paper" / "2.txt").read_text()
    risks = import_reviews(tmp_path / "paper")
    assert [(r.doc_id, r.score) for r in risks] == [("d1", 2 + 3), ("d2", 4)]
    with pytest.raises(VeilError, match="already holds"):
        export.export_missed(tmp_path / "paper", docs, states, header)


def test_unscored_types_are_counted_not_annotated(corpus, tmp_path):
    original, masked = corpus
    with ReviewSession(masked, original) as s:
        t = s.view(2)["text"]
        s.decide(2, {"action": "missed", "start": 0, "end": 7, "label": "NATIONALITY", "itype": "QUASI"})
        s.decide(2, {"action": "done"})
    header, docs, states = reviewed(s.path)
    res = export.export_missed(tmp_path / "p", docs, states, header)
    assert res["unscored"] == {"NATIONALITY": 1} and "MISSED" not in (tmp_path / "p" / "1.txt").read_text()
    res = export.export_missed(tmp_path / "q", docs, states, header, type_map={"NATIONALITY": "LOCATION"})
    assert (tmp_path / "q" / "1.txt").read_text().startswith(f"({t[:7]})[MISSED_LOCATION]")


def test_terms_feed_the_deny_list_masker_and_exclusions_the_never_mask_list(corpus, tmp_path):
    original, masked = corpus
    _, docs, states = reviewed(review(masked, original))
    assert export.export_terms(tmp_path / "terms.tsv", docs, states) == 3
    m = DenyListMasker(terms_file=tmp_path / "terms.tsv")
    text = "dunder  mifflin called; Green and 555-0199 again"
    assert [(text[s.start:s.end], s.label) for s in m.detect(text)] == [
        ("dunder  mifflin", "ORGANIZATION_NAME"), ("Green", "PERSON_NAME"), ("555-0199", "PHONE_NUMBER")]
    assert export.export_exclude(tmp_path / "exclude.txt", docs, states) == 1
    assert (tmp_path / "exclude.txt").read_text() == "Please\n"


def test_nothing_done_is_an_error(corpus, tmp_path):
    original, masked = corpus
    with ReviewSession(masked, original):
        pass
    _, docs, states = reviewed(masked.with_name(masked.name + ".review.jsonl"))
    with pytest.raises(VeilError, match="marked done"):
        export.export_terms(tmp_path / "t.tsv", docs, states)
