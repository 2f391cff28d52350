"""Report stage: results.csv and results.md (the paper's layout: one row per method, one column per technique)."""

from __future__ import annotations

import math
from typing import Any, Sequence

from veil.downstream.asr.stage import COLUMNS as ASR_COLUMNS
from veil.downstream.task.stage import COLUMNS as TASK_COLUMNS
from veil.io.tables import csv_text
from veil.numeric import sample_std

COLUMNS = ["technique", "method", "perplexity", "masked_share", "gap_recovered", "perplexity_std", "gap_recovered_std",
           "seeds", "perplexity_seeds", "train_docs", "train_words", "test_words", "pretrain_s", "mask_s",
           "filler_ft_s", "fill_s", "lm_finetune_s", "evaluate_s", "computed", "lm_dir",
           # the evaluations beside perplexity name their own columns (empty without their section)
           *TASK_COLUMNS, *ASR_COLUMNS]


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
        r["perplexity_std"] = sample_std(seeds)
        g = gstd = None
        b = b0.get(r["technique"])
        if oracle is not None and b is not None and r["method"] != "oracle":
            g = _gap(b["perplexity"], oracle["perplexity"], r["perplexity"])
            per = [_gap(bs, os_, ms) for bs, os_, ms in zip(b.get("perplexity_seeds") or [b["perplexity"]],
                                                           oracle.get("perplexity_seeds") or [oracle["perplexity"]],
                                                           seeds)]
            gstd = sample_std([x for x in per if x is not None]) if r["method"] != "baseline0" else None
        r["gap_recovered"] = g
        r["gap_recovered_std"] = gstd


def to_csv(rows: Sequence[dict[str, Any]]) -> str:
    """results.csv: one row per (technique, method), the :data:`COLUMNS`; a list (per-seed values) as one cell."""
    return csv_text(rows, COLUMNS, lambda v: " ".join(f"{x:.4f}" for x in v) if isinstance(v, (list, tuple)) else v)


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
