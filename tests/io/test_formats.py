import json

import pytest

from veil.errors import InputError, VeilError
from veil.io.formats import Fields, detect_format, iter_batches, read_documents
from veil.io.output import ResumableWriter


def test_txt_keeps_empty_lines_and_numbers_ids(tmp_path):
    p = tmp_path / "c.txt"
    p.write_bytes(b"first\n\nthird\r\nlast-without-newline")
    docs = list(read_documents(p))
    assert [(d.id, d.text) for d in docs] == [("1", "first"), ("2", ""), ("3", "third"), ("4", "last-without-newline")]


def test_broken_utf8_names_file_and_line(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_bytes(b"ok\nbad \xff byte\n")
    with pytest.raises(InputError, match=r"bad.txt:2: invalid UTF-8"):
        list(read_documents(p))


@pytest.mark.parametrize("name", ["e.txt", "e.jsonl", "e.csv"])
def test_empty_file_is_a_clear_error(tmp_path, name):
    p = tmp_path / name
    p.write_bytes(b"")
    with pytest.raises(InputError, match="empty file"):
        list(read_documents(p))


def test_jsonl_fields_meta_and_errors(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text('{"id": 7, "body": "hi", "who": "p1", "extra": [1]}\n{"id": 8, "body": "yo", "who": null}\n')
    docs = list(read_documents(p, fields=Fields(text="body", person="who")))
    assert (docs[0].id, docs[0].text, docs[0].person, docs[0].meta) == ("7", "hi", "p1", {"extra": [1]})
    assert docs[1].person is None
    with pytest.raises(InputError, match=r"c.jsonl:1: missing text field 'text'"):
        list(read_documents(p))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "text": "a"}\n{"id": 2, "text": \n')
    with pytest.raises(InputError, match=r"bad.jsonl:2: invalid JSON"):
        list(read_documents(bad))
    blank = tmp_path / "blank.jsonl"
    blank.write_text('{"id": 1, "text": "a"}\n\n')
    with pytest.raises(InputError, match=r"blank.jsonl:2: empty line"):
        list(read_documents(blank))


def test_csv_reads_quoted_multiline_and_reports_missing_column(tmp_path):
    p = tmp_path / "c.csv"
    p.write_text('id,text,who\n1,"hello, world",a\n2,"two\nlines",b\n')
    docs = list(read_documents(p, fields=Fields(person="who")))
    assert [(d.id, d.text, d.person) for d in docs] == [("1", "hello, world", "a"), ("2", "two\nlines", "b")]
    with pytest.raises(InputError, match="missing text column 'body'"):
        list(read_documents(p, fields=Fields(text="body")))


def test_huge_line_is_read_whole(tmp_path):
    big = "word " * 1_000_000  # 5 MB on one line
    p = tmp_path / "big.jsonl"
    p.write_text(json.dumps({"id": "x", "text": big}) + "\n" + json.dumps({"id": "y", "text": "small"}) + "\n")
    docs = list(read_documents(p))
    assert len(docs) == 2 and docs[0].text == big


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_writer_round_trip(tmp_path, fmt):
    out = tmp_path / f"o.{fmt}"
    recs = [{"id": str(i), "text": f"text {i}, with comma", "person": f"p{i % 2}"} for i in range(5)]
    with ResumableWriter(out, {"x": 1}, fmt=fmt) as w:
        w.write(recs[:2])
        w.write(recs[2:])
    docs = list(read_documents(out, fields=Fields(person="person")))
    assert [(d.id, d.text, d.person) for d in docs] == [(r["id"], r["text"], r["person"]) for r in recs]
    assert not list(tmp_path.glob("*.partial")) and not list(tmp_path.glob("*.progress.json"))


def test_writer_resumes_after_interruption_byte_identical(tmp_path):
    recs = [{"id": str(i), "text": "x" * i} for i in range(10)]
    ref = tmp_path / "ref.jsonl"
    with ResumableWriter(ref, {"s": 1}) as w:
        for i in range(0, 10, 3):
            w.write(recs[i:i + 3])
    out = tmp_path / "out.jsonl"
    with pytest.raises(RuntimeError):
        with ResumableWriter(out, {"s": 1}) as w:
            w.write(recs[:3])
            w._f.write(b'{"id": "half-written')  # a batch cut off mid-record
            raise RuntimeError("killed")
    assert not out.exists()
    with ResumableWriter(out, {"s": 1}) as w:
        assert w.done == 3
        for i in range(w.done, 10, 3):
            w.write(recs[i:i + 3])
    assert out.read_bytes() == ref.read_bytes()


def test_writer_restarts_when_settings_change(tmp_path):
    out = tmp_path / "o.jsonl"
    with pytest.raises(RuntimeError):
        with ResumableWriter(out, {"s": 1}) as w:
            w.write([{"id": "a", "text": "old"}])
            raise RuntimeError
    with ResumableWriter(out, {"s": 2}) as w:
        assert w.done == 0
        w.write([{"id": "b", "text": "new"}])
    assert [d.id for d in read_documents(out)] == ["b"]


def test_txt_writer_refuses_line_breaks(tmp_path):
    with pytest.raises(VeilError, match="line break"):
        with ResumableWriter(tmp_path / "o.txt", {}, fmt="txt") as w:
            w.write([{"id": "1", "text": "a\nb"}])


def test_detect_format_and_batches(tmp_path):
    assert detect_format("a.JSONL") == "jsonl" and detect_format(tmp_path) == "switchboard"
    with pytest.raises(VeilError):
        detect_format("a.docx")
    assert [len(b) for b in iter_batches(iter(range(7)), 3)] == [3, 3, 1]


def test_switchboard_reader_maps_callers(tmp_path):
    (tmp_path / "train").mkdir()
    (tmp_path / "speakers").mkdir()
    (tmp_path / "train" / "2005.txt").write_text("A|Okay.|b\nB|My name is Sam | really.|sd\n")
    (tmp_path / "speakers" / "call_con_tab.csv").write_text("id_conv,id_caller,id_speaker\n2005,A,1001\n2005,B,1002\n")
    docs = list(read_documents(tmp_path / "train"))
    assert [(d.id, d.text, d.person, d.group) for d in docs] == [
        ("2005:A:1", "Okay.", "1001", "2005"), ("2005:B:2", "My name is Sam | really.", "1002", "2005")]
    assert docs[1].meta == {"speaker": "B", "da_tag": "sd"}


def test_real_switchboard_has_callers(shared_data):
    docs = list(iter_batches(read_documents(shared_data / "switchboard" / "val"), 100000))[0]
    assert len(docs) > 1000 and all(d.person for d in docs)
