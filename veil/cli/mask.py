"""Detect and mask command: ``veil mask INPUT -o OUTPUT --masker NAME [...] --placeholder STYLE`` and ``--stats``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from veil.errors import VeilError

log = logging.getLogger(__name__)

# The paper's names for its three techniques (Table 2 columns); other maskers keep their own name.
PAPER_NAMES = {"allow_list": "allowList", "vocab_threshold": "vocabThres", "entity_tagger": "entityTagger"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="corpus file (several with --stats only)")
    p.add_argument("-o", "--output", help="masked corpus to write (JSONL by default: id, text, placeholders, ...)")
    p.add_argument("--masker", action="append", default=[], metavar="NAME",
                   help="allow_list, vocab_threshold, entity_tagger, dlp (repeat to combine; see `veil ls`)")
    p.add_argument("--placeholder", choices=("mask", "typed", "numbered"), default="mask",
                   help="[MASK] per token (paper), [LABEL], or [LABEL_N] numbered per document (default: mask)")
    p.add_argument("--input-format", default=None, help="txt, jsonl, csv, parquet, switchboard (default: from extension)")
    p.add_argument("--output-format", default=None, help="jsonl, txt, csv, parquet (default: from extension)")
    p.add_argument("--text-field", default="text", help="field holding the text (default: text)")
    p.add_argument("--id-field", default="id", help="field holding the id; '' = use the record number (default: id)")
    p.add_argument("--person-field", default=None, help="field holding the person id (kept for audits)")
    p.add_argument("--group-field", default=None, help="field holding a group id (e.g. conversation)")
    p.add_argument("--speakers", default=None, help="Switchboard call_con_tab.csv (default: found beside the corpus)")
    p.add_argument("--drop-field", action="append", default=[], metavar="FIELD",
                   help="input field not to copy into the output (e.g. gold spans); repeatable")
    p.add_argument("--exclude", default=None, metavar="FILE", help="never-mask list, one entry a line")
    p.add_argument("--keep", action="append", default=[], metavar="TOKEN",
                   help="a token of the corpus's own mark-up kept verbatim, never masked (e.g. PTB's '<unk>'); "
                        "repeatable")
    p.add_argument("--masker-options", default=None, metavar="JSON",
                   help='per-masker constructor options, e.g. \'{"vocab_threshold": {"top_n": 20000}}\'')
    p.add_argument("--batch-size", type=int, default=256, help="documents per batch (default 256)")
    p.add_argument("--no-resume", action="store_true", help="start again even if an unfinished run exists")
    p.add_argument("--stats", action="store_true",
                   help="print the share of masked word tokens per technique (the paper's Table 2)")
    p.add_argument("--stats-json", default=None, metavar="FILE", help="also write the statistics as JSON")
    p.add_argument("--limit", type=int, default=None, help="only the first N documents (statistics)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    from veil.engine import add_engine_arguments

    add_engine_arguments(p)


def _fields(args: argparse.Namespace):
    from veil.io.formats import Fields

    return Fields(text=args.text_field, id=args.id_field or None, person=args.person_field, group=args.group_field)


def _docs(args: argparse.Namespace, path: str):
    from itertools import islice

    from veil.io.formats import detect_format, read_documents

    fmt = detect_format(path, args.input_format)
    opts: dict[str, Any] = {"speakers": args.speakers} if fmt == "switchboard" else {}
    docs = read_documents(path, fmt, _fields(args), **opts)
    return islice(docs, args.limit) if args.limit else docs


def _maskers(args: argparse.Namespace) -> list[Any]:
    from veil.registry import maskers

    names = args.masker or ["entity_tagger", "dlp"]
    try:
        options = json.loads(args.masker_options) if args.masker_options else {}
    except json.JSONDecodeError as e:
        raise VeilError(f"--masker-options is not valid JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(options, dict) or not all(isinstance(v, dict) for v in options.values()):
        raise VeilError('--masker-options must map masker names to option objects, e.g. {"dlp": {"min_score": 0.6}}')
    unused = set(options) - set(names)
    if unused:
        raise VeilError(f"--masker-options names maskers that are not run: {', '.join(sorted(unused))}")
    out = []
    for name in names:
        try:
            cls = maskers.get(name)
        except KeyError as e:
            raise VeilError(str(e.args[0])) from None
        try:
            out.append(cls(**options.get(name, {})))
        except TypeError as e:  # an option the masker does not take
            raise VeilError(f"masker {name}: {e}") from None
    return out


def _exclude(args: argparse.Namespace) -> list[str]:
    if not args.exclude:
        return []
    try:
        return [line.strip() for line in Path(args.exclude).read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError as e:
        raise VeilError(f"cannot read --exclude file {args.exclude}: {e.strerror}") from None


def _progress(args: argparse.Namespace, desc: str):
    from tqdm import tqdm

    return tqdm(desc=desc, unit="doc", disable=args.no_progress or None, file=sys.stderr, dynamic_ncols=True)


def masking_engine(args: argparse.Namespace) -> Any:
    from veil.mask.engine import MaskingEngine

    return MaskingEngine(_maskers(args), style=args.placeholder, exclude=_exclude(args), keep=args.keep)


def mask_ray(args: argparse.Namespace) -> dict[str, Any]:
    """``--engine ray``: the same masking engine in Ray actors (see :mod:`veil.engine.ray_engine`)."""
    from functools import partial

    from veil.engine.ray_engine import input_files, run_stage
    from veil.engine.stages import MaskStage
    from veil.io.formats import detect_format, read_documents
    from veil.io.output import input_fingerprint

    files = input_files(args.inputs[0])
    fmt = detect_format(files[0], args.input_format)
    opts: dict[str, Any] = {"speakers": args.speakers} if fmt == "switchboard" else {}
    if len(files) > 1 and (not args.id_field or fmt == "txt"):
        raise VeilError("a folder of shards needs an id field (--id-field, not txt): record numbers restart in every file")
    masking_engine(args)  # bad options fail here, before a cluster starts
    settings = {"input": [input_fingerprint(f) for f in files], "maskers": args.masker, "style": args.placeholder,
                "fields": vars(_fields(args)), "exclude": args.exclude and input_fingerprint(args.exclude),
                "options": args.masker_options, "drop": sorted(args.drop_field), "keep": sorted(args.keep)}
    stats = run_stage(MaskStage(partial(masking_engine, args), frozenset(args.drop_field)), files,
                      partial(read_documents, fmt=fmt, fields=_fields(args), **opts), args.output,
                      settings=settings, workers=args.workers or 1, address=args.address,
                      batch_size=args.batch_size, shard_size=args.shard_size, resume=not args.no_resume,
                      progress=not args.no_progress)
    log.info("masked %d documents on ray (%d workers): %s -> %s", stats["records"], args.workers or 1,
             args.inputs[0], args.output)
    return stats


def mask_file(args: argparse.Namespace) -> dict[str, Any]:
    from veil.io.formats import iter_batches
    from veil.io.output import ResumableWriter, input_fingerprint
    from veil.io.records import masked_to_record

    from veil.engine import check_engine_arguments

    check_engine_arguments(args, {"--limit": args.limit is not None, "--output-format": bool(args.output_format)})
    if args.engine == "ray":
        return mask_ray(args)
    src = args.inputs[0]
    out_fmt = args.output_format or _output_format(args.output)
    engine = masking_engine(args)
    settings = {"input": input_fingerprint(src), "maskers": args.masker, "style": args.placeholder,
                "fields": vars(_fields(args)), "exclude": args.exclude and input_fingerprint(args.exclude),
                "options": args.masker_options, "drop": sorted(args.drop_field), "limit": args.limit,
                **({"keep": sorted(args.keep)} if args.keep else {})}
    drop = frozenset(args.drop_field)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    n_in = 0
    with ResumableWriter(args.output, settings, fmt=out_fmt, resume=not args.no_resume) as w, \
            _progress(args, "mask") as bar:
        skip = w.done
        for batch in iter_batches(_docs(args, src), args.batch_size):
            n_in += len(batch)
            if n_in <= skip:  # already written by an interrupted run
                bar.update(len(batch))
                continue
            if n_in - len(batch) < skip:
                batch = batch[skip - (n_in - len(batch)):]
            w.write(masked_to_record(md, drop) for md in engine.mask(batch))
            bar.update(len(batch))
        n_out = w.done
    if n_out != n_in:  # cannot happen unless a reader or the engine is broken: never hand out a short file
        raise VeilError(f"record count mismatch: read {n_in}, wrote {n_out}")
    log.info("masked %d documents: %s -> %s", n_in, src, args.output)
    return {"records": n_in}


def _output_format(path: str) -> str:
    from veil.io.formats import detect_format

    fmt = detect_format(path)
    if fmt == "switchboard":
        raise VeilError("Switchboard is an input format; write jsonl, txt, csv or parquet")
    return fmt


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
    if args.output:
        mask_file(args)
    if args.stats:
        maskers, exclude = _maskers(args), _exclude(args)
        stats = {path: corpus_stats(args, path, maskers, exclude) for path in args.inputs}
        print_stats_table(stats)
        if args.stats_json:
            from veil.io.output import write_json_atomic

            write_json_atomic(args.stats_json, stats)
    return 0
