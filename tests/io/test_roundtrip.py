"""Issue 32 item 10: every format writes back what it read, or refuses it before the work.

A duplicate CSV column name lost a column; CRLF inside a quoted CSV cell became LF; NaN / Infinity
were written into JSONL (invalid JSON); Parquet timestamp, date, binary and decimal columns crashed
``veil mask`` with a traceback after the models loaded.
"""

import datetime
import decimal
import json
import math

import pytest

from tests.io.test_hardening import NameMasker, _jsonl, _mask, fakes  # noqa: F401  (fakes: autouse)
from veil.cli import main
from veil.io.formats import iter_records


def _one_line(err: str) -> str:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def test_a_duplicate_csv_column_name_is_refused_before_the_work(tmp_path, capsys):
    src = tmp_path / "in.csv"
    src.write_text("id,text,note,note\n1,hello Anna,a,b\n")
    assert _mask(src, "-o", tmp_path / "o.csv") == 2
    assert "in.csv:1: column 'note' appears twice" in _one_line(capsys.readouterr().err)
    assert NameMasker.built == 0 and not (tmp_path / "o.csv").exists()


def test_a_duplicate_jsonl_key_is_refused(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": 1, "text": "hello Anna"}\n{"id": 2, "text": "hi Bob", "text": "bye Bob"}\n')
    assert _mask(src, "-o", tmp_path / "o.jsonl") == 2
    assert "in.jsonl:2: field 'text' appears twice" in _one_line(capsys.readouterr().err)


def test_a_duplicate_parquet_column_name_is_refused(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(["hello Anna"]), pa.array(["a"]), pa.array(["b"])],
                                        names=["text", "x", "x"]), src)
    assert _mask(src, "-o", tmp_path / "o.parquet") == 2
    assert "column 'x' appears twice" in _one_line(capsys.readouterr().err)
    assert NameMasker.built == 0


@pytest.mark.parametrize("ext", ["csv", "jsonl", "parquet"])
def test_crlf_inside_a_quoted_csv_cell_is_kept_through_mask_and_fill(tmp_path, ext):
    src = tmp_path / "in.csv"
    src.write_bytes(b'id,text\r\n1,"first line\r\nsecond line, Anna"\r\n2,"only\nLF, Bob"\r\n')
    assert [r["text"] for _, r in iter_records(src, "csv")] == ["first line\r\nsecond line, Anna", "only\nLF, Bob"]
    masked, filled = tmp_path / f"m.{ext}", tmp_path / f"f.{ext}"
    assert _mask(src, "-o", masked) == 0
    assert main(["fill", str(masked), "-o", str(filled), "--filler", "faker", "--no-progress"]) == 0
    texts = [r["text"] for _, r in iter_records(filled, ext)]
    assert texts[0].startswith("first line\r\nsecond line, ") and "Anna" not in texts[0]
    assert texts[1].startswith("only\nLF, ") and "\r" not in texts[1]


def test_nan_in_jsonl_input_is_refused_with_its_line(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": 1, "text": "hi Anna", "score": 0.5}\n{"id": 2, "text": "hi Bob", "score": NaN}\n')
    assert _mask(src, "-o", tmp_path / "o.jsonl") == 2
    assert "in.jsonl:2: NaN is not valid JSON" in _one_line(capsys.readouterr().err)
    assert NameMasker.built == 0


def _parquet_with_floats(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": ["1", "2", "3"], "text": ["hi Anna", "hi Bob", "hi Eve"],
                             "score": [0.5, float("nan"), float("inf")]}), src)
    return src


def test_nan_and_infinity_are_never_written_into_jsonl(tmp_path, capsys):
    src, out = _parquet_with_floats(tmp_path), tmp_path / "o.jsonl"
    assert _mask(src, "-o", out) == 2
    err = _one_line(capsys.readouterr().err)
    assert "record '2': field(s) 'score' hold NaN or Infinity, which JSON cannot carry" in err
    assert not out.exists()
    for p in tmp_path.iterdir():  # nothing veil left behind holds a bare NaN either
        if p.name.startswith("o.jsonl") and p.suffix != ".lock":
            assert "NaN" not in p.read_text()


def test_nan_and_infinity_go_through_to_parquet_losslessly(tmp_path):
    import pyarrow.parquet as pq

    src, out = _parquet_with_floats(tmp_path), tmp_path / "o.parquet"
    assert _mask(src, "-o", out) == 0
    scores = pq.read_table(out).column("score").to_pylist()
    assert scores[0] == 0.5 and math.isnan(scores[1]) and scores[2] == float("inf")


def _parquet_with_types(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({
        "id": ["1", "2"], "text": ["hi Anna", "hi Bob"],
        "when": pa.array([datetime.datetime(2020, 1, 2, 3, 4, 5), None], pa.timestamp("us")),
        "day": pa.array([datetime.date(2020, 1, 2), datetime.date(2021, 2, 3)], pa.date32()),
        "blob": pa.array([b"\x00\x01", b"\xff"], pa.binary()),
        "amount": pa.array([decimal.Decimal("1.10"), decimal.Decimal("2.00")], pa.decimal128(5, 2)),
        "tags": pa.array([["a"], []], pa.list_(pa.string())),
    }), src)
    return src


@pytest.mark.parametrize("command", ["mask", "fill"])
def test_parquet_dates_binary_and_decimals_are_refused_before_any_model_loads(tmp_path, capsys, command):
    src = _parquet_with_types(tmp_path)
    args = ["--masker", "names"] if command == "mask" else ["--filler", "faker"]
    assert main([command, str(src), "-o", str(tmp_path / "o.parquet"), "--no-progress", *args]) == 2
    err = _one_line(capsys.readouterr().err)
    for col in ("when (timestamp[us])", "day (date32[day])", "blob (binary)", "amount (decimal128(5, 2))"):
        assert col in err
    assert "tags" not in err and "--drop-field" in err
    assert NameMasker.built == 0 and not (tmp_path / "o.parquet").exists()


def test_dropped_parquet_columns_are_not_refused(tmp_path):
    import pyarrow.parquet as pq

    src, out = _parquet_with_types(tmp_path), tmp_path / "o.parquet"
    assert _mask(src, "-o", out, "--drop-field", "when", "day", "blob", "amount") == 0
    table = pq.read_table(out)
    assert table.column_names == ["id", "text", "tags"]  # (placeholders go beside it: OUTPUT.placeholders.jsonl)
    assert table.column("text").to_pylist() == ["hi [PERSON_NAME_1]", "hi [PERSON_NAME_1]"]
    assert [json.loads(x) for x in table.column("tags").to_pylist()] == [["a"], []]


def test_jsonl_input_round_trips_byte_for_byte_through_mask_without_detections(tmp_path):
    """The records a masker leaves alone come back as they were read (numbers, nested values, unicode)."""
    recs = [{"id": "1", "text": "nothing here", "n": 3, "x": 1.25, "nested": {"a": [1, "é"]}, "flag": True, "z": None}]
    src = _jsonl(tmp_path / "in.jsonl", recs)
    out = tmp_path / "o.jsonl"
    assert _mask(src, "-o", out) == 0
    back = json.loads(out.read_text())
    assert {k: back[k] for k in recs[0]} == recs[0]
