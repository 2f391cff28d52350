"""CLI: ``veil eval-detect GOLD --format {tab,presidio,conll} --masker NAME ...`` scores masking against gold spans.

Prints recall (TAB: mention, token and entity level for DIRECT and QUASI identifiers; other
formats: per type) beside the share of all words masked. ``--json`` prints exactly one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from veil.errors import VeilError
from veil.textforms import FORMS

DEFAULT_MASKERS = ("entity_tagger", "dlp")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("gold", help="gold file: TAB JSONL, Presidio synthetic JSON, or a CoNLL/WNUT BIO file")
    p.add_argument("--format", required=True, choices=("tab", "presidio", "conll"), help="gold file format")
    p.add_argument("--masker", action="append", metavar="NAME",
                   help=f"masker to run (repeat to combine; default: {' + '.join(DEFAULT_MASKERS)})")
    p.add_argument("--set", action="append", default=[], metavar="MASKER.OPTION=VALUE",
                   help="masker option, e.g. entity_tagger.labels=PERSON,ORG,DATE or dlp.min_score=0.6 "
                        "(a comma makes a list; numbers and true/false are converted)")
    p.add_argument("--exclude", action="append", default=[], metavar="TERM", help="never mask this term")
    p.add_argument("--transform", choices=FORMS, default="none",
                   help="score the text in this form: lower-cased, or as speech recognition writes it "
                        "(gold spans remapped; see veil.textforms)")
    p.add_argument("--limit", type=int, default=None, help="score only the first N documents")
    p.add_argument("--show-missed", type=int, default=0, metavar="N",
                   help="also print up to N gold mentions left unmasked, with masked context")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def parse_value(raw: str) -> Any:
    low = raw.lower()
    if low in ("true", "false"):
        return low == "true"
    if "," in raw:
        return [v.strip() for v in raw.split(",") if v.strip()]
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            pass
    return raw


def parse_options(items: list[str], maskers: list[str]) -> dict[str, dict[str, Any]]:
    options: dict[str, dict[str, Any]] = {}
    for item in items:
        key, eq, raw = item.partition("=")
        masker, dot, option = key.partition(".")
        if not eq or not dot or not option:
            raise VeilError(f"--set {item!r}: expected MASKER.OPTION=VALUE")
        if masker not in maskers:
            raise VeilError(f"--set {item!r}: masker {masker!r} is not among --masker {', '.join(maskers)}")
        options.setdefault(masker, {})[option] = parse_value(raw)
    return options


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


def run(args: argparse.Namespace) -> int:
    from veil.mask.engine import MaskingEngine
    from veil.mask.evaluate import evaluate, missed_mentions
    from veil.mask.gold import read_gold
    from veil.registry import maskers as masker_registry
    from veil.textforms import transform_documents

    maskers = args.masker or list(DEFAULT_MASKERS)
    for name in maskers:
        if name not in masker_registry:
            raise VeilError(f"unknown masker {name!r}; known: {', '.join(masker_registry.names())}")
    options = parse_options(args.set, maskers)
    golds = read_gold(args.gold, args.format)
    if args.limit is not None:
        golds = golds[: max(0, args.limit)]
    golds = transform_documents(golds, args.transform)
    try:
        engine = MaskingEngine.from_names(maskers, exclude=args.exclude, options=options)
    except TypeError as e:  # an option the masker does not take
        raise VeilError(f"bad masker option: {e}") from None
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
    return 0
