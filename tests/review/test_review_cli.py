"""`veil review`: the served page (a real server in a subprocess), the exports, the agreement report,
and `veil mask --add-terms` / `veil eval-detect --format review` taking what a review exported."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from veil.cli import main
from veil.review.session import ReviewSession

ROOT = Path(__file__).resolve().parents[2]


def _done_review(masked, original, reviewer=None):
    with ReviewSession(masked, original, reviewer=reviewer) as s:
        t = s.view(0)["text"]
        s.decide(0, {"action": "missed", "start": t.index("Green"), "end": t.index("Green") + 5, "label": "PERSON_NAME"})
        s.decide(0, {"action": "reject", "ph": 1})
        for i in range(3):
            s.decide(i, {"action": "done"})
    return s.path


def start_server(args, cwd=ROOT):
    """Start `veil review ARGS` and return (process, url) once it prints its URL."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, "-m", "veil", "review", *args], cwd=cwd, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        line = p.stdout.readline()
        if line.startswith("http://"):
            return p, line.strip()
        if not line and p.poll() is not None:
            raise AssertionError(f"veil review exited: {p.stderr.read()}")
    p.kill()
    raise AssertionError("veil review printed no URL")


def test_served_page_needs_the_token_and_logs_no_text(corpus):
    original, masked = corpus
    p, url = start_server([str(masked), "--original", str(original), "--port", "0"])
    try:
        assert url.startswith("http://127.0.0.1:") and "/?token=" in url
        with urllib.request.urlopen(url, timeout=10) as r:
            assert r.status == 200 and "veil review" in r.read().decode()
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(url.split("?")[0], timeout=10)
        assert e.value.code == 403
        token = url.split("token=")[1]
        req = urllib.request.Request(url.split("/?")[0] + "/api/doc/0", headers={"X-Veil-Token": token})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert "Dunder Mifflin" in json.loads(r.read())["original"]["text"]
    finally:
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    for text in ("Dunder", "Rachel", "Please", token):
        assert text not in err and text not in out


