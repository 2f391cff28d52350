import json
import os
from pathlib import Path

import pytest

from veil.errors import InputError, VeilError
from veil.review.store import ReviewStore, fold, read_review_file

HEADER = {"masked_sha256": "abc", "original_sha256": None, "docs": ["a", "b"]}


def test_append_fold_and_undo(tmp_path):
    path = tmp_path / "r.jsonl"
    with ReviewStore(path, HEADER) as s:
        s.append({"doc": "a", "action": "missed", "start": 0, "end": 4, "text": "John", "label": "PERSON_NAME",
                  "itype": "DIRECT"})
        s.append({"doc": "a", "action": "reject", "ph": 1, "key": "X_1"})
        s.append({"doc": "a", "action": "relabel", "ph": 0, "label": "LOCATION", "itype": "QUASI"})
        s.append({"doc": "a", "action": "undo", "target": 2})
        s.append({"doc": "b", "action": "done", "value": True})
        st = s.state()
    assert list(st["a"].missed) == [1] and st["a"].missed[1].text == "John"
    assert st["a"].rejected == {} and st["a"].relabeled[0][:2] == ("LOCATION", "QUASI")
    assert not st["a"].done and st["b"].done
    header, decisions = read_review_file(path)
    assert header["docs"] == ["a", "b"] and [d["n"] for d in decisions] == [1, 2, 3, 4, 5]


def test_restart_resumes_and_drops_a_torn_last_line(tmp_path, caplog):
    path = tmp_path / "r.jsonl"
    with ReviewStore(path, HEADER) as s:
        s.append({"doc": "a", "action": "done", "value": True})
    with open(path, "ab") as f:  # a crash in the middle of a write
        f.write(b'{"n": 2, "doc": "a", "act')
    with ReviewStore(path, HEADER) as s:
        assert s.state()["a"].done
        s.append({"doc": "b", "action": "done", "value": True})
    assert "unfinished last line" in caplog.text
    lines = path.read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(x) for x in lines)
    assert fold(read_review_file(path)[1])["b"].done


def test_another_sample_or_masked_file_is_refused(tmp_path):
    path = tmp_path / "r.jsonl"
    with ReviewStore(path, HEADER):
        pass
    with pytest.raises(VeilError, match="another sample"):
        with ReviewStore(path, {**HEADER, "docs": ["a"]}):
            pass
    with pytest.raises(VeilError, match="another masked file"):
        with ReviewStore(path, {**HEADER, "masked_sha256": "zzz"}):
            pass


def test_a_second_writer_is_refused_under_any_name(tmp_path, monkeypatch):
    path = tmp_path / "r.jsonl"
    with ReviewStore(path, HEADER):
        pass
    os.link(path, tmp_path / "hard.jsonl")
    (tmp_path / "dirlink").symlink_to(tmp_path)
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    with ReviewStore(path, HEADER) as first:
        first.append({"doc": "a", "action": "done", "value": True})
        for other in (path, tmp_path / "hard.jsonl", Path("../r.jsonl"), Path("../sub/../r.jsonl"),
                      tmp_path / "dirlink" / "r.jsonl"):
            with pytest.raises(VeilError, match="open in another veil review") as e:
                with ReviewStore(other, HEADER):
                    pass
            assert "\n" not in str(e.value)
        first.append({"doc": "a", "action": "done", "value": False})
    assert [d["n"] for d in read_review_file(path)[1]] == [1, 2]


def test_links_are_refused_never_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "dangling.jsonl").symlink_to(outside / "planted.jsonl")
    with pytest.raises(VeilError, match="symbolic link"):
        with ReviewStore(tmp_path / "dangling.jsonl", HEADER):
            pass
    assert not (outside / "planted.jsonl").exists()
    with ReviewStore(tmp_path / "r.jsonl", HEADER):
        pass
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "r.jsonl")
    with pytest.raises(VeilError, match="symbolic link"):
        with ReviewStore(tmp_path / "link.jsonl", HEADER):
            pass


def test_numbers_never_repeat_and_one_undo_cancels_one_decision(tmp_path):
    path = tmp_path / "r.jsonl"
    with ReviewStore(path, HEADER) as s:
        s.append({"doc": "a", "action": "reject", "ph": 0, "key": "K"})
    with open(path, "a") as f:  # what two servers sharing one file used to write: number 1 twice
        f.write(json.dumps({"n": 1, "doc": "a", "action": "reject", "ph": 1, "key": "K"}) + "\n")
    with ReviewStore(path, HEADER) as s:
        rec = s.append({"doc": "a", "action": "undo", "target": 1})
        assert rec["n"] == 2
        st = s.state()["a"]
    assert st.rejected == {0: 1}  # the latest decision 1 is undone, not both


@pytest.mark.parametrize("line, why", [
    ({"n": 1, "doc": "a", "action": "missed", "start": 0.5, "end": 4, "text": "J", "label": "X", "itype": "DIRECT"},
     "bad start"),
    ({"n": 1, "doc": "a", "action": "done", "value": "false"}, "bad value"),
    ({"n": 1, "doc": "a", "action": "undo", "target": "abc"}, "bad target"),
    ({"n": "1", "doc": "a", "action": "done", "value": True}, "not a review decision"),
    ({"n": 1, "doc": 5, "action": "done", "value": True}, "not a review decision"),
])
def test_a_file_with_bad_values_is_refused_with_its_line(tmp_path, line, why):
    path = tmp_path / "r.jsonl"
    with ReviewStore(path, HEADER):
        pass
    with open(path, "a") as f:
        f.write(json.dumps(line) + "\n")
    with pytest.raises(InputError, match=f"r.jsonl:2: .*{why}"):
        read_review_file(path)


def test_bad_lines_are_located(tmp_path):
    path = tmp_path / "r.jsonl"
    with ReviewStore(path, HEADER):
        pass
    with open(path, "a") as f:
        f.write('{"n": 1, "doc": "a", "action": "reject"}\n')
    with pytest.raises(InputError, match=r"r.jsonl:2: reject decision without ph"):
        read_review_file(path)
    (tmp_path / "x.jsonl").write_text('{"hello": 1}\n')
    with pytest.raises(InputError, match="not a veil review file"):
        read_review_file(tmp_path / "x.jsonl")
