import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("make_demo_corpus", REPO / "scripts" / "make_demo_corpus.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generator_is_deterministic_and_matches_bundled_corpus(tmp_path):
    _script().main(["--out", str(tmp_path)])
    for name in ("calls.jsonl", "calls_test.jsonl"):
        assert (tmp_path / name).read_bytes() == (REPO / "veil" / "data" / "demo" / name).read_bytes()


def test_gold_spans_are_valid_and_corpus_has_every_kind_of_pi():
    labels, persons_per_conv, convs_per_customer = set(), {}, {}
    for line in (REPO / "veil" / "data" / "demo" / "calls.jsonl").read_text().splitlines():
        r = json.loads(line)
        for s in r["spans"]:
            assert 0 <= s["start"] < s["end"] <= len(r["text"])
            assert set(s) == {"start", "end", "label"}  # offsets and labels only, never the surface
            labels.add(s["label"])
        persons_per_conv.setdefault(r["conversation"], set()).add(r["person"])
        if r["speaker"] == "customer":
            convs_per_customer.setdefault(r["person"], set()).add(r["conversation"])
    assert {"PERSON_NAME", "ORGANIZATION_NAME", "LOCATION", "PHONE_NUMBER", "EMAIL_ADDRESS", "SPELLED_WORD",
            "NUMBER", "USERNAME", "STREET_ADDRESS"} <= labels
    assert all(len(p) == 2 for p in persons_per_conv.values())  # one person per conversation side
    assert any(len(c) > 1 for c in convs_per_customer.values())  # some customers call again


@pytest.mark.slow
def test_demo_masking_step_runs_every_technique(tmp_path, capsys):
    from veil.demo import TECHNIQUES, main

    assert main(["--mask-only", "--no-progress", "--out", str(tmp_path)]) == 0
    n = sum(1 for _ in (REPO / "veil" / "data" / "demo" / "calls.jsonl").open())
    for tech in TECHNIQUES:
        recs = (tmp_path / f"masked_{tech}.jsonl").read_text().splitlines()
        assert len(recs) == n and "spans" not in json.loads(recs[0])
    share = json.loads((tmp_path / "masked_share.json").read_text())
    (stats,) = share.values()
    assert stats["documents"] == n
    # the corpus is rich in personal information: every technique masks something, none masks most words
    assert all(0.02 < v < 0.5 for v in stats["masked_share"].values())
    assert "allowList" in capsys.readouterr().out


@pytest.mark.slow
def test_demo_runs_the_whole_pipeline(tmp_path, capsys):
    """`make demo` end to end (about 10 minutes on 2 CPU cores): every cell of the perplexity table, Oracle best,
    and the WER table."""
    import csv
    import math

    from veil.demo import main

    assert main(["--no-progress", "--out", str(tmp_path)]) == 0
    out = tmp_path / "experiment"
    assert "report:" in capsys.readouterr().out and (out / "report.html").stat().st_size > 10_000
    with (out / "results.csv").open() as f:
        rows = list(csv.DictReader(f))
    ppl = {(r["technique"], r["method"]): float(r["perplexity"]) for r in rows if r["perplexity"]}
    assert ppl[("", "pretrained")] < 1000  # a real pre-trained downstream LM: perplexities in a sane range
    wer = {(r["technique"], r["method"]): float(r["wer"]) for r in rows if r.get("wer")}
    assert ("", "no_lm") in wer and ("", "oracle") in wer and "Word error rate" in (out / "results.md").read_text()
    techniques = {"allow_list", "vocab_threshold", "entity_tagger"}
    assert {t for t, _ in ppl if t} == techniques
    for t in techniques:
        for m in ("baseline0", "baseline1", "topk"):
            assert math.isfinite(ppl[(t, m)])
        assert ppl[("", "oracle")] < ppl[(t, "baseline0")]
