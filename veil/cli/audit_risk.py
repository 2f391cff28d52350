"""Audit stage CLI: ``veil audit risk GOLD --format {tab,presidio,conll,switchboard_pii} --masker NAME [...]``.

Masks the gold set's texts with the named maskers, lists the gold PI the masking missed or only
partly masked, scores each document with the Dialpad infoType scores and prints the corpus
statistics in the layout of the paper's Table 4 (``--json``: one JSON object, the Total row).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from veil.cli.common import count
from veil.textforms import FORMS

log = logging.getLogger(__name__)

STAT_KEYS = ("documents", "mean", "std", "p95", "max", "mean_plus_std", "pass")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("gold", metavar="GOLD", help="gold file: TAB JSONL, Presidio synthetic JSON, CoNLL/WNUT or switchboard_pii JSONL")
    from veil.registry import gold_formats

    p.add_argument("--format", required=True, choices=gold_formats.names(), help="gold file format")
    from veil.cli.common import add_maskers, add_set

    add_maskers(p, help="maskers to audit, by registry name (see `veil ls`)")
    add_set(p)
    p.add_argument("--json", action="store_true",
                   help='print only {"documents", "mean", "std", "p95", "max", "mean_plus_std", "pass"}')
    p.add_argument("--details", metavar="FILE", help="write the missed PI of every document here (JSONL)")
    p.add_argument("-o", "--output", "--out", dest="out", metavar="DIR",
                   help="also write risk_table.{md,csv}, risk_by_tag.csv, details.jsonl and risk_hist.png here")
    p.add_argument("--scores", metavar="CSV", help="infoType score table (default: the paper's Table 6)")
    p.add_argument("--type-map", nargs="+", action="extend", default=[], metavar="GOLD=TAG",
                   help="map a gold entity type to an infoType tag (GOLD= for unscored); repeated or space-separated")
    p.add_argument("--group-by", metavar="KEY",
                   help="document metadata key naming each document's group (default for TAB: dataset_type)")
    p.add_argument("--transform", choices=FORMS, default="none",
                   help="audit the text in this form: lower-cased, or as speech recognition writes it "
                        "(gold spans remapped; see veil.textforms)")
    p.add_argument("--limit", type=count, metavar="N", help="audit only the first N gold documents")
    p.add_argument("--batch-size", type=int, default=64, help="documents per masking batch (default 64)")


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from veil.audit import risk
    from veil.cli.common import maskers_of, parse_options, progress_of
    from veil.errors import VeilError
    from veil.mask.gold import read_gold
    from veil.run.components import build_engine
    from veil.textforms import transform_documents

    table = risk.ScoreTable.load(args.scores) if args.scores else risk.default_table()
    type_map = risk.parse_type_map(args.type_map, table)
    gold = read_gold(args.gold, args.format)
    if args.limit is not None:
        if args.limit < 1:
            raise VeilError("--limit must be at least 1")
        gold = gold[: args.limit]
    gold = transform_documents(gold, args.transform)
    if args.batch_size < 1:
        raise VeilError("--batch-size must be at least 1")
    group_by = args.group_by or ("dataset_type" if args.format == "tab" else None)
    names = maskers_of(args)
    engine = build_engine(names, options=parse_options(args.set, names))
    log.info("masking %d gold documents with %s", len(gold), " + ".join(names))
    docs = [g.doc for g in gold]
    masks = []
    for i in tqdm(range(0, len(docs), args.batch_size), desc="masking", unit="batch", file=sys.stderr,
                  disable=not progress_of(args)):
        masks.extend(engine.detect(docs[i:i + args.batch_size]))
    risks = risk.audit_against_gold(gold, masks, args.format, table, type_map, group_by)
    rows = risk.group_table(risks)
    total = rows[-1]

    if args.details:
        risk.write_details(args.details, risks)
    if args.out:
        risk.write_report(args.out, risks, rows, title=f"{args.format}: {' + '.join(names)}")
    if args.json:
        print(json.dumps({k: total[k] for k in STAT_KEYS}))
        return 0
    print(f"Residual risk of {' + '.join(names)} on {args.gold} ({args.format}, "
          f"{len(risks)} documents, text form {args.transform})\n")
    print(risk.format_table(rows))
    print()
    tags = risk.tag_table(risks)
    if tags:
        print("| missed tag | documents | pieces | mentions | score |")
        print("|---|---:|---:|---:|---:|")
        for t in tags:
            print(f"| {t['tag']} | {t['documents']} | {t['pieces']} | {t['mentions']} | {t['score']} |")
    n_unscored = sum(len(r.unscored) for r in risks)
    if n_unscored:
        print(f"\n{n_unscored} missed gold mentions have no infoType score (see --details); "
              f"map them with --type-map GOLD=TAG")
    verdict = "PASSES" if total["pass"] else "FAILS"
    print(f"\n{verdict} the criterion mean + std < {risk.THRESHOLD:g}: {total['mean_plus_std']:.2f}")
    return 0
