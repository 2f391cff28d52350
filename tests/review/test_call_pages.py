"""A call on one page (`--group-field`, or the group field `veil mask` recorded), decisions still per utterance;
`--sample N --pick random|uncertain` of calls."""

import json

import pytest
from starlette.testclient import TestClient

from veil.cli import main
from veil.errors import VeilError
from veil.io.formats import Fields
from veil.review.app import TOKEN_HEADER, create_app
from veil.review.session import ReviewSession

H = {TOKEN_HEADER: "t"}
CALLS = {  # call -> utterances
    "c1": ["Hi, this is Rachel Green.", "I live on Elm Street.", "Bye Rachel."],
    "c2": ["Mark Lee here, from Scranton.", "My card ends in 4242."],
    "c3": ["Nothing personal here."],
}
ORDER = [(c, k) for c in CALLS for k in range(len(CALLS[c]))]


@pytest.fixture
def calls(tmp_path):
    """(original.jsonl, masked.jsonl) of CALLS, masked by `veil mask --masker dlp --group-field call`."""
    original = tmp_path / "calls.jsonl"
    original.write_text("".join(json.dumps({"id": f"{c}-{k}", "call": c, "text": CALLS[c][k]}) + "\n"
                                for c, k in ORDER))
    masked = tmp_path / "masked.jsonl"
    assert main(["mask", str(original), "-o", str(masked), "--masker", "dlp", "--group-field", "call", "-q"]) == 0
    return original, masked


CALL = Fields(group="call")


def test_a_page_is_a_whole_call_in_order(calls):
    original, masked = calls
    with ReviewSession(masked, original, fields=CALL) as s:
        c = TestClient(create_app(s, "t"))
        summary = c.get("/api/summary", headers=H).json()
        assert summary["grouped"] and summary["total"] == 6
        assert [(p["title"], len(p["docs"])) for p in summary["pages"]] == [("c1", 3), ("c2", 2), ("c3", 1)]
        page = c.get("/api/page/0", headers=H).json()
        assert [d["id"] for d in page["docs"]] == ["c1-0", "c1-1", "c1-2"]
        assert [d["original"]["text"] for d in page["docs"]] == CALLS["c1"]
        # a decision goes to one utterance and is saved at once
        second = page["docs"][1]
        start = second["text"].index("Elm Street")
        r = c.post(f"/api/doc/{second['index']}", headers=H, json={
            "action": "missed", "start": start, "end": start + 10, "label": "STREET_ADDRESS"})
        assert r.status_code == 200 and r.json()["id"] == "c1-1"
        last = json.loads(s.path.read_text().splitlines()[-1])
        assert (last["doc"], last["text"]) == ("c1-1", "Elm Street")
        for d in page["docs"][:2]:
            c.post(f"/api/doc/{d['index']}", headers=H, json={"action": "done", "value": True})
        pages = c.get("/api/summary", headers=H).json()["pages"]
        assert not pages[0]["done"] and pages[0]["touched"]  # one utterance of the call is still open
        c.post(f"/api/doc/{page['docs'][2]['index']}", headers=H, json={"action": "done", "value": True})
        assert c.get("/api/summary", headers=H).json()["pages"][0]["done"]
        assert c.get("/api/page/3", headers=H).status_code == 400


def test_without_groups_a_page_is_a_document(calls):
    original, masked = calls
    with ReviewSession(masked, original) as s:
        summary = s.summary()
        assert not summary["grouped"] and len(summary["pages"]) == 6
        assert [p["title"] for p in summary["pages"]] == [f"{c}-{k}" for c, k in ORDER]
        assert [d["id"] for d in s.page(3)["docs"]] == ["c2-0"]


def test_a_sample_of_calls_keeps_each_call_whole(calls):
    original, masked = calls
    with ReviewSession(masked, original, fields=CALL, sample=2, seed=1) as s:
        ids = [d.masked.id for d in s.docs]
        groups = {i.split("-")[0] for i in ids}
        assert len(groups) == 2 and all(sum(i.startswith(g) for i in ids) == len(CALLS[g]) for g in groups)
        assert len(s.pages) == 2


def fake_scorer(texts):
    """Candidate words: every capitalised word after the first, uncertainty 0.5."""
    return [[(w.strip(".,").lower(), 0.5) for w in t.split()[1:] if w[:1].isupper()] for t in texts]


def test_pick_uncertain_takes_the_calls_with_most_doubt_first_and_resumes(calls):
    original, masked = calls
    with ReviewSession(masked, original, fields=CALL, sample=2, pick="uncertain", scorer=fake_scorer) as s:
        assert [p["title"] for p in s.summary()["pages"]] == ["c1", "c2"]  # c1: rachel, green, elm, street...
        assert s.store.header["pick"] == "uncertain"
    with ReviewSession(masked, fields=CALL) as s:  # resumed from the header: not scored again
        assert [p["title"] for p in s.summary()["pages"]] == ["c1", "c2"]
    with pytest.raises(VeilError, match="--pick uncertain"):
        ReviewSession(masked, original, fields=CALL, sample=2, seed=0)
    with pytest.raises(VeilError, match="--original"):
        ReviewSession(masked, fields=CALL, sample=2, pick="uncertain", scorer=fake_scorer,
                      review_file=masked.with_name("other.review.jsonl"))


def test_the_cli_takes_the_group_field_veil_mask_recorded(calls, capsys, monkeypatch):
    import veil.review.app

    original, masked = calls
    seen = {}

    def serve(session, host, port, on_ready=None):
        seen["pages"] = [p["title"] for p in session.summary()["pages"]]
        on_ready("http://127.0.0.1:1/?token=x")
    monkeypatch.setattr(veil.review.app, "serve", serve)
    assert main(["review", str(masked), "--original", str(original)]) == 0
    assert seen["pages"] == ["c1", "c2", "c3"]
    assert "reviewing 3 calls (6 documents" in capsys.readouterr().out
    assert main(["review", str(masked), "--original", str(original), "--group-field", "",
                 "--reviewer", "flat"]) == 0
    assert len(seen["pages"]) == 6
    # the shipped tagger scores the calls (a real run, a second)
    assert main(["review", str(masked), "--original", str(original), "--sample", "2", "--pick", "uncertain",
                 "--reviewer", "u"]) == 0
    assert len(seen["pages"]) == 2 and seen["pages"][0] == "c1"  # "Elm Street" is the only reading in doubt
    assert main(["review", str(masked), "--pick", "uncertain"]) == 2
    assert "goes with --sample" in capsys.readouterr().err
