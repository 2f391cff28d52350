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
import logging
import math
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
    from veil.io.tables import figure_png

    return "data:image/png;base64," + base64.b64encode(figure_png(fig, dpi=110)).decode()


def describe_technique(name: str) -> str:
    """The masker's own description (``Masker.description``), else a pointer to ``veil ls``."""
    from veil.registry import maskers

    return (getattr(maskers.get(name), "description", "") if name in maskers else "") or "see veil ls"


def describe_method(name: str, variant: Any = None) -> str:
    """One sentence for the legend: the variant's own (a baseline's, see ``veil.experiment.spec.BASELINES``),
    or one made from the method's settings, its filler's and strategy's descriptions."""
    if variant is not None and getattr(variant, "description", None):
        return variant.description
    if variant is None or not getattr(variant, "filler", None):
        return "see the experiment file"
    from veil.fill.strategies import DESCRIPTIONS
    from veil.registry import fillers

    filler = (getattr(fillers.get(variant.filler), "description", "") if variant.filler in fillers else "")
    strategy = variant.strategy if variant.strategy != "topk" else f"topk (K={variant.k})"
    text = (f"the masked text filled by {filler or variant.filler}: every placeholder "
            f"replaced by {DESCRIPTIONS.get(variant.strategy, variant.strategy)} [{strategy}]")
    if variant.options.get("avoid_proposals"):
        text += ", proposals kept off the technique's word list"
    if variant.options.get("types") == "on":
        text += ", spans the masker labelled (names, places, organisations) given a drawn value of their type"
    if variant.finetune:
        text += f", after fine-tuning the filler on this corpus ({', '.join(f'{k}={v}' for k, v in variant.finetune.items())})"
    if getattr(variant, "techniques", None):
        text += f" ({', '.join(variant.techniques)} only)"
    return text


def method_colours(methods: Sequence[str]) -> dict[str, str]:
    """One colour per method, the same in every chart, the legend and the examples."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    cmap = colormaps["tab10" if len(methods) <= 10 else "tab20"]
    return {m: to_hex(cmap(i % cmap.N)) for i, m in enumerate(methods)}


def plots(rows: Sequence[dict[str, Any]], methods: Sequence[str], techniques: Sequence[str],
          colours: dict[str, str] | None = None) -> list[dict[str, str]]:
    """The report's figures: perplexity per method and technique, gap recovered, share masked."""
    from veil.io.tables import pyplot

    plt = pyplot()
    colours = colours or method_colours(methods)
    out: list[dict[str, str]] = []
    cell = {(r["technique"], r["method"]): r for r in rows}

    def ppl(t: str, m: str) -> float:
        r = cell.get(("", m)) or cell.get((t, m))  # oracle / pretrained: one value for every technique
        return r["perplexity"] if r and math.isfinite(r["perplexity"]) else float("nan")

    # A dot per method on one axis per technique. The un-adapted model is far off the scale of the
    # others (tens of thousands against hundreds), so it is left out of the plot and named in the caption.
    apart = [m for m in methods if m == "pretrained"]
    shown = [m for m in methods if m not in apart]
    fig, axes = plt.subplots(1, max(1, len(techniques)), figsize=(3.4 * max(1, len(techniques)), 0.45 * len(shown) + 1.4),
                             sharey=True, squeeze=False)
    for ax, t in zip(axes[0], techniques):
        for i, m in enumerate(shown):
            y = len(shown) - 1 - i
            ax.plot([ppl(t, m)], [y], "o", color=colours[m], ms=8)
            r = cell.get((t, m)) or cell.get(("", m))
            if r is not None and r.get("perplexity_std"):
                ax.errorbar([ppl(t, m)], [y], xerr=[r["perplexity_std"]], color=colours[m], capsize=3)
        ax.set_title(t)
        ax.grid(axis="x", alpha=.3)
        ax.set_xlabel("perplexity per word")
    axes[0][0].set_yticks(range(len(shown)), list(reversed(shown)))
    for lab in axes[0][0].get_yticklabels():
        lab.set_color(colours[lab.get_text()])
    fig.tight_layout()
    caption = "Perplexity of the adapted language model (lower is better; the axis does not start at 0)."
    if apart:
        caption += " " + "; ".join(f"{m} (not adapted): {ppl(techniques[0], m):,.0f}, off this scale" for m in apart
                                   if techniques) + "."
    out.append({"alt": "perplexity", "src": _png(fig), "caption": caption})

    gm = [m for m in methods if m not in ("oracle", "baseline0") and ("", m) not in cell]
    if gm:
        fig, ax = plt.subplots(figsize=(8, 3.6))
        width = 0.8 / len(gm)
        for i, m in enumerate(gm):
            ys = [100 * cell[(t, m)]["gap_recovered"] if (t, m) in cell and cell[(t, m)].get("gap_recovered") is not None
                  else float("nan") for t in techniques]
            errs = [100 * (cell[(t, m)].get("gap_recovered_std") or 0) if (t, m) in cell else 0 for t in techniques]
            ax.bar([j + i * width for j in range(len(techniques))], ys, width, label=m, color=colours[m],
                   yerr=errs if any(errs) else None, capsize=3)
        ax.axhline(100, color="grey", lw=0.8, ls="--")
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xticks([j + width * (len(gm) - 1) / 2 for j in range(len(techniques))], techniques)
        ax.set_ylabel("gap recovered (%)")
        ax.legend(fontsize=8, ncol=min(4, len(gm)), loc="upper left", bbox_to_anchor=(1.0, 1.0))
        out.append({"alt": "gap recovered", "src": _png(fig),
                    "caption": "Share of the Baseline0 − Oracle gap each method recovers (100%: as good as the "
                               "original text; below 0: worse than keeping [MASK])."})

    fig, ax = plt.subplots(figsize=(6, 0.35 * len(techniques) + 0.9))
    shares = []
    for t in techniques:
        r = next((r for r in rows if r["technique"] == t and r.get("masked_share") is not None), None)
        shares.append(100 * r["masked_share"] if r else float("nan"))
    ax.barh(techniques, shares, color="#888")
    ax.invert_yaxis()
    ax.set_xlabel("masked words (%)")
    out.append({"alt": "masked share", "src": _png(fig), "caption": "Share of the training words each technique masked."})
    return out


