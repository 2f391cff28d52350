import json
from pathlib import Path

import pytest

from veil.cli import main
from veil.mask.base import Masker
from veil.registry import maskers
from veil.types import Span

DEMO = Path(__file__).resolve().parent.parent / "veil" / "data" / "demo"


class CapitalisedMasker(Masker):
    """Test masker: capitalised words after the first word; can be told to crash mid-run."""

    name = "capitalised"
    crash_after: int | None = None
    calls = 0

    def detect(self, text):
        import re

        return [Span(m.start(), m.end(), "PERSON_NAME", self.name) for m in re.finditer(r"(?<=\s)[A-Z][a-z]+", text)]

    def detect_batch(self, texts):
        type(self).calls += 1
        if self.crash_after is not None and type(self).calls > self.crash_after:
            raise KeyboardInterrupt
        return super().detect_batch(texts)


class DigitsMasker(Masker):
    """Test masker: runs of digits."""

    name = "digits"

    def detect(self, text):
        import re

        return [Span(m.start(), m.end(), "NUMBER", self.name) for m in re.finditer(r"\d+", text)]


@pytest.fixture(autouse=True)
def fake_maskers(monkeypatch):
    """The test maskers are registered for this module's tests only (the registry is global)."""
    monkeypatch.setitem(maskers._entries, "capitalised", CapitalisedMasker)
    monkeypatch.setitem(maskers._entries, "digits", DigitsMasker)


def _corpus(tmp_path, n=50):
    p = tmp_path / "in.jsonl"
    with open(p, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"d{i}", "text": f"hello Anna and Bob number {i} [MASK]", "keep": i}) + "\n")
    return p


def test_mask_numbered_and_fields_kept(tmp_path):
    src, out = _corpus(tmp_path, 3), tmp_path / "out.jsonl"
    assert main(["mask", str(src), "-o", str(out), "--masker", "capitalised", "--placeholder", "numbered",
                 "--no-progress"]) == 0
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(recs) == 3
    assert recs[0]["text"] == "hello [PERSON_NAME_1] and [PERSON_NAME_2] number 0 [\\MASK]"
    assert recs[2]["keep"] == 2 and recs[0]["placeholders"][0]["key"] == "PERSON_NAME_1"


def test_interrupted_mask_run_resumes_byte_identical(tmp_path):
    src = _corpus(tmp_path, 50)
    ref, out = tmp_path / "ref.jsonl", tmp_path / "out.jsonl"
    args = ["--masker", "capitalised", "--batch-size", "8", "--no-progress"]
    assert main(["mask", str(src), "-o", str(ref), *args]) == 0
    CapitalisedMasker.calls, CapitalisedMasker.crash_after = 0, 3
    try:
        assert main(["mask", str(src), "-o", str(out), *args]) == 130
    finally:
        CapitalisedMasker.crash_after = None
    assert not out.exists() and (tmp_path / "out.jsonl.partial").exists()
    CapitalisedMasker.calls = 0
    assert main(["mask", str(src), "-o", str(out), *args]) == 0
    assert CapitalisedMasker.calls == 4  # 50 docs / 8 = 7 batches, 3 were done before the interruption
    assert out.read_bytes() == ref.read_bytes()


