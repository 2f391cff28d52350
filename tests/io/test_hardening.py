"""Issue 19's cases 1-7, 11, 12: nothing lost, nothing corrupted, nothing silently wrong (one test or more each)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from veil.cli import main
from veil.errors import VeilError
from veil.fill.base import Filler
from veil.io.output import ResumableWriter, check_output_path
from veil.mask.base import Masker
from veil.fill.fallback import fallback_fill
from veil.registry import fillers, maskers
from veil.types import Span

ROOT = Path(__file__).resolve().parents[2]


class NameMasker(Masker):
    """Test masker: capitalised words after the first; counts constructions (a model load in real maskers)."""

    name = "names"
    built = 0

    def __init__(self, **options):
        type(self).built += 1

    def detect(self, text):
        import re

        return [Span(m.start(), m.end(), "PERSON_NAME", self.name) for m in re.finditer(r"(?<=\s)[A-Z][a-z]+", text)]


class FakerFiller(Filler):
    """Test filler: every placeholder gets its type's Faker value (the pipeline's fallback), seeded per document."""

    name = "faker"

    def __init__(self, seed=0, fail_on=None, **options):
        self.seed, self.fail_on = seed, fail_on

    def _fill(self, docs):
        for d in docs:
            if self.fail_on and self.fail_on in d.text:
                raise VeilError(f"document {d.id!r}: the model proposed no usable word for [MASK]")
        return [fallback_fill(d, self.seed) for d in docs]


@pytest.fixture(autouse=True)
def fakes(monkeypatch):
    monkeypatch.setitem(maskers._entries, "names", NameMasker)
    monkeypatch.setitem(fillers._entries, "faker", FakerFiller)
    NameMasker.built = 0


def _jsonl(path, recs):
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return path


def _corpus(tmp_path, n=6, name="in.jsonl"):
    return _jsonl(tmp_path / name, [{"id": f"d{i}", "text": f"hello Anna and Bob {i}", "n": i} for i in range(n)])


def _mask(*args):
    return main(["mask", *map(str, args), "--masker", "names", "--no-progress"])


def _leftovers(folder):
    return sorted(p.name for p in Path(folder).iterdir() if p.name.endswith((".partial", ".progress.json", ".lock")))


# --- case 1: a second writer of the same output fails at once, naming the first ------------------
def test_case1_output_being_written_is_locked(tmp_path, capsys):
    src, out = _corpus(tmp_path), tmp_path / "out.jsonl"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from veil.io.output import ResumableWriter\n"
         f"with ResumableWriter({str(out)!r}, {{}}) as w:\n    print('locked', flush=True); time.sleep(30)"],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        t0 = time.time()
        assert _mask(src, "-o", out) == 2
        err = capsys.readouterr().err
        assert time.time() - t0 < 10 and f"is being written by process {holder.pid}" in err
        assert NameMasker.built == 0  # refused before any masker was built
    finally:
        holder.kill()
        holder.wait()
    assert _mask(src, "-o", out) == 0  # the lock died with its process
    assert len(out.read_text().splitlines()) == 6 and _leftovers(tmp_path) == []


# --- case 2: an existing output is reused only for the same input and settings ---------------------
def test_case2_existing_output_reused_only_when_input_and_settings_match(tmp_path, capsys):
    src, out = _corpus(tmp_path), tmp_path / "out.jsonl"
    assert _mask(src, "-o", out) == 0
    first = out.read_bytes()
    assert _mask(src, "-o", out) == 0 and out.read_bytes() == first  # same input, same settings: reused
    other = _corpus(tmp_path, 3, "other.jsonl")
    assert _mask(other, "-o", out) == 2
    assert "exists and was written from another input or with other settings" in capsys.readouterr().err
    assert _mask(src, "-o", out, "--placeholder", "typed") == 2  # other settings
    assert out.read_bytes() == first
    assert _mask(other, "-o", out, "--overwrite") == 0 and len(out.read_text().splitlines()) == 3
    mine = tmp_path / "mine.jsonl"
    mine.write_text("a file veil did not write\n")
    assert _mask(src, "-o", mine) == 2 and "was not written by veil" in capsys.readouterr().err


def test_case2_fill_refuses_an_output_from_another_input(tmp_path, capsys):
    src, masked, filled = _corpus(tmp_path), tmp_path / "m.jsonl", tmp_path / "f.jsonl"
    assert _mask(src, "-o", masked) == 0
    fill = ["fill", str(masked), "-o", str(filled), "--filler", "faker", "--no-progress"]
    assert main(fill) == 0
    before = filled.read_bytes()
    other = _jsonl(tmp_path / "m2.jsonl", [{"id": "x", "text": "[PERSON_NAME_1] again"}])
    assert main(["fill", str(other), "-o", str(filled), "--filler", "faker", "--no-progress"]) == 2
    assert "another input or with other settings" in capsys.readouterr().err and filled.read_bytes() == before
    assert main(fill + ["--seed", "5"]) == 2 and filled.read_bytes() == before
    assert main(fill) == 0 and filled.read_bytes() == before


# --- case 3: CSV / Parquet columns are the union of all records' fields; mixed types handled ---------
@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_case3_columns_are_the_union_and_mixed_types_are_kept(tmp_path, ext):
    src = _jsonl(tmp_path / "in.jsonl", [{"id": 1, "text": "hi Anna", "n": 1},
                                         {"id": 2, "text": "yo Bob", "late": "x", "n": "two"},
                                         {"id": 3, "text": "so Cy", "n": None}])
    out = tmp_path / f"out.{ext}"
    assert _mask(src, "-o", out) == 0
    if ext == "csv":
        import csv

        rows = list(csv.DictReader(out.open(encoding="utf-8")))
    else:
        import pyarrow.parquet as pq

        rows = pq.read_table(out).to_pylist()
    assert [r["late"] for r in rows] == (["", "x", ""] if ext == "csv" else [None, "x", None])
    # a Parquet column with numbers and strings is written as strings (with a warning), not dropped or crashed
    assert [r["n"] for r in rows] == (["1", "two", ""] if ext == "csv" else ["1", "two", None])


# --- case 4: reserved field names are refused, with the way out ------------------------------------
def test_case4_reserved_fields_refused_before_work(tmp_path, capsys):
    src = _jsonl(tmp_path / "in.jsonl", [{"id": 1, "text": "hi Anna", "style": "casual"}])
    assert _mask(src, "-o", tmp_path / "o.jsonl") == 2
    err = capsys.readouterr().err
    assert "in.jsonl:1: input field 'style' would be overwritten" in err and "--drop-field style" in err
    assert NameMasker.built == 0 and _leftovers(tmp_path) == []
    assert _mask(src, "-o", tmp_path / "o.jsonl", "--drop-field", "style") == 0


# --- case 5: output = input refused; masking a masked output again is refused -----------------------
def test_case5_output_equal_to_input_and_masking_twice(tmp_path, capsys):
    src = _corpus(tmp_path)
    before = src.read_bytes()
    assert _mask(src, "-o", src) == 2 and "would overwrite the input" in capsys.readouterr().err
    assert _mask(src, "-o", tmp_path / "." / "in.jsonl") == 2
    assert src.read_bytes() == before
    masked = tmp_path / "m.jsonl"
    assert _mask(src, "-o", masked, "--placeholder", "mask") == 0
    assert _mask(masked, "-o", tmp_path / "mm.jsonl") == 2
    assert "is already masked" in capsys.readouterr().err
    # asked for explicitly, the markers become user text: escaped, and restored verbatim by fill
    assert _mask(masked, "-o", tmp_path / "mm.jsonl", "--drop-field", "placeholders", "style") == 0
    again = [json.loads(x) for x in (tmp_path / "mm.jsonl").read_text().splitlines()]
    assert "[\\MASK]" in again[0]["text"] and again[0]["placeholders"] == []


# --- case 6: only regular files are written -----------------------------------------------------------
def test_case6_devices_and_other_non_regular_outputs_refused(tmp_path, capsys):
    src = _corpus(tmp_path)
    assert _mask(src, "-o", "/dev/null") == 2
    assert "is not a regular file" in capsys.readouterr().err
    assert Path("/dev/null").is_char_device()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(VeilError, match="not a regular file"):
        check_output_path(fifo)
    link = tmp_path / "link.jsonl"
    link.symlink_to(tmp_path / "target.jsonl")
    assert _mask(src, "-o", link) == 2 and "symbolic link" in capsys.readouterr().err


# --- case 11: one-line errors, before any model loads -------------------------------------------------
@pytest.mark.parametrize("setup,message", [
    (lambda t: (t / "missing.jsonl", t / "o.jsonl"), "missing.jsonl: no such file"),
    (lambda t: (_corpus(t), t), "is a folder; give a file name"),
    (lambda t: ((t / "bad.jsonl").write_bytes(b'{"id": 1, "text": "ok"}\n{"id": 2, "text": "\xff"}\n')
                and t / "bad.jsonl", t / "o.jsonl"), "bad.jsonl:2: invalid UTF-8"),
])
def test_case11_bad_paths_are_one_line_before_the_model(tmp_path, capsys, setup, message):
    src, out = setup(tmp_path)
    for cmd in (["mask", str(src), "-o", str(out), "--masker", "names"],
                ["fill", str(src), "-o", str(out), "--filler", "faker"]):
        assert main(cmd + ["--no-progress"]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert NameMasker.built == 0 and _leftovers(tmp_path) == []


def test_case11_read_only_folder_is_one_line(tmp_path, capsys, monkeypatch):
    src = _corpus(tmp_path)
    ro = tmp_path / "ro"
    ro.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == ro else real_access(p, mode))
    assert _mask(src, "-o", ro / "o.jsonl") == 2  # (root may write anywhere: os.access is what veil asks)
    assert "cannot write in folder" in capsys.readouterr().err and NameMasker.built == 0


def test_case11_full_disk_is_one_line_and_the_run_resumes(tmp_path, capsys, monkeypatch):
    import errno

    src, out = _corpus(tmp_path, 6), tmp_path / "o.jsonl"
    assert _mask(src, "-o", tmp_path / "ref.jsonl", "--batch-size", "2") == 0
    real_write = ResumableWriter.write
    calls = []

    def full(self, *a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(self, *a, **k)

    monkeypatch.setattr(ResumableWriter, "write", full)
    assert _mask(src, "-o", out, "--batch-size", "2") == 2
    assert "the disk is full" in capsys.readouterr().err
    monkeypatch.setattr(ResumableWriter, "write", real_write)
    assert _mask(src, "-o", out, "--batch-size", "2") == 0
    assert out.read_bytes() == (tmp_path / "ref.jsonl").read_bytes()


def test_case11_csv_with_byte_order_mark_reads_its_id_column(tmp_path):
    src = tmp_path / "in.csv"
    src.write_bytes("\ufeffid,text\nA7,hello Anna\n".encode("utf-8"))
    out = tmp_path / "o.csv"
    assert _mask(src, "-o", out) == 0
    assert out.read_text(encoding="utf-8").splitlines()[1].startswith("A7,hello [PERSON_NAME_1]")


# --- case 12: null text and duplicate ids ---------------------------------------------------------------
def test_case12_null_text_is_an_error_never_empty(tmp_path, capsys):
    src = _jsonl(tmp_path / "in.jsonl", [{"id": 1, "text": "hi Anna"}, {"id": 2, "text": None}])
    assert _mask(src, "-o", tmp_path / "o.jsonl") == 2
    assert "in.jsonl:2: field 'text' is null" in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists() and NameMasker.built == 0


def test_case12_duplicate_ids_refused(tmp_path, capsys):
    src = _jsonl(tmp_path / "in.jsonl", [{"id": 1, "text": "hi Anna"}, {"id": "1", "text": "yo Bob"}])
    assert _mask(src, "-o", tmp_path / "o.jsonl") == 2
    assert "in.jsonl:2: id '1' is the id of record 1 too" in capsys.readouterr().err
    assert _mask(src, "-o", tmp_path / "o.jsonl", "--id-field", "") == 0  # numbered instead


# --- formats round trip, stdin / stdout, missing ids ------------------------------------------------------
@pytest.mark.parametrize("ext", ["jsonl", "csv", "parquet", "txt"])
def test_fill_reads_what_mask_writes_and_keeps_the_format_and_column_names(tmp_path, ext):
    src = tmp_path / "in.csv"
    src.write_text("call_id,transcript,agent\nc1,\"hello Anna, this is Bob\",x\nc2,no names here,y\n")
    masked, filled = tmp_path / f"m.{ext}", tmp_path / f"f.{ext}"
    fields = ["--text-field", "transcript", "--id-field", "call_id"]
    assert _mask(src, "-o", masked, *fields) == 0
    args = fields if ext != "txt" else []
    assert main(["fill", str(masked), "-o", str(filled), "--filler", "faker", "--no-progress", *args]) == 0
    if ext == "txt":
        lines = filled.read_text().splitlines()
        assert len(lines) == 2 and lines[1] == "no names here" and "[" not in lines[0]
        return
    from veil.io.formats import Fields, iter_records

    recs = [r for _, r in iter_records(filled, ext)]
    assert [set(r) for r in recs] == [{"call_id", "transcript", "agent"}] * 2
    assert [r["call_id"] for r in recs] == ["c1", "c2"] and recs[1]["transcript"] == "no names here"
    assert "Anna" not in recs[0]["transcript"] and "[" not in recs[0]["transcript"]
    assert Fields  # (the names are the input's: no id/text columns appear)


def test_stdin_and_stdout_and_missing_ids(tmp_path):
    recs = [{"text": "hello Anna"}, {"text": "bye Bob"}]  # no id field: the record number
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = ("import sys\nfrom veil.registry import maskers\nfrom tests.io.test_hardening import NameMasker\n"
            "maskers.register('names', NameMasker)\nfrom veil.cli import main\nsys.exit(main(sys.argv[1:]))")
    r = subprocess.run([sys.executable, "-c", code, "mask", "-", "-o", "-", "--masker", "names", "-q"],
                       input="".join(json.dumps(x) + "\n" for x in recs), capture_output=True, text=True, env=env,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    out = [json.loads(x) for x in r.stdout.splitlines()]
    assert [o["text"] for o in out] == ["hello [PERSON_NAME_1]", "bye [PERSON_NAME_1]"]
    assert [set(o) for o in out] == [{"text", "placeholders", "style"}] * 2  # no id field the input lacked


def test_case5_masking_masked_text_again_says_so(tmp_path, caplog):
    import logging

    src = tmp_path / "in.txt"
    src.write_text("hello Anna\nbye Bob\nno names\n")
    assert _mask(src, "-o", tmp_path / "m.txt") == 0  # a text file keeps no placeholders field
    with caplog.at_level(logging.WARNING):
        assert _mask(tmp_path / "m.txt", "-o", tmp_path / "mm.txt") == 0
    assert any("2 of 3 records hold placeholder-like text" in r.getMessage() for r in caplog.records)
    assert (tmp_path / "mm.txt").read_text().splitlines()[0] == "hello [\\PERSON_NAME_1]"
