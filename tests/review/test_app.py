import json
import logging

import pytest
from starlette.testclient import TestClient

from veil.errors import VeilError
from veil.review.app import TOKEN_HEADER, create_app
from veil.review.session import ReviewSession, review_path

TOKEN = "t0k3n"
H = {TOKEN_HEADER: TOKEN}


@pytest.fixture
def session(corpus):
    original, masked = corpus
    with ReviewSession(masked, original) as s:
        yield s


@pytest.fixture
def client(session):
    return TestClient(create_app(session, TOKEN))


def test_every_route_needs_the_token(client):
    assert client.get("/").status_code == 403
    assert client.get("/?token=wrong").status_code == 403
    assert client.get("/api/summary").status_code == 403
    assert client.get("/api/doc/0", headers={TOKEN_HEADER: "nope"}).status_code == 403
    assert client.post("/api/doc/0", json={"action": "done"}).status_code == 403
    page = client.get(f"/?token={TOKEN}")
    assert page.status_code == 200 and "veil review" in page.text
    assert page.headers["cache-control"] == "no-store" and page.headers["referrer-policy"] == "no-referrer"
    assert client.get("/static/review.js").status_code == 200  # no data in the script: no token
    assert client.get("/static/other.js").status_code == 404


def test_summary_and_document_views(client):
    s = client.get("/api/summary", headers=H).json()
    assert s["total"] == 3 and s["done"] == 0 and s["has_original"]
    assert "PERSON_NAME" in s["labels"] and s["itypes"]["PERSON_NAME"] == "DIRECT"
    v = client.get("/api/doc/1", headers=H).json()
    assert v["id"] == "d2" and [p["label"] for p in v["placeholders"]] == ["PERSON_NAME", "LOCATION", "EMAIL_ADDRESS"]
    orig = v["original"]
    assert [orig["text"][x["start"]:x["end"]] for x in orig["spans"]] == ["Mark", "ABC Trust Fund", "mk21@abc.com"]
    assert client.get("/api/doc/7", headers=H).status_code == 400


def _missed(client, i, text, **kw):
    v = client.get(f"/api/doc/{i}", headers=H).json()
    start = v["text"].index(text)
    return client.post(f"/api/doc/{i}", headers=H, json={"action": "missed", "start": start, "end": start + len(text),
                                                         "label": "PERSON_NAME", "itype": "DIRECT", **kw})


def test_decisions_are_checked_and_saved_at_once(client, session):
    r = _missed(client, 0, " Green ", partial=True)  # edge spaces are trimmed
    assert r.status_code == 200
    assert [(m["label"], m["partial"]) for m in r.json()["missed"]] == [("PERSON_NAME", True)]
    saved = session.path.read_text().splitlines()
    assert json.loads(saved[-1])["text"] == "Green"  # on disk before the answer
    bad = client.post("/api/doc/0", headers=H, json={"action": "missed", "start": 30, "end": 40, "label": "X"})
    assert bad.status_code == 400 and "placeholder" in bad.json()["error"]
    assert _missed(client, 0, "Green").status_code == 400  # overlaps the tag above
    r = client.post("/api/doc/0", headers=H, json={"action": "reject", "ph": 1})
    assert [p["rejected"] for p in r.json()["placeholders"]] == [False, True]
    assert client.post("/api/doc/0", headers=H, json={"action": "reject", "ph": 1}).status_code == 400
    r = client.post("/api/doc/1", headers=H, json={"action": "relabel", "ph": 1, "label": "organization_name"})
    p = r.json()["placeholders"][1]
    assert (p["label"], p["itype"], p["relabeled"]) == ("ORGANIZATION_NAME", "QUASI", True)
    r = client.post("/api/doc/0", headers=H, json={"action": "undo"})  # undoes the reject
    assert not any(p["rejected"] for p in r.json()["placeholders"])
    for body in ({"action": "fly"}, {"action": "reject", "ph": 9}, {"action": "relabel", "ph": 0, "label": "a b"},
                 {"action": "missed", "start": 0, "end": 4, "label": "PERSON_NAME", "itype": "SOMETIMES"}):
        assert client.post("/api/doc/0", headers=H, json=body).status_code == 400
    assert client.post("/api/doc/0", headers=H, content=b"{not json").status_code == 400
    client.post("/api/doc/2", headers=H, json={"action": "done"})
    assert client.get("/api/summary", headers=H).json()["done"] == 1


def test_a_restarted_session_resumes(corpus):
    original, masked = corpus
    with ReviewSession(masked, original, sample=2, seed=3) as s:
        ids = [d.masked.id for d in s.docs]
        c = TestClient(create_app(s, TOKEN))
        c.post("/api/doc/0", headers=H, json={"action": "reject", "ph": 0})
        c.post("/api/doc/0", headers=H, json={"action": "done"})
    with ReviewSession(masked) as s:  # no --original, no --sample: the review file has both
        assert [d.masked.id for d in s.docs] == ids and s.original_path is not None
        v = TestClient(create_app(s, TOKEN)).get("/api/doc/0", headers=H).json()
        assert v["done"] and v["placeholders"][0]["rejected"] and v["original"] is not None
    with pytest.raises(VeilError, match="--sample 2 --seed 3"):
        ReviewSession(masked, sample=2, seed=4)


def test_two_reviewers_two_files(corpus):
    original, masked = corpus
    assert review_path(masked, "ann").name == "masked.jsonl.review-ann.jsonl"
    with pytest.raises(VeilError, match="--reviewer"):
        review_path(masked, "../x")
    with ReviewSession(masked, original, reviewer="ann") as a, ReviewSession(masked, original, reviewer="bob") as b:
        assert a.path != b.path


def test_no_text_reaches_a_log(corpus, caplog):
    original, masked = corpus
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="veil")  # (a CLI test before may have set veil's own level)
    with ReviewSession(masked, original) as s:
        c = TestClient(create_app(s, TOKEN))
        c.get(f"/?token={TOKEN}")
        for i in range(3):
            c.get(f"/api/doc/{i}", headers=H)
        _missed(c, 0, "Dunder Mifflin")
        c.post("/api/doc/0", headers=H, json={"action": "missed", "start": 30, "end": 40, "label": "X"})
    server_side = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith("httpx"))
    assert "took the lock" in server_side  # the capture works (the output lock's debug line)
    for word in ("Dunder", "Rachel", "Mark", "mk21", "555-0199", "Nothing personal", TOKEN):
        assert word not in server_side
