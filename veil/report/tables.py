"""Report stage: results.csv and results.md (the paper's layout: one row per method, one column per technique)."""

from __future__ import annotations

import csv
import io
import math
import os
from pathlib import Path
from typing import Any, Sequence

COLUMNS = ["technique", "method", "perplexity", "masked_share", "gap_recovered", "train_docs", "train_words",
           "test_words", "pretrain_s", "mask_s", "filler_ft_s", "fill_s", "lm_finetune_s", "evaluate_s", "computed"]


def atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def add_gap(rows: list[dict[str, Any]]) -> None:
    """gap recovered = (PPL Baseline0 - PPL method) / (PPL Baseline0 - PPL Oracle), per technique."""
    oracle = next((r["perplexity"] for r in rows if r["method"] == "oracle"), None)
    b0 = {r["technique"]: r["perplexity"] for r in rows if r["method"] == "baseline0"}
    for r in rows:
        g = None
        b = b0.get(r["technique"])
        if oracle is not None and b is not None and r["method"] != "oracle":
            den = b - oracle
            if math.isfinite(den) and den != 0 and math.isfinite(r["perplexity"]):
                g = (b - r["perplexity"]) / den
        r["gap_recovered"] = g


def to_csv(rows: Sequence[dict[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({c: ("" if r.get(c) is None else r.get(c)) for c in COLUMNS})
    return buf.getvalue()


def _fmt_ppl(x: float | None) -> str:
    return "" if x is None else ("inf" if not math.isfinite(x) else f"{x:.2f}")


def to_markdown(rows: Sequence[dict[str, Any]], methods: Sequence[str], techniques: Sequence[str],
                title: str = "") -> str:
    """Perplexity (gap recovered) per method x technique, then the share of masked tokens."""
    cell = {(r["technique"], r["method"]): r for r in rows}
    lines = [f"## {title}" if title else "", "",
             "Perplexity per word of the adapted LM on the untouched test set (gap recovered = "
             "(PPL Baseline0 - PPL method) / (PPL Baseline0 - PPL Oracle)).", "",
             "| method | " + " | ".join(techniques) + " |", "|---|" + "---|" * len(techniques)]
    for m in methods:
        if m == "oracle":
            r = cell.get(("", m))
            v = _fmt_ppl(r["perplexity"]) if r else ""
            lines.append(f"| {m} | " + " | ".join(v for _ in techniques) + " |")
            continue
        vals = []
        for t in techniques:
            r = cell.get((t, m))
            if r is None:
                vals.append("")
                continue
            s = _fmt_ppl(r["perplexity"])
            if r.get("gap_recovered") is not None and m != "baseline0":
                s += f" ({100 * r['gap_recovered']:.0f}%)"
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
           "|---|---|" + "---|" * len(cols)]
    for r in rows:
        out.append(f"| {r['technique'] or '-'} | {r['method']} | " +
                   " | ".join("" if r.get(c) in (None, "") else f"{float(r[c]):.0f}" for c in cols) + " |")
    return "\n".join(out) + "\n"
