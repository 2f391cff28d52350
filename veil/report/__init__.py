"""Report stage: tables and a self-contained HTML report with plots."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence


def write_results(rows: list[dict[str, Any]], out: Path, spec: Any = None, html: bool = True,
                  methods: Sequence[str] | None = None, techniques: Sequence[str] | None = None,
                  examples: list[dict[str, Any]] | None = None) -> None:
    """DIR/results.csv and DIR/results.md (always), DIR/report.html when ``html``.

    ``examples``: training documents shown original -> masked -> filled (see
    :func:`veil.report.examples.collect_examples`); the report then holds their original text.
    """
    from veil.downstream.asr.stage import wer_markdown
    from veil.downstream.task.stage import task_markdown
    from veil.io.atomic import write_text_atomic
    from veil.report.tables import add_gap, to_csv, to_markdown, wall_times_markdown

    out = Path(out)
    add_gap(rows)
    methods = list(methods or dict.fromkeys(r["method"] for r in rows))
    techniques = list(techniques or dict.fromkeys(r["technique"] for r in rows if r["technique"]))
    title = f"veil experiment: {getattr(spec, 'name', '')}".rstrip(": ")
    write_text_atomic(out / "results.csv", to_csv(rows))
    md = to_markdown(rows, methods, techniques, title)
    times = wall_times_markdown(rows)
    wer = wer_markdown(rows, methods, techniques)
    task_md = task_markdown(rows, methods, techniques, getattr(spec, "task", None))
    write_text_atomic(out / "results.md", md + (f"\n{task_md}" if task_md else "")
                 + (f"\n### Word error rate with the LM fused in (ASR)\n\n{wer}" if wer else "")
                 + "\n### Wall time per stage (seconds, when computed)\n\n" + times)
    if html:
        from veil.report.html import describe_method, extra_sections, method_colours, noise_note, plots, render_html

        extra_files = list(getattr(spec, "report_extra", []) or [])
        audit = out / "audit"
        if audit.is_dir():  # files, and audit output folders (e.g. OUT/audit/ppmlm/)
            extra_files += sorted(audit.iterdir())
        notes = ""
        if spec is not None:
            notes = (f"train: {spec.train.path} ({rows[0].get('train_docs', 0) if rows else 0} documents); "
                     f"test: {spec.test.path}; pre-training: {spec.pretrain.path if spec.pretrain else '-'}")
        colours = method_colours(methods)
        variants = {v.name: v for v in getattr(spec, "variants", None) or []}
        legend = [{"name": m, "colour": colours[m], "text": describe_method(m, variants.get(m))} for m in methods]
        for ex in examples or []:
            for row in ex["rows"]:
                for f in row["fills"]:
                    f["colour"] = colours.get(f["method"], "#888")
        page = render_html(title=title, results_md=md, times_md=times, figures=plots(rows, methods, techniques, colours),
                           audit=extra_sections(extra_files), legend=legend, techniques=techniques,
                           noise=noise_note(rows), examples=examples or [], notes=notes, task_md=task_md,
                           wer_md=wer)
        write_text_atomic(out / "report.html", page)
