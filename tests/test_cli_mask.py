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


maskers.register("capitalised", CapitalisedMasker)


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