@pytest.mark.parametrize("content,message", [
    (b'{"id": 1, "text": "ok"}\n{"id": 2}\n', "in.jsonl:2: missing text field 'text'"),
    (b'{"id": 1, "text": "\xff"}\n', "in.jsonl:1: invalid UTF-8"),
    (b"", "empty file"),
])
def test_bad_input_is_one_clear_line(tmp_path, capsys, content, message):
    src = tmp_path / "in.jsonl"
    src.write_bytes(content)
    assert main(["mask", str(src), "-o", str(tmp_path / "o.jsonl"), "--masker", "capitalised", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_unknown_masker_and_missing_output(tmp_path, capsys):
    src = _corpus(tmp_path, 1)
    assert main(["mask", str(src), "-o", str(tmp_path / "o.jsonl"), "--masker", "nope"]) == 2
    assert "unknown masker 'nope'" in capsys.readouterr().err
    assert main(["mask", str(src)]) == 2


def test_stats_table(tmp_path, capsys):
    src = _corpus(tmp_path, 4)
    assert main(["mask", str(src), "--stats", "--masker", "capitalised", "--no-progress",
                 "--stats-json", str(tmp_path / "s.json")]) == 0
    out = capsys.readouterr().out
    assert "capitalised" in out and "| in.jsonl" in out
    stats = json.loads((tmp_path / "s.json").read_text())
    # 7 words a document (hello Anna and Bob number i MASK), 2 masked
    assert stats[str(src)]["masked_share"]["capitalised"] == pytest.approx(2 / 7)


def test_no_gold_email_or_phone_survives_dlp_masking_of_demo(tmp_path):
    out = tmp_path / "demo.jsonl"
    assert main(["mask", str(DEMO / "calls_test.jsonl"), "-o", str(out), "--masker", "dlp", "--placeholder",
                 "numbered", "--drop-field", "spans", "--no-progress"]) == 0
    masked = [json.loads(line) for line in out.read_text().splitlines()]
    gold = [json.loads(line) for line in (DEMO / "calls_test.jsonl").read_text().splitlines()]
    assert len(masked) == len(gold)
    checked = 0
    for g, m in zip(gold, masked):
        assert "spans" not in m
        for s in g["spans"]:
            if s["label"] in ("EMAIL_ADDRESS", "PHONE_NUMBER"):
                assert g["text"][s["start"]:s["end"]] not in m["text"], (g["text"], m["text"])
                checked += 1
    assert checked > 30


def test_txt_in_with_empty_lines_and_huge_line_keeps_record_count(tmp_path):
    src = tmp_path / "in.txt"
    huge = "Word " * 800_000  # a 4 MB line
    src.write_text(f"hello Anna\n\n{huge}\nbye Bob\n\n")
    out = tmp_path / "sub" / "dir" / "out.jsonl"  # missing folders are created
    assert main(["mask", str(src), "-o", str(out), "--masker", "capitalised", "--placeholder", "mask",
                 "--no-progress"]) == 0
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in recs] == ["1", "2", "3", "4", "5"]
    assert recs[0]["text"] == "hello [MASK]" and recs[1]["text"] == "" and recs[4]["text"] == ""
    assert recs[2]["text"].count("[MASK]") == 800_000 - 1  # every capitalised word after the first


@pytest.mark.parametrize("out_name", ["out.csv", "out.parquet", "out.txt"])
def test_csv_in_other_formats_out(tmp_path, out_name):
    src = tmp_path / "in.csv"
    src.write_text('uid,body,who\n1,"hello Anna, hi",p1\n2,,p2\n3,"bye\tBob",p1\n')
    out = tmp_path / out_name
    assert main(["mask", str(src), "-o", str(out), "--masker", "capitalised", "--text-field", "body",
                 "--id-field", "uid", "--person-field", "who", "--placeholder", "mask", "--no-progress"]) == 0
    if out_name == "out.txt":
        assert out.read_text() == "hello [MASK], hi\n\nbye\t[MASK]\n"
        return
    from veil.io.formats import Fields, read_documents

    docs = list(read_documents(out, fields=Fields(text="body", id="uid", person="who")))  # the input's names
    assert [(d.id, d.text, d.person) for d in docs] == [
        ("1", "hello [MASK], hi", "p1"), ("2", "", "p2"), ("3", "bye\t[MASK]", "p1")]


@pytest.mark.parametrize("extra,message", [
    (["--set", "nope"], "--set 'nope': expected NAME.OPTION=VALUE"),
    (["--set", "capitalised.colour=1"], "masker capitalised:"),
    (["--set", "dlp.min_score=0.5"], "'dlp' is not among the components run"),
    (["--input-format", "docx"], "unknown corpus format 'docx'"),
    (["--text-field", "body"], "in.jsonl:1: missing text field 'body'"),
    (["--batch-size", "0"], "--batch-size must be at least 1"),
])
def test_option_errors_are_one_line(tmp_path, capsys, extra, message):
    src = _corpus(tmp_path, 2)
    rc = main(["mask", str(src), "-o", str(tmp_path / "o.jsonl"), "--masker", "capitalised", "--no-progress", *extra])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and "Traceback" not in err


def test_unknown_output_extension(tmp_path, capsys):
    src = _corpus(tmp_path, 1)
    assert main(["mask", str(src), "-o", str(tmp_path / "o.docx"), "--masker", "capitalised"]) == 2
    assert "cannot tell the format" in capsys.readouterr().err


def test_stats_several_corpora_and_maskers_with_output(tmp_path, capsys):
    a = _corpus(tmp_path, 3)
    b = tmp_path / "b.txt"
    b.write_text("call Ann at 555 0100\nno names here\n")
    out = tmp_path / "m.jsonl"
    assert main(["mask", str(a), str(b), "--stats", "--masker", "capitalised", "--masker", "digits",
                 "--no-progress", "--stats-json", str(tmp_path / "s.json")]) == 0
    table = capsys.readouterr().out
    assert "| corpus" in table and "capitalised" in table and "digits" in table and "combined" in table
    stats = json.loads((tmp_path / "s.json").read_text())
    # b.txt: 8 words (call Ann at 555 0100 no names here); Ann, 555, 0100 masked
    assert stats[str(b)]["words"] == 8
    assert stats[str(b)]["masked_share"] == pytest.approx({"capitalised": 1 / 8, "digits": 2 / 8, "combined": 3 / 8})
    # -o and --stats together: the output is written and the table printed
    assert main(["mask", str(b), "-o", str(out), "--stats", "--masker", "digits", "--no-progress"]) == 0
    assert "| b.txt" in capsys.readouterr().out and len(out.read_text().splitlines()) == 2
    assert main(["mask", str(a), str(b), "-o", str(out), "--masker", "digits"]) == 2  # -o takes one input


def test_switchboard_input(tmp_path):
    corpus = tmp_path / "swb"
    (corpus / "train").mkdir(parents=True)
    (corpus / "speakers").mkdir()
    (corpus / "train" / "2005.txt").write_text("A|hi I am Anna|sd\nB|and I am Bob|sd\n")
    (corpus / "speakers" / "call_con_tab.csv").write_text("id_conv,id_caller,id_speaker\n2005,A,1001\n2005,B,1002\n")
    out = tmp_path / "o.jsonl"
    assert main(["mask", str(corpus), "-o", str(out), "--masker", "capitalised", "--placeholder", "typed",
                 "--no-progress"]) == 0
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["text"], r["person"], r["group"], r["da_tag"]) for r in recs] == [
        ("2005:A:1", "hi I am [PERSON_NAME]", "1001", "2005", "sd"),
        ("2005:B:2", "and I am [PERSON_NAME]", "1002", "2005", "sd")]


def test_changed_input_is_not_resumed_into(tmp_path):
    src = _corpus(tmp_path, 20)
    out = tmp_path / "out.jsonl"
    args = ["--masker", "capitalised", "--batch-size", "4", "--no-progress"]
    CapitalisedMasker.calls, CapitalisedMasker.crash_after = 0, 2
    try:
        assert main(["mask", str(src), "-o", str(out), *args]) == 130
    finally:
        CapitalisedMasker.crash_after = None
    src.write_text(json.dumps({"id": "new", "text": "only Carl"}) + "\n")
    assert main(["mask", str(src), "-o", str(out), *args]) == 0
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["new"]
