"""report.html (veil/report/): legend, one colour per method, readable perplexity chart, examples, version."""

from __future__ import annotations

import re
from types import SimpleNamespace

import veil
from veil.experiment.spec import BASELINES, Variant
from veil.fill.faker import FakerFiller
from veil.io.records import write_filled, write_masked
from veil.report import write_results
from veil.report.examples import collect_examples
from veil.report.html import method_colours, noise_note
from veil.types import Document

ROWS = [
    {"technique": "", "method": "pretrained", "perplexity": 61844.0, "train_docs": 3},
    {"technique": "", "method": "oracle", "perplexity": 240.0, "train_docs": 3},
    {"technique": "dlp", "method": "baseline0", "perplexity": 270.0, "masked_share": 0.05},
    {"technique": "dlp", "method": "baseline1", "perplexity": 262.0, "masked_share": 0.05},
    {"technique": "dlp", "method": "top1", "perplexity": 250.0, "masked_share": 0.05},
]
METHODS = ["pretrained", "oracle", "baseline0", "baseline1", "top1"]


def _spec():
    return SimpleNamespace(name="demo", report_extra=[], train=SimpleNamespace(path="train.jsonl"),
                           test=SimpleNamespace(path="test.jsonl"), pretrain=None,
                           variants=[Variant(name, **BASELINES[name]) for name in METHODS if name in BASELINES]
                           + [Variant("top1", "filled", filler="llm", strategy="top1")])


def test_the_report_explains_every_method_and_names_version_and_date(tmp_path):
    write_results([dict(r) for r in ROWS], tmp_path, _spec(), methods=METHODS, techniques=["dlp"])
    page = (tmp_path / "report.html").read_text()
    for m in METHODS:  # each method in the legend, with its colour swatch
        colour = method_colours(METHODS)[m]
        assert re.search(rf'background: {colour}"></span>{m}</td><td>[^<]+', page), m
    assert "the original training text" in page and "filled by the SmolLM2 scorer" in page
    assert "Gap recovered</b> = (PPL Baseline0 − PPL method)" in page
    assert f"veil {veil.__version__}" in page and re.search(r"report written \d{4}-\d\d-\d\d", page)
    assert "pretrained (not adapted): 61,844, off this scale" in page  # kept off the perplexity axis
    assert "one fine-tuning seed" in page
    assert "<h2>Privacy audit</h2>" in page and "No audit output" in page
    assert page.count("data:image/png;base64,") == 3


def test_colours_are_fixed_per_method_and_distinct():
    c = method_colours(METHODS)
    assert len(set(c.values())) == len(METHODS) and method_colours(METHODS) == c


def test_noise_note_with_seeds():
    rows = [dict(r, seeds=3, gap_recovered_std=0.11 if r["method"] == "top1" else None) for r in ROWS]
    assert "mean over 3 fine-tuning seeds" in noise_note(rows) and "±11 points" in noise_note(rows)


def test_examples_show_original_masked_and_filled(tmp_path):
    originals = [Document("a", "Call me at (415) 555-0199 tomorrow please."),
                 Document("b", "nothing to mask in this one at all"),
                 Document("c", "My zip is 94110 and my card is 4111 1111 1111 1111.")]
    masked = veil.mask(originals, maskers=["dlp"])
    write_masked(tmp_path / "masked.jsonl", masked)
    write_filled(tmp_path / "filled.jsonl", FakerFiller().fill(masked))
    ex = collect_examples(originals, {"dlp": tmp_path / "masked.jsonl"},
                          {("dlp", "top1"): tmp_path / "filled.jsonl"}, n=5)
    assert sorted(e["id"] for e in ex) == ["a", "c"]  # "b" has nothing masked
    a = next(e for e in ex if e["id"] == "a")
    assert a["original"] == originals[0].text and a["rows"][0]["masked"] == "Call me at [PHONE_NUMBER_1] tomorrow please."
    assert re.fullmatch(r"Call me at \(\d{3}\) \d{3}-\d{4} tomorrow please\.", a["rows"][0]["fills"][0]["text"])
    write_results([dict(r) for r in ROWS], tmp_path, _spec(), methods=METHODS, techniques=["dlp"], examples=ex)
    page = (tmp_path / "report.html").read_text()
    assert "Examples from the training corpus" in page and "Call me at [PHONE_NUMBER_1] tomorrow please." in page
    assert "a report with examples holds private text" in page
