"""Detect and mask command: ``veil mask INPUT -o OUTPUT --masker NAME [...] --placeholder STYLE`` and ``--stats``."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from veil.cli.common import count
from veil.errors import VeilError

log = logging.getLogger(__name__)

# The paper's names for its three techniques (Table 2 columns); other maskers keep their own name.
PAPER_NAMES = {"allow_list": "allowList", "vocab_threshold": "vocabThres", "entity_tagger": "entityTagger"}


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
    add_set(p)
    p.add_argument("--format", "--input-format", dest="input_format", default=None,
                   help="input format: txt, jsonl, csv, parquet, switchboard (default: from the extension)")
    p.add_argument("--output-format", default=None, help="jsonl, txt, csv, parquet (default: from the extension)")
    add_fields(p)
    p.add_argument("--speakers", default=None, help="Switchboard call_con_tab.csv (default: found beside the corpus)")
    p.add_argument("--drop-field", nargs="+", action="extend", default=[], metavar="FIELD",
                   help="input fields not to copy into the output (e.g. gold spans); repeated or space-separated")
    p.add_argument("--exclude", default=None, metavar="FILE", help="never-mask list, one entry a line")
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
    from veil.run import add_engine_arguments

    add_engine_arguments(p)


def _fields(args: argparse.Namespace):
    from veil.cli.common import fields_of

    return fields_of(args)


def _docs(args: argparse.Namespace, path: str):
    from itertools import islice

    from veil.io.formats import detect_format, read_documents

    fmt = detect_format(path, args.input_format)
    opts: dict[str, Any] = {"speakers": args.speakers} if fmt == "switchboard" else {}
    docs = read_documents(path, fmt, _fields(args), **opts)
    return islice(docs, args.limit) if args.limit else docs


def _masker_options(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    from veil.cli.common import maskers_of, parse_options

    return parse_options(args.set, maskers_of(args))


def _maskers(args: argparse.Namespace) -> list[Any]:
    from veil.cli.common import maskers_of
    from veil.run.corpus import build_engine

    return build_engine(maskers_of(args), options=_masker_options(args)).maskers


def _exclude(args: argparse.Namespace) -> list[str]:
    if not args.exclude:
        return []
    from veil.io.formats import read_text

    return [line.strip() for line in read_text(args.exclude, "--exclude file").splitlines() if line.strip()]


def _progress(args: argparse.Namespace, desc: str):
    from tqdm import tqdm

    return tqdm(desc=desc, unit="doc", disable=args.no_progress or None, file=sys.stderr, dynamic_ncols=True)


def mask_ray(args: argparse.Namespace) -> dict[str, Any]:
    """``--engine ray``: the same masking engine in Ray actors (see :mod:`veil.run.ray_executor`)."""
    from functools import partial

    from veil.cli.common import maskers_of, progress_of
    from veil.run.ray_executor import input_files, run_stage
    from veil.run.stages import MaskStage
    from veil.io.formats import detect_format, read_documents
    from veil.io.output import input_fingerprint
    from veil.run.corpus import build_engine

    files = input_files(args.inputs[0])
    fmt = detect_format(files[0], args.input_format)
    fields = _fields(args)
    if len(files) > 1 and (not fields.id or fmt == "txt"):
        raise VeilError("a folder of shards needs an id field (--id-field, not txt): record numbers restart in every file")
    make = partial(build_engine, maskers_of(args), args.placeholder, _masker_options(args), _exclude(args), args.keep)
    make()  # bad names or options fail here, before a cluster starts
    settings = {"input": [input_fingerprint(f) for f in files], "maskers": maskers_of(args), "style": args.placeholder,
                "fields": vars(fields), "options": _masker_options(args), "exclude": sorted(_exclude(args)),
                "drop": sorted(args.drop_field), "keep": sorted(args.keep)}
    reader = partial(read_documents, fmt=fmt, fields=fields, **({"speakers": args.speakers} if args.speakers else {}))
    stats = run_stage(MaskStage(make, frozenset(args.drop_field), fields), files, reader, args.output,
                      settings=settings, workers=args.workers or 1, address=args.address,
                      batch_size=args.batch_size, shard_size=args.shard_size, resume=not args.overwrite,
                      progress=progress_of(args))
    log.info("masked %d documents on ray (%d workers): %s -> %s", stats["records"], args.workers or 1,
             args.inputs[0], args.output)
    return stats


def mask_file(args: argparse.Namespace) -> dict[str, Any]:
    from veil.run import check_engine_arguments
    from veil.run.corpus import mask_corpus

    check_engine_arguments(args, {"--limit": args.limit is not None, "--output-format": bool(args.output_format)})
    if args.engine == "ray":
        return mask_ray(args)
    src = args.inputs[0]
    from veil.cli.common import maskers_of, progress_of

    return mask_corpus(src, args.output, maskers_of(args), placeholder=args.placeholder, options=_masker_options(args),
                       exclude=_exclude(args), keep=args.keep, fields=_fields(args), input_format=args.input_format,
                       output_format=args.output_format,
                       reader_options={"speakers": args.speakers} if args.speakers else None,
                       drop=args.drop_field, batch_size=args.batch_size, limit=args.limit,
                       overwrite=args.overwrite, progress=progress_of(args))


def corpus_stats(args: argparse.Namespace, path: str, maskers: list[Any], exclude: list[str]) -> dict[str, Any]:
    """Share of masked word tokens for each masker alone and for all combined, in one pass."""
    from veil.io.formats import iter_batches
    from veil.mask.engine import MaskingEngine
    from veil.mask.placeholders import merge_spans
    from veil.mask.stats import masked_word_counts

    engines = {m.name: MaskingEngine([m], exclude=exclude, keep=args.keep) for m in maskers}
    names = list(engines) + (["combined"] if len(maskers) > 1 else [])
    masked = dict.fromkeys(names, 0)
    words = docs = 0
    with _progress(args, f"stats {Path(path).name}") as bar:
        for batch in iter_batches(_docs(args, path), args.batch_size):
            per = {name: eng.detect(batch) for name, eng in engines.items()}
            for i, d in enumerate(batch):
                total = None
                for name in engines:
                    m, total = masked_word_counts(d.text, per[name][i])
                    masked[name] += m
                if len(maskers) > 1:
                    union = merge_spans([s for name in engines for s in per[name][i]])
                    m, total = masked_word_counts(d.text, union)
                    masked["combined"] += m
                words += total or 0
            docs += len(batch)
            bar.update(len(batch))
    return {"documents": docs, "words": words,
            "masked_share": {n: (masked[n] / words if words else 0.0) for n in names}}


def print_stats_table(stats: dict[str, dict[str, Any]]) -> None:
    names = list(next(iter(stats.values()))["masked_share"])
    header = ["corpus", "docs", "words"] + [PAPER_NAMES.get(n, n) for n in names]
    rows = [[Path(c).name or c, f"{s['documents']:,}", f"{s['words']:,}"]
            + [f"{100 * s['masked_share'][n]:.1f}%" for n in names] for c, s in stats.items()]
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
    if args.output:
        mask_file(args)
    if args.stats:
        maskers, exclude = _maskers(args), _exclude(args)
        stats = {path: corpus_stats(args, path, maskers, exclude) for path in args.inputs}
        print_stats_table(stats)
        if args.stats_json:
            from veil.io.atomic import write_json_atomic

            write_json_atomic(args.stats_json, stats)
    return 0
