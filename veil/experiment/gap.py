"""Experiment stage: where the Baseline0 - Oracle gap lies, word class by word class (``veil experiment gap``).

The paper's gap recovered is one number per method. To say *why* a method recovers little, this
splits the test set's negative log-likelihood by the kind of word it falls on:

- ``masked-type``: test words the technique would mask (run on the test set with the experiment's
  own masker settings): the words a fill has to stand in for;
- ``kept``: every other word;
- ``other``: end-of-sentence and tokens outside words (punctuation).

For each fine-tuned model of the experiment (read from the stage cache through ``results.csv``'s
``lm_dir``) it reports the NLL per word of each class and the gap recovered within each class, and
the share of the whole Baseline0 - Oracle gap (in total NLL) that each class holds. Tokens are
attributed to words by the BPE encoding's character offsets, so the sums equal the perplexity
stage's total NLL exactly (checked).
"""

from __future__ import annotations

import csv
import json
import logging
import math
from pathlib import Path
from typing import Any, Sequence

from veil.errors import VeilError

log = logging.getLogger(__name__)

CLASSES = ("masked-type", "kept", "other")


def token_classes(vocab: Any, texts: Sequence[str], masked_spans: Sequence[Sequence[tuple[int, int]]]) -> list[str]:
    """The class of every token of the stream (aligned with :func:`token_losses`)."""
    from veil.textutil import WORD_RE
    from veil.train.tokenizer import BPEVocab

    if not isinstance(vocab, BPEVocab):
        raise VeilError("veil experiment gap needs the BPE tokeniser (lm.tokenizer: bpe)")
    classes: list[str] = []
    encs = vocab.tok.encode_batch(list(texts), add_special_tokens=False)
    for text, enc, spans in zip(texts, encs, masked_spans):
        words = [(m.start(), m.end()) for m in WORD_RE.finditer(text)]
        cls_of_word = ["masked-type" if any(s < we and ws < e for s, e in spans) else "kept" for ws, we in words]
        j = 0
        for a, b in enc.offsets:
            while j < len(words) and words[j][1] <= a:
                j += 1
            inside = j < len(words) and words[j][0] < max(b, a + 1) and a < words[j][1]
            classes.append(cls_of_word[j] if inside else "other")
        classes.append("other")  # the <eos> ending the sentence
    return classes


def class_word_counts(texts: Sequence[str], masked_spans: Sequence[Sequence[tuple[int, int]]]) -> dict[str, int]:
    from veil.textutil import WORD_RE

    n = {c: 0 for c in CLASSES}
    for text, spans in zip(texts, masked_spans):
        for m in WORD_RE.finditer(text):
            n["masked-type" if any(s < m.end() and m.start() < e for s, e in spans) else "kept"] += 1
    n["other"] = len(texts)  # one end-of-sentence per sentence, as in the perplexity's denominator
    return n


