import json

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


def test_a_second_writer_is_refused(tmp_path):
    path = tmp_path / "r.jsonl"
    with ReviewStore(path, HEADER):
        with pytest.raises(VeilError, match="being written"):
            with ReviewStore(path, HEADER):
                pass


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
