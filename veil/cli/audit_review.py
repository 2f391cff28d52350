"""Audit stage CLI: ``veil audit review export|import`` — manual residual-risk review (Dialpad §4.1).

``export CORPUS --format FMT --masker NAME [...] --sample N --seed S --out DIR`` masks a seeded random
sample with numbered placeholders and writes one file per document for reviewers;
``import DIR [--json] [--details FILE]`` reads the files annotated with ``(text)[MISSED_TAG]`` and
prints the residual-risk statistics (the paper's Table 4 layout; ``--json``: the Total row).
"""

from __future__ import annotations

import argparse
import json
import logging

from veil.cli.common import count

log = logging.getLogger(__name__)

CORPUS_FORMATS = ("tab", "presidio", "conll", "switchboard", "jsonl", "text")


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="review_command", metavar="ACTION", required=True)
    e = sub.add_parser("export", help="mask a random sample of documents and write it for human review")
    e.add_argument("corpus", metavar="CORPUS", help="the corpus to sample from")
    e.add_argument("--format", required=True, choices=CORPUS_FORMATS,
                   help="tab / presidio / conll gold files (their texts), switchboard (one document per "
                        "conversation), jsonl (--text-field), text (one document per line)")
    from veil.cli.common import add_maskers, add_set

    add_maskers(e)
    add_set(e)
    e.add_argument("--sample", type=count, default=100, metavar="N", help="documents to sample (default 100)")
    e.add_argument("--seed", type=int, default=0, help="random seed of the sample (default 0)")
    e.add_argument("-o", "--output", "--out", dest="out", required=True, metavar="DIR", help="folder for the review files (must be new)")
    e.add_argument("--text-field", default="text", help="jsonl: the text field (default text)")
    e.add_argument("--group-field", help="jsonl: a field naming each document's group (Table 4's context)")
    from veil.run.executors import add_executor_arguments

    add_executor_arguments(e)
    i = sub.add_parser("import", help="score reviewed files annotated with (text)[MISSED_TAG]")
    i.add_argument("folder", metavar="DIR", help="a folder written by `review export`, after review")
    i.add_argument("--json", action="store_true",
                   help='print only {"documents", "mean", "std", "p95", "max", "mean_plus_std", "pass"}')
    i.add_argument("--details", metavar="FILE", help="write each document's missed PI and score (JSONL)")
    i.add_argument("--scores", metavar="CSV", help="infoType score table (default: the paper's Table 6)")


def _load(args: argparse.Namespace):
    """The corpus to sample from (:mod:`veil.io.corpora`); Switchboard as one document per conversation."""
    from veil.io.corpora import load_corpus
    from veil.io.formats import Fields
    from veil.types import Document

    if args.format == "switchboard":
        by_conv: dict[str, list[str]] = {}
        for d in load_corpus(args.corpus, "switchboard", person_required=True):
            by_conv.setdefault(d.group, []).append(d.text)
        return [Document(id=c, text="\n".join(t), group="switchboard") for c, t in by_conv.items()]
    if args.format == "text":
        return [d for d in load_corpus(args.corpus, "txt") if d.text.strip()]
    if args.format == "jsonl":
        return load_corpus(args.corpus, "jsonl", Fields(text=args.text_field, group=args.group_field))
    return load_corpus(args.corpus, args.format, Fields(group="dataset_type"))  # a gold format


def run(args: argparse.Namespace) -> int:
    from veil.audit import review, risk

    if args.review_command == "export":
        from functools import partial

        from veil.cli.common import maskers_of, parse_options, progress_of
        from veil.run.components import build_engine
        from veil.run.corpus import mask_documents
        from veil.run.executors import executor_of

        names = maskers_of(args)
        executor = executor_of(args)
        make = partial(build_engine, names, "numbered", parse_options(args.set, names))
        engine = make()  # bad names / options: one line, before the sample
        if executor.name != "local":
            engine = make  # every worker builds its own
        docs = review.sample(_load(args), args.sample, args.seed)
        masked = list(mask_documents(docs, engine, executor=executor, progress=progress_of(args),
                                     desc="review sample"))
        out = review.export_sample(masked, args.out, args.seed)
        print(f"wrote {len(masked)} masked documents for review to {out}; see {out / review.INSTRUCTIONS}")
        return 0

    table = risk.ScoreTable.load(args.scores) if args.scores else risk.default_table()
    risks = review.import_reviews(args.folder, table)
    rows = risk.group_table(risks)
    if args.details:
        risk.write_details(args.details, risks)
    if args.json:
        print(json.dumps({k: rows[-1][k] for k in ("documents", "mean", "std", "p95", "max", "mean_plus_std", "pass")}))
        return 0
    print(risk.format_table(rows))
    total = rows[-1]
    print(f"\n{'PASSES' if total['pass'] else 'FAILS'} the criterion mean + std < {risk.THRESHOLD:g}: "
          f"{total['mean_plus_std']:.2f}")
    return 0