def md_to_html(md: str, top_heading: int | None = None) -> str:
    """Markdown (tables included) as HTML, through markdown-it-py; raw HTML in the text is escaped.
    ``top_heading``: the file's highest heading becomes ``<hN>`` (others keep their distance to it), so
    an audit file's own title sits under the report's section."""
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = parser.parse(md)
    levels = [int(t.tag[1:]) for t in tokens if t.type == "heading_open"]
    if top_heading is not None and levels:
        shift = top_heading - min(levels)
        for tok in tokens:
            if tok.type in ("heading_open", "heading_close"):
                tok.tag = f"h{max(1, min(6, int(tok.tag[1:]) + shift))}"
    return parser.renderer.render(tokens, parser.options, {})


def _file_section(f: Path, level: str = "h3") -> str:
    title = f"<{level}>{html.escape(f.name)}</{level}>"
    suf = f.suffix.lower()
    if suf in (".html", ".htm", ".svg"):
        return title + f.read_text(encoding="utf-8")
    if suf == ".png":
        data = base64.b64encode(f.read_bytes()).decode()
        return title + f'<img alt="{html.escape(f.name)}" src="data:image/png;base64,{data}">'
    if suf == ".md":
        text = f.read_text(encoding="utf-8")
        if text.lstrip().startswith("#"):  # the file has its own title: no file name above it
            return md_to_html(text, top_heading=int(level[1:]))
        return title + md_to_html(text, top_heading=int(level[1:]) + 1)
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


def noise_note(rows: Sequence[dict[str, Any]]) -> str:
    """What the table says about training noise: measured over seeds, or not measured."""
    n = max((int(r.get("seeds") or 1) for r in rows), default=1)
    if n > 1:
        spread = [100 * r["gap_recovered_std"] for r in rows if r.get("gap_recovered_std") is not None]
        return (f"Noise: every cell is the mean over {n} fine-tuning seeds, ± one standard deviation; the gap "
                f"recovered varies by up to ±{max(spread):.0f} points from seed to seed, so smaller differences "
                "between methods are not meaningful." if spread else f"Noise: {n} fine-tuning seeds per cell.")
    return ("Noise: measured with one fine-tuning seed, so differences of a few points of gap recovered may be "
            "training noise (set lm.seeds: 3 in the experiment file to measure it; on Switchboard three seeds "
            "gave ±11 points for entity_tagger, see docs/experiments.md).")


def render_html(*, title: str, results_md: str, times_md: str, figures: list[dict[str, str]], audit: str,
                legend: list[dict[str, str]], techniques: Sequence[str], noise: str, examples: list[dict[str, Any]],
                notes: str = "", task_md: str = "", wer_md: str = "") -> str:
    """report.html from the Jinja2 template ``templates/report.html.j2``."""
    import datetime

    from jinja2 import Environment, PackageLoader, select_autoescape

    from veil import __version__

    env = Environment(loader=PackageLoader("veil.report", "templates"), autoescape=select_autoescape(["j2", "html"]),
                      trim_blocks=True, lstrip_blocks=True)
    return env.get_template("report.html.j2").render(
        title=title, version=__version__, date=datetime.date.today().isoformat(), notes=notes,
        results_table=md_to_html(_table_only(results_md)),
        wer_table=md_to_html(_table_only(wer_md)) if wer_md else "", wer_note=wer_md.split("\n", 1)[0] if wer_md else "",
        times_table=md_to_html(times_md), figures=figures,
        legend=legend, noise=noise, audit=audit, examples=examples,
        task_table=md_to_html(_table_only(task_md)) if task_md else "",
        task_note=next((ln for ln in task_md.splitlines() if ln and not ln.startswith(("#", "|"))), ""),
        technique_help=[{"name": t, "text": describe_technique(t)} for t in techniques],
        examples_note=("A few training documents as each technique masked them and each method filled them. "
                       "The originals are shown because the experiment file asked for examples "
                       "(report: {examples: N}); a report with examples holds private text."))


def _table_only(md: str) -> str:
    """The results table of results.md without its heading and explanation (the template has its own)."""
    return "\n".join(line for line in md.splitlines() if line.startswith("|"))
