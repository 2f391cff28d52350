"""Report stage: a self-contained report.html (tables + matplotlib plots inlined as base64 PNG).

Extra sections (e.g. the privacy audit's tables and plots) are included from files listed in the
experiment file (``report: {extra: [...]}``) and from ``OUT/audit/``: ``.html`` fragments are
inlined, ``.png`` / ``.svg`` become images, ``.md`` / ``.csv`` / ``.txt`` are shown as text.
"""

from __future__ import annotations

import base64
import html
import io
import math
from pathlib import Path
from typing import Any, Sequence


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def plots(rows: Sequence[dict[str, Any]], methods: Sequence[str], techniques: Sequence[str]) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out: dict[str, str] = {}
    cell = {(r["technique"], r["method"]): r for r in rows}
    oracle = cell.get(("", "oracle"))
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / max(1, len(methods))
    for i, m in enumerate(methods):
        ys = []
        for t in techniques:
            r = oracle if m == "oracle" else cell.get((t, m))
            ys.append(r["perplexity"] if r and math.isfinite(r["perplexity"]) else float("nan"))
        ax.bar([j + i * width for j in range(len(techniques))], ys, width, label=m)
    ax.set_xticks([j + width * (len(methods) - 1) / 2 for j in range(len(techniques))], techniques)
    ax.set_ylabel("perplexity per word")
    ax.set_title("Perplexity of the adapted LM by method and masking technique")
    ax.legend(fontsize=8, ncol=2)
    out["perplexity"] = _png(fig)

    fig, ax = plt.subplots(figsize=(8, 4))
    gm = [m for m in methods if m not in ("oracle", "baseline0")]
    width = 0.8 / max(1, len(gm))
    for i, m in enumerate(gm):
        ys = [100 * cell[(t, m)]["gap_recovered"] if (t, m) in cell and cell[(t, m)].get("gap_recovered") is not None
              else float("nan") for t in techniques]
        ax.bar([j + i * width for j in range(len(techniques))], ys, width, label=m)
    ax.axhline(100, color="grey", lw=0.8, ls="--")
    ax.set_xticks([j + width * (len(gm) - 1) / 2 for j in range(len(techniques))], techniques)
    ax.set_ylabel("gap recovered (%)")
    ax.set_title("Share of the Baseline0 - Oracle perplexity gap recovered")
    ax.legend(fontsize=8, ncol=2)
    out["gap"] = _png(fig)

    fig, ax = plt.subplots(figsize=(6, 3))
    shares = []
    for t in techniques:
        r = next((r for r in rows if r["technique"] == t and r.get("masked_share") is not None), None)
        shares.append(100 * r["masked_share"] if r else float("nan"))
    ax.bar(techniques, shares, color="tab:gray")
    ax.set_ylabel("masked words (%)")
    ax.set_title("Share of masked tokens in the training corpus")
    out["share"] = _png(fig)
    return out


def _md_table_to_html(md: str) -> str:
    rows = [l for l in md.splitlines() if l.startswith("|") and not set(l) <= set("|-")]
    if not rows:
        return ""
    cells = [[c.strip() for c in r.strip("|").split("|")] for r in rows]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cells[0])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in cells[1:])
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def extra_sections(files: Sequence[Path]) -> str:
    parts = []
    for f in files:
        if not f.is_file():
            continue
        title = f"<h3>{html.escape(f.name)}</h3>"
        suf = f.suffix.lower()
        if suf in (".html", ".htm"):
            parts.append(title + f.read_text(encoding="utf-8"))
        elif suf == ".png":
            data = base64.b64encode(f.read_bytes()).decode()
            parts.append(title + f'<img alt="{html.escape(f.name)}" src="data:image/png;base64,{data}">')
        elif suf == ".svg":
            parts.append(title + f.read_text(encoding="utf-8"))
        elif suf == ".md" and "|" in f.read_text(encoding="utf-8"):
            parts.append(title + _md_table_to_html(f.read_text(encoding="utf-8")))
        elif suf in (".md", ".csv", ".txt", ".json"):
            parts.append(title + "<pre>" + html.escape(f.read_text(encoding="utf-8")[:20000]) + "</pre>")
    return "\n".join(parts)


def render_html(title: str, results_md: str, times_md: str, imgs: dict[str, str], extra: str, notes: str = "") -> str:
    img = "".join(f'<figure><img alt="{k}" src="{v}"></figure>' for k, v in imgs.items())
    audit = f"<h2>Privacy audit</h2>{extra}" if extra else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto;}}table{{border-collapse:collapse;margin:1em 0}}
td,th{{border:1px solid #bbb;padding:3px 8px;text-align:right}}th{{background:#eee}}img{{max-width:100%}}</style>
</head><body>
<h1>{html.escape(title)}</h1>
<p>{html.escape(notes)}</p>
<h2>Perplexity (gap recovered)</h2>
{_md_table_to_html(results_md)}
{img}
<h2>Wall time per stage</h2>
{_md_table_to_html(times_md)}
{audit}
</body></html>
"""