def gap_by_word(spec: Any, out: Path, technique: str) -> dict[str, Any]:
    """The per-class NLL of every model of ``technique`` (and Oracle / pretrained) listed in ``out/results.csv``."""
    from veil.experiment.cache import StageCache
    from veil.experiment.runner import load_corpus
    from veil.mask.engine import MaskingEngine
    from veil.train import lm
    from veil.train.lm import LMSettings, stream_nll

    if technique not in spec.techniques:
        raise VeilError(f"technique {technique!r} is not in {spec.source} ({', '.join(spec.techniques)})")
    res = out / "results.csv"
    if not res.is_file():
        raise VeilError(f"{res}: no results; run `veil experiment run` first")
    with res.open(encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r.get("lm_dir") and r["technique"] in ("", technique)]
    if not any(r["method"] == "oracle" for r in rows) or not any(r["method"] == "baseline0" for r in rows):
        raise VeilError(f"{res}: needs oracle and baseline0 rows for {technique} with lm_dir "
                        "(re-run `veil experiment run` with this veil to record them; everything is cached)")
    cache = StageCache(spec.cache or out / "cache")
    s = LMSettings.from_dict({"seed": spec.seed, **spec.lm})
    docs = load_corpus(spec.test)
    test = [d.text for d in docs]
    engine = MaskingEngine.from_names([technique], style="mask", options={technique: spec.techniques[technique]},
                                      keep=spec.keep)
    spans = []
    for i in range(0, len(test), 512):
        spans.extend([[(sp.start, sp.end) for sp in doc] for doc in engine.detect(docs[i:i + 512])])
    words = class_word_counts(test, spans)
    classes: list[str] | None = None
    per: dict[str, dict[str, float]] = {}
    for r in rows:
        folder = cache.root / r["lm_dir"]
        if not folder.is_dir():
            raise VeilError(f"{folder}: the model of {r['method']} is not in the cache")
        model, vocab = lm.load(folder)
        if classes is None:
            classes = token_classes(vocab, test, spans)
        losses = [float(v) for nll in stream_nll(model, vocab, test, s) for v in nll]
        if len(losses) != len(classes):
            raise VeilError(f"internal: {len(losses)} token losses for {len(classes)} classified tokens")
        sums = {c: 0.0 for c in CLASSES}
        for c, v in zip(classes, losses):
            sums[c] += v
        total = sum(sums.values())
        ppl = math.exp(total / sum(words.values()))
        if abs(ppl - float(r["perplexity"])) > 1e-3 * ppl and int(float(r.get("seeds") or 1)) == 1:
            raise VeilError(f"{r['method']}: per-class NLL gives perplexity {ppl:.2f}, results.csv {r['perplexity']}")
        per[r["method"]] = sums
        log.info("gap: %s done", r["method"])
    o, b0 = per["oracle"], per["baseline0"]
    gap_total = sum(b0.values()) - sum(o.values())
    table = []
    for m, sums in per.items():
        row: dict[str, Any] = {"method": m, "perplexity": math.exp(sum(sums.values()) / sum(words.values()))}
        for c in CLASSES:
            row[f"nll_{c}"] = sums[c] / max(1, words[c])
            d = b0[c] - o[c]
            row[f"gap_{c}"] = (b0[c] - sums[c]) / d if abs(d) > 1e-9 else None
        row["gap"] = (sum(b0.values()) - sum(sums.values())) / gap_total if gap_total else None
        table.append(row)
    share = {c: (b0[c] - o[c]) / gap_total if gap_total else None for c in CLASSES}
    return {"technique": technique, "words": words, "gap_share": share, "rows": table}


def to_markdown(r: dict[str, Any]) -> str:
    w, sh = r["words"], r["gap_share"]

    def pct(x: float | None) -> str:
        return "" if x is None else f"{100 * x:.0f}%"

    lines = [f"### Where the Baseline0 - Oracle gap lies: {r['technique']}", "",
             f"Test words the technique would mask: {w['masked-type']:,} of {w['masked-type'] + w['kept']:,} "
             f"({100 * w['masked-type'] / max(1, w['masked-type'] + w['kept']):.1f}%). Share of the gap (total NLL) "
             f"on them: {pct(sh['masked-type'])}; on the kept words: {pct(sh['kept'])}; on end-of-sentence and "
             f"punctuation: {pct(sh['other'])}.", "",
             "| method | perplexity | NLL/word masked-type | NLL/word kept | NLL other | gap | gap on masked-type | "
             "gap on kept | gap on other |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for x in r["rows"]:
        lines.append(f"| {x['method']} | {x['perplexity']:.1f} | {x['nll_masked-type']:.3f} | {x['nll_kept']:.3f} | "
                     f"{x['nll_other']:.3f} | {pct(x['gap'])} | {pct(x['gap_masked-type'])} | {pct(x['gap_kept'])} | "
                     f"{pct(x['gap_other'])} |")
    return "\n".join(lines) + "\n"


def write(r: dict[str, Any], out: Path) -> Path:
    from veil.report.tables import atomic_write

    p = out / f"gap_by_word_{r['technique']}.md"
    atomic_write(p, to_markdown(r))
    atomic_write(p.with_suffix(".json"), json.dumps(r, indent=1))
    return p
