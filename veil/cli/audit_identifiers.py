"""Audit stage CLI: ``veil audit identifiers CORPUS --format {switchboard,tab,jsonl} --k 2 --max-n 1 --out DIR``.

Builds the person–word graph of a corpus with a person field, finds direct identifiers (entity
tagger) and indirect identifiers (terms used by fewer than k persons), and writes the statistics of
the PPMLM paper's Figures 2–3 (and Appendices B–C: counts for several k and n) as CSV, markdown and
a PNG plot.

Corpora and their persons:

- ``switchboard``: a folder of SwDA transcripts (``<conversation>.txt``, lines
  ``Speaker|Utterance|DA-tag``), or the parent folder holding ``train/``; one document per
  utterance; the person is the caller, from ``call_con_tab.csv`` (conversation + side A/B ->
  caller id; found beside the transcripts in ``speakers/`` unless ``--speakers`` names it).
- ``tab``: TAB JSONL; one document per case; the person is the case's applicant.
- ``jsonl``: one JSON object a line with ``--text-field`` (default ``text``) and ``--person-field``
  (default ``person``).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from veil.cli.common import count
from veil.errors import VeilError
from veil.types import Document

log = logging.getLogger(__name__)

FORMATS = ("switchboard", "tab", "jsonl")
SWEEP_K = ("2", "3", "5")


#: the direct identifiers' spans, in the output folder (offsets and types, no text)
SPANS = "direct_spans.jsonl"

#: the longest n-grams counted (the paper's Appendix C goes to 5; each n is a pass over the corpus)
MAX_N = 10


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("corpus", metavar="CORPUS", help="corpus file or folder (see --format)")
    p.add_argument("--format", required=True, choices=FORMATS, help="corpus format (decides the person)")
    p.add_argument("--k", type=int, default=2, help="indirect identifier: a term used by fewer than k persons (default 2)")
    p.add_argument("--max-n", type=int, default=1, help="indirect identifiers are n-grams up to this n (default 1: words)")
    from veil.cli.common import add_list, add_maskers, add_set

    add_list(p, "--sweep-k", SWEEP_K, metavar="K", help="also count indirect identifiers for these k (Appendix B)")
    p.add_argument("--sweep-n", type=int, metavar="N",
                   help="... and for every n up to N (Appendix C; default: --max-n)")
    p.add_argument("-o", "--output", "--out", dest="out", metavar="DIR", help="write per_person.csv, sharing.csv, sweep.csv, identifiers.md, "
                                                f"identifiers.png, summary.json here ({SPANS}: the detection, resumable)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    add_maskers(p, help="maskers whose spans are the direct identifiers")
    add_set(p)
    p.add_argument("--no-direct", action="store_true", help="skip direct identifiers (no NER run)")
    p.add_argument("--speakers", metavar="CSV", help="Switchboard call_con_tab.csv (default: found beside the corpus)")
    p.add_argument("--text-field", default="text", help="jsonl: the text field (default text)")
    p.add_argument("--person-field", default="person", help="jsonl: the person field (default person)")
    p.add_argument("--limit", type=count, metavar="N", help="use only the first N documents")
    p.add_argument("--identifiers-out", metavar="FILE",
                   help="write each person's identifiers as JSONL {person, direct, indirect} (sensitive!)")
    p.add_argument("--overwrite", action="store_true",
                   help="detect the direct identifiers again although OUT/direct_spans.jsonl holds another run's")
    from veil.run.executors import add_executor_arguments

    add_executor_arguments(p)


def load_corpus(path: str | Path, fmt: str, speakers: str | Path | None = None, text_field: str = "text",
                person_field: str = "person") -> list[Document]:
    """The corpus with every document's person (see the module docstring), through :mod:`veil.io.corpora`."""
    from veil.io.corpora import load_corpus as load
    from veil.io.formats import Fields

    if fmt not in FORMATS:
        raise VeilError(f"unknown corpus format {fmt!r}; choose from {', '.join(FORMATS)}")
    fields = {"tab": Fields(person="applicant"), "jsonl": Fields(text=text_field, person=person_field)}.get(fmt)
    return load(path, fmt, fields, person_required=True, speakers=speakers if fmt == "switchboard" else None)


# --- the command ------------------------------------------------------------------------------------------

def sweep(graph, ks=(2, 3, 5), ns=None) -> list[dict]:
    """Indirect identifiers per person for several k and n (Appendices B–C, Figures 8 and 10)."""
    import statistics

    from veil.audit.identifiers import indirect_identifiers

    rows = []
    for n in ns or range(1, graph.max_n + 1):
        for k in ks:
            ind = indirect_identifiers(graph, k=k, max_n=n)
            counts = [len(v) for v in ind.values()]
            rows.append({"k": k, "max_n": n, "indirect_total": len(set().union(*ind.values())),
                         "mean_per_person": statistics.fmean(counts), "median_per_person": statistics.median(counts),
                         "share_persons_with_none": sum(1 for c in counts if c == 0) / len(counts)})
    return rows


