"""Detect and mask command: ``veil mask INPUT -o OUTPUT --masker NAME [...] --placeholder STYLE`` and ``--stats``."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from veil.cli.common import count
from veil.errors import VeilError

log = logging.getLogger(__name__)



def add_arguments(p: argparse.ArgumentParser) -> None:
    from veil.cli.common import add_fields, add_maskers, add_set

    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="corpus file, - = standard input (several with --stats only)")
    p.add_argument("-o", "--output", help="masked corpus to write (- = standard output; format from the extension, "
                                          "else JSONL): the input's fields, text masked, plus placeholders and style")
    add_maskers(p)
    p.add_argument("--placeholder", choices=("mask", "typed", "numbered"), default="numbered",
                   help="numbered: [PERSON_NAME_1], the same entity the same number in a document (default; veil "
                        "fill then gives substitutes of the same type); typed: [PERSON_NAME]; mask: [MASK] per "
                        "token (the paper's)")
    p.add_argument("--placeholder-columns", action="store_true",
                   help="CSV / Parquet output: put placeholders and style into two more columns (JSON text) instead "
                        "of OUTPUT.placeholders.jsonl beside it (the output then keeps only the input's columns)")
    add_set(p)
    p.add_argument("--format", "--input-format", dest="input_format", default=None,
                   help="input format: txt, jsonl, csv, parquet, switchboard (default: from the extension)")
    p.add_argument("--output-format", default=None, help="jsonl, txt, csv, parquet (default: from the extension)")
    add_fields(p)
    p.add_argument("--speakers", default=None, help="Switchboard call_con_tab.csv (default: found beside the corpus)")
    p.add_argument("--drop-field", nargs="+", action="extend", default=[], metavar="FIELD",
                   help="input fields not to copy into the output (e.g. gold spans); repeated or space-separated")
    p.add_argument("--exclude", default=None, metavar="FILE", help="never-mask list, one entry a line")
    p.add_argument("--add-terms", default=None, metavar="FILE",
                   help="always-mask list, term<TAB>TYPE a line (the deny_list masker, run beside --masker); "
                        "`veil review --export terms` writes one from a review")
    p.add_argument("--keep", nargs="+", action="extend", default=[], metavar="TOKEN",
                   help="tokens of the corpus's own mark-up kept verbatim, never masked (e.g. PTB's '<unk>'); "
                        "repeated or space-separated")
    p.add_argument("--batch-size", type=int, default=256, help="documents per batch (default 256)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace OUTPUT if it exists from another input or settings, or start an unfinished run again")
    p.add_argument("--stats", action="store_true",
                   help="print the share of masked word tokens per technique (the paper's Table 2)")
    p.add_argument("--stats-json", default=None, metavar="FILE", help="also write the statistics as JSON")
    p.add_argument("--limit", type=count, default=None, help="only the first N documents")
    from veil.run.executors import add_executor_arguments

    add_executor_arguments(p)


def _fields(args: argparse.Namespace):
    from veil.cli.common import fields_of

    return fields_of(args)


def _maskers(args: argparse.Namespace) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The masker names and options of the run (``--add-terms``'s file read here, once for every input)."""
    from veil.cli.common import add_terms_masker, maskers_of, parse_options

    names = maskers_of(args)
    return add_terms_masker(names, parse_options(args.set, names), getattr(args, "add_terms", None))


def _exclude(args: argparse.Namespace) -> list[str]:
    if not args.exclude:
        return []
    from veil.io.formats import read_text

    return [line.strip() for line in read_text(args.exclude, "--exclude file").splitlines() if line.strip()]


def mask_file(args: argparse.Namespace, path: str, output: str | None, maskers: tuple[list[str], dict[str, Any]],
              exclude: list[str], each: bool = False) -> dict[str, Any]:
    """One input through the corpus loop: masked into ``output``, or only counted (``output`` None)."""
    from veil.cli.common import progress_of
    from veil.run.corpus import mask_corpus
    from veil.run.executors import executor_of

    executor = executor_of(args)
    return mask_corpus(path, output, maskers[0], placeholder=args.placeholder, options=maskers[1],
                       exclude=exclude, keep=args.keep, fields=_fields(args), input_format=args.input_format,
                       output_format=args.output_format,
                       reader_options={"speakers": args.speakers} if args.speakers else None,
                       drop=args.drop_field, batch_size=args.batch_size, limit=args.limit,
                       overwrite=args.overwrite, progress=progress_of(args), executor=executor, each=each,
                       placeholder_columns=args.placeholder_columns)


def print_stats_table(stats: dict[str, dict[str, Any]]) -> None:
    names = list(next(iter(stats.values()))["masked_shares"])
    from veil.registry import maskers

    # the paper's names for its techniques (Table 2 columns); other maskers keep their own name
    header = ["corpus", "docs", "words"] + [(getattr(maskers.get(n), "paper_name", "") if n in maskers else "") or n
                                            for n in names]
    rows = [[Path(c).name or c, f"{s['documents']:,}", f"{s['words']:,}"]
            + [f"{100 * s['masked_shares'][n]:.1f}%" for n in names] for c, s in stats.items()]
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    print("Share of masked word tokens")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
              + " |")


def run(args: argparse.Namespace) -> int:
    if not args.output and not args.stats:
        raise VeilError("give -o OUTPUT to write a masked corpus, or --stats for statistics")
    if args.output and len(args.inputs) > 1:
        raise VeilError("-o takes one INPUT; several inputs are for --stats")
    if args.batch_size < 1:
        raise VeilError("--batch-size must be at least 1")
    if args.speakers:
        from veil.io.formats import detect_format

        if detect_format(args.inputs[0], args.input_format) != "switchboard":
            raise VeilError("--speakers applies to Switchboard input (--format switchboard) only")
    if args.stats_json:
        from veil.io.atomic import check_target

        if not args.stats:
            raise VeilError("--stats-json needs --stats")
        check_target(args.stats_json, f"--stats-json {args.stats_json}")  # before the work, not after it
    stats = {}
    maskers, exclude = _maskers(args), _exclude(args)  # the files they name read once, not once per input
    if args.output:  # one pass: the statistics come from the detection that masks
        stats[args.inputs[0]] = mask_file(args, args.inputs[0], args.output, maskers, exclude, each=args.stats)
    if args.stats:
        for path in args.inputs:
            if path not in stats or stats[path].get("complete_already") or stats[path]["masked_now"] < stats[path]["records"]:
                stats[path] = mask_file(args, path, None, maskers, exclude, each=True)  # a resumed or reused output counted only part of it
        print_stats_table(stats)
        if args.stats_json:
            from veil.io.atomic import write_json_atomic

            write_json_atomic(args.stats_json, {p: {"documents": s["documents"], "words": s["words"],
                                                    "masked_share": s["masked_shares"]} for p, s in stats.items()})
    return 0
