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
    with pytest.raises(InputError, match="c.csv:2: missing text field 'body'"):
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
            w._files[0].write(b'{"id": "half-written')  # a batch cut off mid-record
            raise RuntimeError("killed")
    assert not out.exists()
    with ResumableWriter(out, {"s": 1}) as w:
        assert w.done == 3
        for i in range(w.done, 10, 3):
            w.write(recs[i:i + 3])
    assert out.read_bytes() == ref.read_bytes()


def test_writer_refuses_an_unfinished_run_with_other_settings_unless_overwrite(tmp_path):
    out = tmp_path / "o.jsonl"
    with pytest.raises(RuntimeError):
        with ResumableWriter(out, {"s": 1}) as w:
            w.write([{"id": "a", "text": "old"}])
            raise RuntimeError
    with pytest.raises(VeilError, match="unfinished run with other settings.*--overwrite"):
        with ResumableWriter(out, {"s": 2}):
            pass
    with ResumableWriter(out, {"s": 2}, overwrite=True) as w:
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


def test_csv_blank_line_is_an_empty_document_or_a_located_error(tmp_path):
    one = tmp_path / "one.csv"
    one.write_text("text\nfirst\n\nthird\n")
    assert [(d.id, d.text) for d in read_documents(one, fields=Fields(id=None))] == [
        ("1", "first"), ("2", ""), ("3", "third")]  # no id field: the record number
    two = tmp_path / "two.csv"
    two.write_text('id,text\n1,"a\nb"\n\n3,c\n')
    with pytest.raises(InputError, match=r"two.csv:4: an empty line for 2 columns"):
        list(read_documents(two))


@pytest.mark.parametrize("body,message", [
    ('id,text\n1,"multi\nline"\n2\n', r"c.csv:4: 1 cells for 2 columns"),
    ('id,text\n1,a,extra\n', r"c.csv:2: 3 cells for 2 columns"),
    ('\n1,a\n', r"c.csv:1: no header row"),
])
def test_csv_malformed_rows_are_located(tmp_path, body, message):
    p = tmp_path / "c.csv"
    p.write_text(body)
    with pytest.raises(InputError, match=message):
        list(read_documents(p))


def test_parquet_reads_every_row_group_in_order(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = tmp_path / "c.parquet"
    n = 2500
    pq.write_table(pa.table({"id": [f"r{i}" for i in range(n)], "text": [f"t{i}" if i % 7 else "" for i in range(n)],
                             "who": [f"p{i % 3}" for i in range(n)]}), p, row_group_size=1000)
    assert pq.ParquetFile(p).num_row_groups == 3
    docs = list(read_documents(p, fields=Fields(person="who")))
    assert [d.id for d in docs] == [f"r{i}" for i in range(n)] and docs[7].text == "" and docs[5].person == "p2"
    with pytest.raises(InputError, match="missing text field 'body'"):
        next(read_documents(p, fields=Fields(text="body")))


def test_reading_streams_memory_does_not_grow_with_corpus(tmp_path):
    import tracemalloc

    p = tmp_path / "big.jsonl"
    line = json.dumps({"id": 0, "text": "some words of a call " * 10, "extra": {"a": 1}}) + "\n"
    p.write_text(line * 60_000)  # about 14 MB
    tracemalloc.start()
    n = 0
    for batch in iter_batches(read_documents(p), 256):
        n += len(batch)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert n == 60_000
    assert peak < 2_000_000, f"peak {peak} bytes while reading a {p.stat().st_size} byte file"


def test_switchboard_speakers_table_errors(tmp_path):
    (tmp_path / "2005.txt").write_text("A|Okay.|b\n")
    bad = tmp_path / "spk.csv"
    bad.write_text("conv,caller\n2005,A\n")
    with pytest.raises(InputError, match=r"spk.csv:1: a Switchboard speakers table needs the columns"):
        list(read_documents(tmp_path, speakers=bad))
    with pytest.raises(InputError, match="missing.csv: no such file"):
        list(read_documents(tmp_path, speakers=tmp_path / "missing.csv"))
    (tmp_path / "2006.txt").write_text("A|no tag here\n")
    with pytest.raises(InputError, match=r"2006.txt:1: expected 'Speaker\|Utterance\|DA-tag'"):
        list(read_documents(tmp_path))
