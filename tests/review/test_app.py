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


BAD_DECISIONS = [
    ({"action": "missed", "start": -1000000, "end": 4, "label": "PERSON_NAME"}, "start and end"),
    ({"action": "missed", "start": 0, "end": 10 ** 9, "label": "PERSON_NAME"}, "start and end"),
    ({"action": "missed", "start": 0.5, "end": 4, "label": "PERSON_NAME"}, "integer 'start'"),
    ({"action": "missed", "start": "0", "end": 4, "label": "PERSON_NAME"}, "integer 'start'"),
    ({"action": "missed", "start": True, "end": 4, "label": "PERSON_NAME"}, "integer 'start'"),
    ({"action": "missed", "end": 4, "label": "PERSON_NAME"}, "integer 'start'"),
    ({"action": "missed", "start": 0, "end": 6, "label": ["PERSON_NAME"]}, "type"),
    ({"action": "missed", "start": 0, "end": 6, "label": "PERSON_NAME", "itype": 3}, "identifier type"),
    ({"action": "missed", "start": 0, "end": 6, "label": "PERSON_NAME", "partial": "yes"}, "'partial'"),
    ({"action": "undo", "target": "abc"}, "integer 'target'"),
    ({"action": "undo", "target": 99}, "not in force"),
    ({"action": "done", "value": "false"}, "'value' must be true or false"),
    ({"action": "done", "value": 0}, "'value' must be true or false"),
    ({"action": "reject"}, "integer 'ph'"),
    ({"action": "reject", "ph": 1e3}, "integer 'ph'"),
    ({"action": ["missed"]}, "needs an action"),
    ({}, "needs an action"),
]


@pytest.mark.parametrize("body, why", BAD_DECISIONS)
def test_malformed_decisions_are_400_with_one_line(client, session, body, why, capfd):
    before = session.path.read_bytes()
    r = client.post("/api/doc/0", headers=H, json=body)
    assert r.status_code == 400, r.text
    assert why in r.json()["error"] and "\n" not in r.json()["error"]
    assert session.path.read_bytes() == before  # nothing written
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize("raw, status", [
    (b'{"action": "missed", "start": 1e400, "end": 4, "label": "PERSON_NAME"}', 400),  # inf: not an integer
    (b'{"action": "missed", "start": NaN, "end": 4}', 400),
    (b"[" * 100_000 + b"]" * 100_000, 413),
    (b"[" * 5000 + b"]" * 5000, 400),  # deep nesting, small enough to be read
    (b'{"action": "done", "value": true, "x": "' + b"a" * 20000 + b'"}', 413),
    (b'{"action": "undo", "target": ' + b"9" * 5000 + b"}", 400),  # past Python's integer digit limit
    (b"\xff\xfe", 400),
    (b"[1, 2]", 400),
])
def test_bodies_that_are_not_decisions(client, session, raw, status, capfd):
    before = session.path.read_bytes()
    r = client.post("/api/doc/0", headers={**H, "Content-Type": "application/json"}, content=raw)
    assert r.status_code == status, r.text
    assert "\n" not in r.json()["error"]
    assert session.path.read_bytes() == before
    assert "Traceback" not in capfd.readouterr().err


def test_a_bug_is_a_500_naming_its_type_only(client, session, monkeypatch, caplog):
    def broken(index, req):
        raise KeyError("Rachel Green")
    monkeypatch.setattr(session, "decide", broken)
    r = client.post("/api/doc/0", headers=H, json={"action": "done", "value": True})
    assert r.status_code == 500 and "KeyError" in r.json()["error"] and "Rachel" not in r.text
    assert "Rachel" not in caplog.text and "KeyError" in caplog.text
    assert client.get("/api/doc/" + "9" * 5000, headers=H).status_code in (400, 404, 500)  # no traceback either


def test_the_value_false_as_a_string_does_not_mark_done(client, session):
    client.post("/api/doc/0", headers=H, json={"action": "done", "value": "false"})
    assert not session.view(0)["done"]
    client.post("/api/doc/0", headers=H, json={"action": "done", "value": True})
    client.post("/api/doc/0", headers=H, json={"action": "done", "value": False})
    assert not session.view(0)["done"]
