"""CLI: ``veil eval-detect GOLD --format {tab,presidio,conll,switchboard_pii,review,sgd} --masker NAME ...`` scores masking.

Prints recall (TAB, switchboard_pii and a ``veil review --export gold`` file: mention, token and entity
level for DIRECT and QUASI identifiers; other formats: per type) beside the share of all words masked
and the precision; switchboard_pii and review files also the type accuracy. ``--json`` prints exactly
one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from veil.cli.common import count
from veil.textforms import FORMS


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("gold", help="gold file: TAB JSONL, Presidio synthetic JSON, a CoNLL/WNUT BIO file, or "
                                "switchboard_pii JSONL (annotated telephone conversations), or what `veil review --export "
                                "gold` writes")
    from veil.registry import gold_formats

    p.add_argument("--format", required=True, choices=gold_formats.names(),
                   help="gold file format (review: a human review of your own corpus)")
    from veil.cli.common import add_maskers, add_set

    add_maskers(p, help="maskers to run (see `veil ls`)")
    add_set(p)
    p.add_argument("--exclude", nargs="+", action="extend", default=[], metavar="TERM",
                   help="never mask these terms (repeated or space-separated)")
    p.add_argument("--add-terms", default=None, metavar="FILE",
                   help="always mask these terms, term<TAB>TYPE a line (the deny_list masker; as veil mask)")
    p.add_argument("--transform", choices=FORMS, default="none",
                   help="score the text in this form: lower-cased, or as speech recognition writes it "
                        "(gold spans remapped; see veil.textforms)")
    p.add_argument("--limit", type=count, default=None, help="score only the first N documents")
    p.add_argument("--show-missed", type=count, default=0, metavar="N",
                   help="also print up to N gold mentions left unmasked, with masked context")
    p.add_argument("--show-false-positives", type=count, default=0, metavar="N",
                   help="also print the N most frequent masked words outside every gold mention")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def _fmt(x: float | None) -> str:
    return "   -  " if x is None else f"{x:6.3f}"

def print_table(result: dict[str, Any], maskers: list[str], n_docs: int, seconds: float) -> None:
    print(f"maskers: {' + '.join(maskers)}   documents: {n_docs}   text form: {result.get('transform', 'none')}   "
          f"time: {seconds:.1f}s")
    if "DIRECT" in result:
        print(f"{'identifiers':<12} {'mention':>7} {'token':>7} {'entity':>7} {'mentions':>9} {'entities':>9}")
        for t in ("DIRECT", "QUASI"):
            r = result[t]
            print(f"{t:<12} {_fmt(r['mention_recall']):>7} {_fmt(r['token_recall']):>7} "
                  f"{_fmt(r['entity_recall']):>7} {r['mentions']:>9} {r['entities']:>9}")
        print()
    else:
        r = result["overall"]
        print(f"overall recall: mention {_fmt(r['mention_recall'])}  token {_fmt(r['token_recall'])}  "
              f"({r['mentions']} mentions)\n")
    print(f"{'type':<20} {'mention':>7} {'token':>7} {'mentions':>9}")
    for k, r in result["per_type"].items():
        print(f"{k:<20} {_fmt(r['mention_recall']):>7} {_fmt(r['token_recall']):>7} {r['mentions']:>9}")
    print(f"\nmasked token share: {result['masked_token_share']:.3f} "
          f"({result['masked_words']} of {result['words']} words); "
          f"precision: {_fmt(result['precision']).strip()} (share of masked words inside gold mentions)")
    if "type_accuracy" in result:
        print(f"type accuracy: {_fmt(result['type_accuracy']).strip()} ({result['typed_right']} of "
              f"{result['typed_pairs']} masked spans on DIRECT/QUASI mentions typed as the gold type)")

def run(args: argparse.Namespace) -> int:
    from veil.cli.common import maskers_of, parse_options
    from veil.mask.evaluate import evaluate, false_positive_words, missed_mentions
    from veil.mask.gold import read_gold
    from veil.run.components import build_engine
    from veil.textforms import transform_documents

    from veil.cli.common import add_terms_masker

    maskers, options = add_terms_masker(maskers_of(args), parse_options(args.set, maskers_of(args)), args.add_terms)
    golds = read_gold(args.gold, args.format)
    if args.limit is not None:
        golds = golds[: max(0, args.limit)]
    golds = transform_documents(golds, args.transform)
    engine = build_engine(maskers, options=options, exclude=args.exclude)
    t0 = time.perf_counter()
    detected = engine.detect([g.doc for g in golds])
    seconds = time.perf_counter() - t0
    result = evaluate(golds, detected, args.format)
    result["transform"] = args.transform
    if args.json:
        out = {k: v for k, v in result.items()}
        out["maskers"] = maskers
        out["documents"] = len(golds)
        json.dump(out, sys.stdout)
        sys.stdout.write("\n")
    else:
        print_table(result, maskers, len(golds), seconds)
    if args.show_missed:
        stream = sys.stderr if args.json else sys.stdout
        print(f"\nmissed mentions (first {args.show_missed}):", file=stream)
        for m in missed_mentions(golds, detected, limit=args.show_missed):
            print(f"  [{m['identifier_type'] or m['label']}/{m['label']}] {m['mention']!r}: {m['context']}", file=stream)
    if args.show_false_positives:
        stream = sys.stderr if args.json else sys.stdout
        words = list(false_positive_words(golds, detected).items())[: args.show_false_positives]
        print(f"\nmost frequent false-positive words (first {args.show_false_positives}): "
              + ", ".join(f"{w} {n}" for w, n in words), file=stream)
    return 0