def run(args: argparse.Namespace) -> int:
    from veil.audit import identifiers as ids
    from veil.audit import plots

    if args.k < 2 or args.max_n < 1:
        raise VeilError("--k must be at least 2 and --max-n at least 1")
    if args.max_n > MAX_N or (args.sweep_n or 0) > MAX_N:
        raise VeilError(f"--max-n and --sweep-n count words per n-gram: at most {MAX_N}")
    from veil.cli.common import list_value, maskers_of, parse_options, progress_of

    try:
        sweep_k = sorted({int(x) for x in list_value(args.sweep_k, SWEEP_K)})
    except ValueError:
        raise VeilError(f"--sweep-k takes integers, not {' '.join(args.sweep_k)!r}") from None
    if any(k < 2 for k in sweep_k):
        raise VeilError("--sweep-k values must be at least 2")
    sweep_n = args.sweep_n or args.max_n
    if sweep_n < 1:
        raise VeilError("--sweep-n must be at least 1")
    docs = load_corpus(args.corpus, args.format, args.speakers, args.text_field, args.person_field)
    if args.limit is not None:
        docs = docs[: args.limit]
    log.info("%d documents, %d persons", len(docs), len({d.person for d in docs}))
    graph = ids.person_word_graph(docs, max_n=max(args.max_n, sweep_n), progress=progress_of(args))
    indirect = ids.indirect_identifiers(graph, k=args.k, max_n=args.max_n)
    direct = None
    if not args.no_direct:
        names = maskers_of(args)
        log.info("direct identifiers: %s over %d documents", " + ".join(names), len(docs))
        from veil.run.executors import executor_of

        # kept beside the tables: an interrupted run resumes, a finished one is read back (veil.run.detect)
        spans_file = Path(args.out) / SPANS if args.out else None
        direct = ids.direct_identifiers(docs, names, parse_options(args.set, names), progress=progress_of(args),
                                        executor=executor_of(args), spans_file=spans_file, overwrite=args.overwrite)
    summary = ids.summary(graph, indirect, args.k, direct, max_n=args.max_n)
    people = ids.per_person_table(graph, indirect, direct, max_n=args.max_n)
    sharing = ids.sharing_table(graph, 1)
    sweep_rows = sweep(graph, sweep_k, range(1, sweep_n + 1))

    if args.out:
        out = Path(args.out)
        plots.write_csv(out / "per_person.csv", people)
        plots.write_csv(out / "sharing.csv", sharing)
        plots.write_csv(out / "sweep.csv", sweep_rows)
        plots.write_text(out / "summary.json", json.dumps(summary, indent=2) + "\n")
        plots.write_text(out / "identifiers.md", render_markdown(summary, sharing, sweep_rows, args))
        plots.plot_identifier_cdfs(people, sharing, out / "identifiers.png", args.k,
                                   title=f"{Path(args.corpus).name} ({args.format}): {summary['persons']} persons")
        log.info("wrote %s", out)
    if args.identifiers_out:
        plots.write_jsonl(args.identifiers_out, (
            {"person": p, "direct": sorted(direct.get(p, ())) if direct else None, "indirect": sorted(indirect[p])}
            for p in graph.persons))
    if args.json:
        print(json.dumps(summary))
    else:
        sys.stdout.write(render_markdown(summary, sharing, sweep_rows, args))
    return 0


def render_markdown(summary: dict, sharing: list[dict], sweep_rows: list[dict], args: argparse.Namespace) -> str:
    from veil.io.tables import markdown_table

    ipp = summary["indirect_per_person"]
    lines = [f"### Identifiers: {args.corpus} ({args.format}, k={args.k}, n≤{args.max_n})", "",
             "| statistic | value |", "|---|---:|",
             f"| persons | {summary['persons']} |", f"| documents | {summary['documents']} |",
             f"| word occurrences | {summary['words']} |", f"| distinct words | {summary['distinct_words']} |",
             f"| distinct words used by one person | {summary['share_distinct_words_one_person']:.1%} |",
             f"| word occurrences of those words | {summary['share_word_occurrences_one_person']:.1%} |",
             f"| distinct indirect identifiers (k={args.k}, n≤{args.max_n}) | {summary['indirect_total']} |",
             f"| indirect identifiers per person: mean / median / max | {ipp['mean']:.1f} / {ipp['median']:.0f} / "
             f"{ipp['max']:.0f} |",
             f"| persons with no indirect identifier | {ipp['share_zero']:.1%} |"]
    if "direct_per_person" in summary:
        dpp = summary["direct_per_person"]
        lines += [f"| distinct direct identifiers | {summary['direct_total']} |",
                  f"| direct identifiers per person: mean / median / max | {dpp['mean']:.1f} / "
                  f"{dpp['median']:.0f} / {dpp['max']:.0f} |",
                  f"| persons with no direct identifier | {dpp['share_zero']:.1%} |"]
    wpp = summary["words_per_person"]
    lines += [f"| words per person: mean / median | {wpp['mean']:.0f} / {wpp['median']:.0f} |", ""]
    lines += ["Words by the number of persons using them (Figure 3; first rows):", "",
              markdown_table(sharing[:10], ["persons", "distinct_terms", "occurrences", "cum_share_distinct",
                                            "cum_share_occurrences"]), "",
              "Indirect identifiers per person for several k and n (Appendices B–C):", "",
              markdown_table(sweep_rows, ["k", "max_n", "indirect_total", "mean_per_person", "median_per_person",
                                          "share_persons_with_none"], digits=2), ""]
    return "\n".join(lines) + "\n"