def test_exports_and_the_tools_that_read_them(corpus, tmp_path, capsys):
    original, masked = corpus
    _done_review(masked, original)
    gold = tmp_path / "gold.jsonl"
    assert main(["review", str(masked), "--export", "gold", "-o", str(gold)]) == 0
    assert "veil eval-detect" in capsys.readouterr().out
    assert main(["eval-detect", str(gold), "--format", "review", "--masker", "dlp", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["DIRECT"]["mentions"] == 4 and "type_accuracy" in r  # Rachel, Green, Mark, mk21@abc.com
    terms = tmp_path / "terms.tsv"
    assert main(["review", str(masked), "--export", "terms", "-o", str(terms)]) == 0
    assert "--add-terms" in capsys.readouterr().out
    assert main(["eval-detect", str(gold), "--format", "review", "--masker", "dlp", "--add-terms", str(terms),
                 "--json"]) == 0
    r2 = json.loads(capsys.readouterr().out)
    assert r2["DIRECT"]["mention_recall"] > r["DIRECT"]["mention_recall"]  # Green is masked now
    paper = tmp_path / "paper"
    assert main(["review", str(masked), "--export", "missed", "-o", str(paper)]) == 0
    capsys.readouterr()
    assert main(["audit", "review", "import", str(paper), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == 3
    exclude = tmp_path / "exclude.txt"
    assert main(["review", str(masked), "--export", "exclude", "-o", str(exclude)]) == 0
    assert exclude.read_text() == "Please\n"


def test_mask_add_terms_masks_the_reviewed_misses(corpus, tmp_path, capsys):
    original, masked = corpus
    terms = tmp_path / "terms.tsv"
    terms.write_text("Dunder Mifflin\tORGANIZATION_NAME\nGreen\tPERSON_NAME\n")
    out = tmp_path / "again.jsonl"
    assert main(["mask", str(original), "-o", str(out), "--masker", "dlp", "--add-terms", str(terms), "-q"]) == 0
    first = json.loads(out.read_text().splitlines()[0])
    assert "Dunder" not in first["text"] and "Green" not in first["text"]
    assert "[ORGANIZATION_NAME_1]" in first["text"]
    assert main(["mask", str(original), "-o", str(out), "--masker", "deny_list", "--add-terms", str(terms)]) == 2
    assert "drop deny_list" in capsys.readouterr().err


def test_agreement_report(corpus, capsys):
    original, masked = corpus
    a = _done_review(masked, original, "ann")
    b = _done_review(masked, original, "bob")
    assert main(["review", str(masked), "--agreement", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "keep/reject Cohen's kappa" in out and "ann / bob" in out
    assert main(["review", str(masked), "--agreement", str(a), str(b), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["masks"]["agreement"] == 1.0 and r["missed"]["f1"] == 1.0


def test_usage_errors_are_one_line(corpus, tmp_path, capsys):
    original, masked = corpus
    assert main(["review", str(masked), "--export", "gold"]) == 2
    assert "needs -o" in capsys.readouterr().err
    assert main(["review", str(tmp_path / "none.jsonl")]) == 2
    assert "no such masked file" in capsys.readouterr().err
    assert main(["review", str(masked), "--export", "gold", "-o", str(tmp_path / "g.jsonl")]) == 2
    assert "no such review file" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["gold", "terms", "exclude"])
def test_an_export_never_replaces_an_input_under_any_name(corpus, tmp_path, capsys, kind):
    original, masked = corpus
    review_file = _done_review(masked, original)
    (tmp_path / "sub").mkdir()
    os.link(masked, tmp_path / "hard.jsonl")
    (tmp_path / "link.jsonl").symlink_to(original)
    before = {p: p.read_bytes() for p in (masked, original, review_file)}
    for target in (masked, original, review_file, tmp_path / "sub" / ".." / masked.name, tmp_path / "hard.jsonl",
                   tmp_path / "link.jsonl"):
        for extra in ([], ["--overwrite"]):
            assert main(["review", str(masked), "--export", kind, "-o", str(target), *extra]) == 2, target
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and "Traceback" not in err
    assert {p: p.read_bytes() for p in before} == before


def test_an_export_replaces_only_what_an_export_wrote(corpus, tmp_path, capsys):
    original, masked = corpus
    _done_review(masked, original)
    mine = tmp_path / "notes.txt"
    mine.write_text("my notes\n")
    for extra in ([], ["--overwrite"]):
        assert main(["review", str(masked), "--export", "gold", "-o", str(mine), *extra]) == 2
        assert "not written by veil review" in capsys.readouterr().err
    assert mine.read_text() == "my notes\n"
    gold = tmp_path / "gold.jsonl"
    assert main(["review", str(masked), "--export", "gold", "-o", str(gold)]) == 0
    first = gold.read_bytes()
    assert main(["review", str(masked), "--export", "gold", "-o", str(gold)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(["review", str(masked), "--export", "gold", "-o", str(gold), "--overwrite"]) == 0
    assert gold.read_bytes() == first
    gold.write_text(first.decode() + "{}\n")  # edited by hand since: not what the export wrote any more
    assert main(["review", str(masked), "--export", "gold", "-o", str(gold), "--overwrite"]) == 2
    assert gold.read_text().endswith("{}\n")
    # a folder for --export missed: a foreign one is refused, one it wrote is replaced with --overwrite
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "1.txt").write_text("keep me\n")
    assert main(["review", str(masked), "--export", "missed", "-o", str(foreign), "--overwrite"]) == 2
    assert (foreign / "1.txt").read_text() == "keep me\n"
    paper = tmp_path / "paper"
    assert main(["review", str(masked), "--export", "missed", "-o", str(paper)]) == 0
    assert main(["review", str(masked), "--export", "missed", "-o", str(paper)]) == 2
    (paper / "mine.txt").write_text("x")
    assert main(["review", str(masked), "--export", "missed", "-o", str(paper), "--overwrite"]) == 2
    (paper / "mine.txt").unlink()
    assert main(["review", str(masked), "--export", "missed", "-o", str(paper), "--overwrite"]) == 0


def test_a_dangling_link_at_the_review_file_is_refused(corpus, tmp_path, capsys):
    original, masked = corpus
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    masked.with_name(masked.name + ".review.jsonl").symlink_to(elsewhere / "planted.jsonl")
    assert main(["review", str(masked), "--original", str(original)]) == 2
    err = capsys.readouterr().err
    assert "symbolic link" in err and err.count("\n") == 1
    assert not (elsewhere / "planted.jsonl").exists()


def test_a_second_server_on_one_review_file_is_refused(corpus, tmp_path):
    original, masked = corpus
    p, _ = start_server([str(masked), "--original", str(original), "--port", "0"])
    try:
        review_file = masked.with_name(masked.name + ".review.jsonl")
        os.link(review_file, tmp_path / "hard.jsonl")
        for other in (["--review-file", str(tmp_path / "hard.jsonl")],
                      ["--review-file", os.path.relpath(review_file, ROOT)], []):
            r = subprocess.run([sys.executable, "-m", "veil", "review", str(masked), "--original", str(original),
                                *other], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 2 and "open in another veil review" in r.stderr, r.stderr
            assert r.stderr.count("\n") == 1
    finally:
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=30)


def test_a_served_page_answers_bad_bodies_without_a_traceback(corpus):
    original, masked = corpus
    p, url = start_server([str(masked), "--original", str(original), "--port", "0"])
    token = url.split("token=")[1]
    base = url.split("/?")[0]
    codes = []
    try:
        for body in (b'{"action": "missed", "start": 1e400, "end": 4}', b"[" * 6000 + b"]" * 6000,
                     b'{"action": "undo", "target": "abc"}', b'{"action": "done", "value": "false"}',
                     b"x" * 100_000, b'{"action": "missed", "start": -1000000, "end": 3, "label": "PERSON_NAME"}'):
            req = urllib.request.Request(base + "/api/doc/0", data=body, method="POST",
                                         headers={"X-Veil-Token": token, "Content-Type": "application/json"})
            try:
                urllib.request.urlopen(req, timeout=10)
                codes.append(200)
            except urllib.error.HTTPError as e:
                codes.append(e.code)
                assert "\n" not in json.loads(e.read())["error"]
    finally:
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    assert codes == [400, 400, 400, 400, 413, 400]
    assert "Traceback" not in err and "Error" not in err, err
    assert len(masked.with_name(masked.name + ".review.jsonl").read_text().splitlines()) == 1  # the header only
