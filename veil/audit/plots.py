"""Audit stage: writing audit tables (CSV, JSONL) and plots (PNG) atomically.

Every file is written to a temporary name in its folder and renamed into place, so a reader never
sees half a table (:mod:`veil.io.atomic`: never through a symbolic link). Tables and figures are
rendered by :mod:`veil.io.tables`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from veil.io.atomic import write_bytes_atomic, write_text_atomic
from veil.io.tables import csv_text, float_cells, figure_png, pyplot
from veil.numeric import sample_std


def write_text(path: str | Path, text: str) -> None:
    write_text_atomic(path, text)


def write_csv(path: str | Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> None:
    write_text(path, csv_text(rows, list(columns or (rows[0].keys() if rows else [])), float_cells(".6g")))


def write_jsonl(path: str | Path, records: Iterable[Mapping[str, Any]]) -> None:
    write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


def save_figure(fig: Any, path: str | Path) -> None:
    write_bytes_atomic(path, figure_png(fig))


def plot_risk_histogram(scores_by_group: Mapping[str, Sequence[float]], threshold: float, path: str | Path,
                        title: str = "") -> None:
    """Histogram of document risk scores per group, with mean + std and the threshold marked."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    all_scores = [s for v in scores_by_group.values() for s in v]
    top = int(max(all_scores, default=0)) + 1
    bins = [b - 0.5 for b in range(0, top + 2)]
    ax.hist(list(scores_by_group.values()), bins=bins, label=list(scores_by_group), stacked=True)
    n = len(all_scores)
    if n:
        mean = sum(all_scores) / n
        std = sample_std(all_scores) or 0.0
        ax.axvline(mean + std, color="black", linestyle="--", label=f"μ+σ = {mean + std:.1f}")
    ax.axvline(threshold, color="red", label=f"threshold {threshold:g}")
    ax.set_xlabel("residual risk score per document")
    ax.set_ylabel("documents")
    ax.set_title(title or "Residual risk")
    ax.legend(fontsize="small")
    save_figure(fig, path)


def plot_identifier_cdfs(per_person: Sequence[Mapping[str, Any]], sharing: Sequence[Mapping[str, Any]],
                         path: str | Path, k: int, title: str = "") -> None:
    """Figures 2 and 3 of the PPMLM paper side by side.

    Left: cumulative distribution over persons of their number of direct identifiers, indirect
    identifiers and words. Right: cumulative share of distinct words and of word occurrences used
    by at most m persons.
    """
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    series = [("indirect", f"indirect identifiers (k={k})"), ("direct", "direct identifiers"),
              ("words", "words")]
    for key, label in series:
        vals = sorted(r[key] for r in per_person if key in r)
        if vals:
            ys = [(i + 1) / len(vals) for i in range(len(vals))]
            left.step([max(v, 0.8) for v in vals], ys, where="post", label=label)
    left.set_xscale("log")
    left.set_xlabel("count per person (log)")
    left.set_ylabel("share of persons (cumulative)")
    left.set_title("Identifiers and words per person")
    left.legend(fontsize="small")
    ms = [r["persons"] for r in sharing]
    right.step(ms, [r["cum_share_distinct"] for r in sharing], where="post", label="distinct words")
    right.step(ms, [r["cum_share_occurrences"] for r in sharing], where="post", label="word occurrences")
    right.set_xscale("log")
    right.set_xlabel("number of persons using the word (log)")
    right.set_ylabel("cumulative share")
    right.set_ylim(0, 1.02)
    right.set_title("Words shared by persons")
    right.legend(fontsize="small")
    if title:
        fig.suptitle(title)
    save_figure(fig, path)
