"""Report stage: results.csv and results.md (the paper's layout: one row per method, one column per technique)."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any, Sequence

COLUMNS = ["technique", "method", "perplexity", "masked_share", "gap_recovered", "perplexity_std", "gap_recovered_std",
           "seeds", "perplexity_seeds", "train_docs", "train_words", "test_words", "pretrain_s", "mask_s",
           "filler_ft_s", "fill_s", "lm_finetune_s", "evaluate_s", "computed", "lm_dir",
           # the task evaluation (veil.downstream.task.stage.COLUMNS; empty without a task: section)
           "da_macro_f1", "da_accuracy", "da_macro_f1_std", "da_accuracy_std", "da_seeds", "task_s",
           # the LM-fused ASR evaluation (veil.downstream.asr): WER in percent; the no_lm row also has the n-best oracle
           "wer", "nbest_oracle_wer", "asr_lambda", "asr_beta", "asr_test_utterances", "asr_s"]


def atomic_write(path: Path, text: str) -> None:
    from veil.io.atomic import write_text_atomic

    write_text_atomic(path, text)


def _std(xs: Sequence[float]) -> float | None:
    """Sample standard deviation; None for fewer than two finite values."""
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    if len(xs) < 2:
        return None
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def _gap(b0: float, oracle: float, ppl: float) -> float | None:
    den = b0 - oracle
    if math.isfinite(den) and den != 0 and math.isfinite(ppl):
        return (b0 - ppl) / den
    return None


def add_gap(rows: list[dict[str, Any]]) -> None:
    """gap recovered = (PPL Baseline0 - PPL method) / (PPL Baseline0 - PPL Oracle), per technique.

    With several LM seeds (``perplexity_seeds``), ``perplexity`` is their mean, ``perplexity_std``
    their spread, and ``gap_recovered_std`` the spread of the gap computed seed by seed (Oracle,
    Baseline0 and the method fine-tuned with the same seed), so it measures how much of a difference
    between methods is training noise.
    """
    oracle = next((r for r in rows if r["method"] == "oracle"), None)
    b0 = {r["technique"]: r for r in rows if r["method"] == "baseline0"}
    for r in rows:
        seeds = list(r.get("perplexity_seeds") or [r["perplexity"]])
        r["seeds"] = len(seeds)
        r["perplexity_std"] = _std(seeds)
        g = gstd = None
        b = b0.get(r["technique"])
        if oracle is not None and b is not None and r["method"] != "oracle":
            g = _gap(b["perplexity"], oracle["perplexity"], r["perplexity"])
            per = [_gap(bs, os_, ms) for bs, os_, ms in zip(b.get("perplexity_seeds") or [b["perplexity"]],
                                                           oracle.get("perplexity_seeds") or [oracle["perplexity"]],
                                                           seeds)]
            gstd = _std([x for x in per if x is not None]) if r["method"] != "baseline0" else None
        r["gap_recovered"] = g
        r["gap_recovered_std"] = gstd


def to_csv(rows: Sequence[dict[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({c: ("" if r.get(c) is None else
                        " ".join(f"{x:.4f}" for x in r[c]) if isinstance(r.get(c), (list, tuple)) else r.get(c))
                    for c in COLUMNS})
    return buf.getvalue()


def _pm(x: float | None, fmt: str) -> str:
    return "" if x is None else f" ±{x:{fmt}}"


def _fmt_ppl(x: float | None) -> str:
    return "" if x is None else ("inf" if not math.isfinite(x) else f"{x:.2f}")


def to_markdown(rows: Sequence[dict[str, Any]], methods: Sequence[str], techniques: Sequence[str],
                title: str = "") -> str:
    """Perplexity (gap recovered) per method x technique, then the share of masked tokens."""
    cell = {(r["technique"], r["method"]): r for r in rows}
    n_seeds = max((int(r.get("seeds") or 1) for r in rows), default=1)
    seeds_note = (f" Each cell is the mean over {n_seeds} LM fine-tuning seeds, ± the standard deviation of the "
                  "perplexity and of the gap recovered computed seed by seed." if n_seeds > 1 else "")
    lines = [f"## {title}" if title else "", "",
             "Perplexity per word of the adapted LM on the untouched test set (gap recovered = "
             "(PPL Baseline0 - PPL method) / (PPL Baseline0 - PPL Oracle))." + seeds_note, "",
             "| method | " + " | ".join(techniques) + " |", "|---|" + "---|" * len(techniques)]
    for m in methods:
        if ("", m) in cell or m == "oracle":  # not masked: one value for every technique
            r = cell.get(("", m))
            v = _fmt_ppl(r["perplexity"]) + _pm(r.get("perplexity_std"), ".1f") if r else ""
            lines.append(f"| {m} | " + " | ".join(v for _ in techniques) + " |")
            continue
        vals = []
        for t in techniques:
            r = cell.get((t, m))
            if r is None:
                vals.append("")
                continue
            s = _fmt_ppl(r["perplexity"]) + _pm(r.get("perplexity_std"), ".1f")
            if r.get("gap_recovered") is not None and m != "baseline0":
                gstd = r.get("gap_recovered_std")
                s += f" ({100 * r['gap_recovered']:.0f}%" + (_pm(100 * gstd, ".0f") if gstd is not None else "") + ")"
            vals.append(s)
        lines.append(f"| {m} | " + " | ".join(vals) + " |")
    shares = []
    for t in techniques:
        r = next((r for r in rows if r["technique"] == t and r.get("masked_share") is not None), None)
        shares.append(f"{100 * r['masked_share']:.1f}%" if r else "")
    lines.append("| share of masked tokens | " + " | ".join(shares) + " |")
    return "\n".join(lines).lstrip("\n") + "\n"


def wall_times_markdown(rows: Sequence[dict[str, Any]]) -> str:
    cols = ["pretrain_s", "mask_s", "filler_ft_s", "fill_s", "lm_finetune_s", "evaluate_s"]
    out = ["| technique | method | " + " | ".join(c[:-2] + " (s)" for c in cols) + " |",
           "|:---|:---|" + "---:|" * len(cols)]
    for r in rows:
        out.append(f"| {r['technique'] or '-'} | {r['method']} | " +
                   " | ".join("" if r.get(c) in (None, "") else f"{float(r[c]):.0f}" for c in cols) + " |")
    return "\n".join(out) + "\n"


def wer_markdown(rows: Sequence[dict[str, Any]], methods: Sequence[str], techniques: Sequence[str]) -> str:
    """The paper's Table 6: WER (%) of the recogniser with each method's LM fused in; "" without WER rows."""
    no_lm = next((r for r in rows if r["method"] == "no_lm" and r.get("wer") is not None), None)
    if no_lm is None:
        return ""
    cell = {(r["technique"], r["method"]): r for r in rows if r.get("wer") is not None}
    lines = [f"Word error rate (%) on {no_lm.get('asr_test_utterances', '?')} test utterances, the n-best list "
             f"rescored with log p_asr + λ·log p_LM + β·words; λ = {no_lm['asr_lambda']:g} and "
             f"β = {no_lm['asr_beta']:g} were tuned once on the development split with the Oracle LM and fixed "
             "for every method.", "",
             "| method | " + " | ".join(techniques) + " |", "|---|" + "---|" * len(techniques)]
    for m in ["no_lm"] + [m for m in methods if m != "no_lm"]:
        vals = []
        for t in techniques:
            r = cell.get(("", m)) or cell.get((t, m))
            vals.append("" if r is None else f"{r['wer']:.2f}")
        if any(vals):
            lines.append(f"| {m} | " + " | ".join(vals) + " |")
    o = no_lm.get("nbest_oracle_wer")
    if o is not None:
        lines.append("| n-best oracle (the best any rescoring could do) | " + " | ".join(f"{o:.2f}" for _ in techniques) + " |")
    return "\n".join(lines) + "\n"
