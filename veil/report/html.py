"""Report stage: a self-contained report.html (tables + matplotlib plots inlined as base64 PNG).

Extra sections (e.g. the privacy audit's tables and plots) are included from the paths listed in
the experiment file (``report: {extra: [...]}``) and from ``OUT/audit/``: ``.html`` fragments are
inlined, ``.png`` / ``.svg`` become images, ``.md`` files are rendered (tables as tables, other
lines as paragraphs, so footnotes stay), ``.csv`` / ``.txt`` / ``.json`` are shown as text. A
*folder* is read as an audit output folder (``veil audit ppmlm|risk|identifiers --out DIR``): its
files named in :data:`AUDIT_FILES` are shown in that order, e.g. ``table.md`` and
``privacy_utility.png`` of ``veil audit ppmlm``. A listed path that does not exist is named in the
report (and logged) rather than silently left out.
"""

from __future__ import annotations

import base64
import html
import io
import logging
import math
import re
from pathlib import Path
from typing import Any, Sequence

log = logging.getLogger(__name__)

#: the outputs of an audit folder that the report shows, in this order
AUDIT_FILES: tuple[str, ...] = (
    "table.md", "privacy_utility.png", "roc.png", "regurgitation.png",  # veil audit ppmlm
    "risk_table.md", "risk_hist.png",  # veil audit risk / review
    "identifiers.md", "identifiers.png",  # veil audit identifiers
)


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
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / max(1, len(methods))
    for i, m in enumerate(methods):
        ys = []
        for t in techniques:
            r = cell.get(("", m)) or cell.get((t, m))  # oracle / pretrained: one value for every technique
            ys.append(r["perplexity"] if r and math.isfinite(r["perplexity"]) else float("nan"))
        ax.bar([j + i * width for j in range(len(techniques))], ys, width, label=m)
    ax.set_xticks([j + width * (len(methods) - 1) / 2 for j in range(len(techniques))], techniques)
    ax.set_ylabel("perplexity per word")
    ax.set_title("Perplexity of the adapted LM by method and masking technique")
    ax.legend(fontsize=8, ncol=2)
    out["perplexity"] = _png(fig)

    fig, ax = plt.subplots(figsize=(8, 4))
    gm = [m for m in methods if m not in ("oracle", "baseline0") and ("", m) not in cell]
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
    rows = [l for l in md.splitlines() if l.startswith("|") and not set(l) <= set("|-: ")]
    if not rows:
        return ""
    cells = [[c.strip() for c in r.strip("|").split("|")] for r in rows]
    head = "".join(f"<th>{_inline(c)}</th>" for c in cells[0])
    body = "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in cells[1:])
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _inline(text: str) -> str:
    """Escaped text with markdown's ``**bold**`` kept as bold."""
    return re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", html.escape(text))


def md_to_html(md: str) -> str:
    """A small markdown subset: ``|`` tables, ``#`` headings, every other non-empty line a paragraph."""
    out: list[str] = []
    table: list[str] = []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            table.append(line)
            continue
        if table:
            out.append(_md_table_to_html("\n".join(table)))
            table = []
        s = line.strip()
        if s.startswith("#"):
            out.append(f"<h4>{_inline(s.lstrip('#').strip())}</h4>")
        elif s:
            out.append(f"<p>{_inline(s)}</p>")
    return "\n".join(out)


def _file_section(f: Path, level: str = "h3") -> str:
    title = f"<{level}>{html.escape(f.name)}</{level}>"
    suf = f.suffix.lower()
    if suf in (".html", ".htm", ".svg"):
        return title + f.read_text(encoding="utf-8")
    if suf == ".png":
        data = base64.b64encode(f.read_bytes()).decode()
        return title + f'<img alt="{html.escape(f.name)}" src="data:image/png;base64,{data}">'
    if suf == ".md":
        return title + md_to_html(f.read_text(encoding="utf-8"))
    if suf in (".csv", ".txt", ".json"):
        return title + "<pre>" + html.escape(f.read_text(encoding="utf-8")[:20000]) + "</pre>"
    return ""


def extra_sections(paths: Sequence[Path]) -> str:
    """HTML for the extra files and audit output folders in ``paths`` (see the module docstring)."""
    parts = []
    for p in map(Path, paths):
        if p.name.startswith("."):
            continue  # a temporary file of an atomic write, or a hidden file
        if p.is_dir():
            found = [p / name for name in AUDIT_FILES if (p / name).is_file()]
            if not found:
                log.warning("report: %s holds none of the audit outputs %s", p, ", ".join(AUDIT_FILES))
                parts.append(f"<h3>{html.escape(p.name)}</h3><p>No audit outputs in {html.escape(str(p))}.</p>")
                continue
            parts.append(f"<h3>{html.escape(p.name)}</h3><p>From {html.escape(str(p))}.</p>"
                         + "".join(_file_section(f, "h4") for f in found))
        elif p.is_file():
            parts.append(_file_section(p))
        else:
            log.warning("report: extra path %s does not exist", p)
            parts.append(f"<p>Not found: {html.escape(str(p))}.</p>")
    return "\n".join(x for x in parts if x)


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
