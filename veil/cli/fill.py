"""Fill stage command: ``veil fill INPUT -o OUTPUT --filler NAME --strategy {top1,topk,sample}``."""

from __future__ import annotations

import argparse
import json
import logging
from typing import Any

from veil.cli.common import count
from veil.errors import VeilError

log = logging.getLogger(__name__)


def add_arguments(p: argparse.ArgumentParser) -> None:
    from veil.cli.common import add_fields
    from veil.run.components import DEFAULT_FILLER
    from veil.registry import fillers

    p.add_argument("input", help="masked corpus as veil mask writes it (JSONL, CSV, Parquet, txt; - = standard input)")
    p.add_argument("-o", "--output", required=True,
                   help="filled corpus, in the input's format and field names unless its extension says otherwise "
                        "(- = standard output); substitutions go to OUTPUT.substitutions.jsonl")
    p.add_argument("--format", "--input-format", dest="input_format", default=None,
                   help="input format: jsonl, csv, parquet, txt (default: from the extension)")
    p.add_argument("--output-format", default=None, help="jsonl, csv, parquet, txt (default: the input's)")
    add_fields(p)
    # unset: the fields veil mask recorded beside the masked file (MASKED.veil.json), else text / id
    p.set_defaults(text_field=None, id_field=None)
    p.add_argument("--filler", choices=fillers.names(), default=DEFAULT_FILLER,
                   help="a registered filler (see `veil ls`): llm: SmolLM2 proposes and ranks the words of [MASK] "
                        "markers (the paper's style); mlm: a masked LM (BERT/RoBERTa); llm-instruct: instruction-tuned "
                        "SmolLM2; faker: no model. Every filler gives typed placeholders ([PERSON_NAME_1], [LOCATION_1], "
                        "[PHONE_NUMBER_1]) a draw of their type in the original's shape (a first name for a first name, a "
                        "city for a city, '... Bank' for a bank; measured 100%% valid on three data sets, docs/filling.md), "
                        "a person's gender from the words around it; faker does only that, at thousands of "
                        f"placeholders a second, with a plain word for [MASK] (default: {DEFAULT_FILLER})")
    p.add_argument("--entities", choices=("draw", "propose"), default="draw",
                   help="names, places, organisations: draw (default: of their type and shape, from public lists) or "
                        "propose (a model filler's own words that spaCy tags with the type; often not a name)")
    p.add_argument("--rank-types", action="store_true",
                   help="SmolLM2 chooses, between a woman's and a man's name drawn for a person whose gender the "
                        "text leaves open, the one its sentence scores better (slower: see docs/filling.md)")
    p.add_argument("--model", default=None,
                   help="hub name or local folder (e.g. from veil finetune); default: the filler's offline model")
    p.add_argument("--strategy", choices=("top1", "topk", "sample"), default="top1",
                   help="top1; topk: uniform among the top K (paper); sample: among the top K with the "
                        "model's probabilities (default: top1)")
    p.add_argument("--k", type=int, default=10, help="K for --strategy topk / sample (default 10)")
    p.add_argument("--temperature", type=float, default=1.0,
                   help="softmax temperature of --strategy sample over the model's scores (default 1)")
    p.add_argument("--seed", type=int, default=0, help="random seed (each document draws from (seed, id))")
    p.add_argument("--batch-size", type=int, default=None,
                   help="sentences per model batch (default: the model filler's own)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: a GPU when present)")
    p.add_argument("--dtype", default=None, help="mlm: fp32 (default), bf16 or int8; llm: the model dtype")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--types", choices=("auto", "on", "off"), default="auto",
                   help="typed substitutes: auto = for typed/numbered placeholders, on = also for [MASK] "
                        "markers with a recorded label, off = plain words everywhere")
    p.add_argument("--avoid", nargs="+", action="extend", default=[], metavar="TECHNIQUE=FILE",
                   help="Top-K keeps substitutes off this word list for spans masked by TECHNIQUE "
                        "(default: the allow_list / vocab_threshold maskers' default lists); repeated or "
                        "space-separated")
    p.add_argument("--no-avoid", action="store_true", help="no avoid-lists at all")
    p.add_argument("--avoid-in-top1", action="store_true", help="apply the avoid-lists to Top-1 too")
    p.add_argument("--avoid-proposals", action="store_true",
                   help="llm: ask the model for candidates off the avoid-list (a larger pool, listed words "
                        "dropped) instead of dropping listed words after the draw")
    p.add_argument("--match-case", action="store_true",
                   help="lower-case the substitutes of documents that contain no capital letter")
    p.add_argument("--instruct-decode", choices=("generate", "ranked"), default="generate",
                   help="llm-instruct: generate the answer and parse it (the paper; default) or rank whole-word "
                        "candidates inside the answer (never breaks the input)")
    p.add_argument("--chunk", type=int, default=256, help="documents per written chunk (resume granularity)")
    p.add_argument("--limit", type=count, default=None, help="fill only the first N documents")
    p.add_argument("--overwrite", action="store_true", help="start again even if OUTPUT or an unfinished run exists")
    p.add_argument("--allow-unmasked", action="store_true",
                   help="fill an input in which no record holds a placeholder (refused by default: it was "
                        "probably never masked, and would be copied with every name in it)")
    p.add_argument("--max-fallback-share", type=float, default=None, metavar="SHARE",
                   help="fail the run when more than this share of the placeholders got fallback values "
                        "because the filler could not fill their documents (default 0.1)")
    p.add_argument("--check-types", action="store_true",
                   help="report the share of person/place/organisation substitutes spaCy tags with the same type")
    from veil.run.executors import add_executor_arguments

    add_executor_arguments(p)


#: options that change how fast a fill runs, not what it writes: not part of a run's identity for resume
_SPEED_OPTIONS = ("batch_size", "device")


def filler_options(args: argparse.Namespace) -> dict[str, Any]:
    """The filler's options from the flags, the one place both the filler and a run's identity (resume)
    read them from. A flag left at its default is left out, except the few every filler takes, so a filler
    keeps its own default and one that cannot honour a flag given says so. ``avoid`` holds the
    ``TECHNIQUE=FILE`` items as given (the lists are read when the filler is built)."""
    if args.instruct_decode != "generate" and args.filler != "llm-instruct":
        raise VeilError("--instruct-decode applies to --filler llm-instruct only")
    opts: dict[str, Any] = dict(model=args.model, strategy=args.strategy, k=args.k, seed=args.seed, types=args.types)
    given = dict(batch_size=args.batch_size, device=args.device, dtype=args.dtype,
                 avoid_in_top1=args.avoid_in_top1 or None, avoid_proposals=args.avoid_proposals or None,
                 entities=args.entities if args.entities != "draw" else None, rank_types=args.rank_types or None,
                 match_case=args.match_case or None,
                 temperature=args.temperature if args.strategy == "sample" else None,
                 decode=args.instruct_decode if args.instruct_decode != "generate" else None,
                 avoid={} if args.no_avoid else (list(args.avoid) or None))
    opts.update((k, v) for k, v in given.items() if v is not None)
    return opts


def run_identity(args: argparse.Namespace) -> dict[str, Any]:
    """What identifies a fill run for resume and reuse: the filler and the options that change its output."""
    return {"filler": args.filler, **{k: v for k, v in filler_options(args).items() if k not in _SPEED_OPTIONS}}


def build_filler(args: argparse.Namespace):
    from veil.run.components import build_filler

    kwargs = filler_options(args)
    if kwargs.get("avoid"):
        kwargs["avoid"] = _avoid_lists(kwargs["avoid"])
    return build_filler(args.filler, **kwargs)


def _avoid_lists(items: list[str]) -> dict[str, frozenset[str]]:
    """``--avoid TECHNIQUE=FILE ...`` read; the techniques not named keep their default list."""
    from veil.fill.base import AVOID_TECHNIQUES, default_avoid
    from veil.mask.allow_list import read_word_list

    avoid = {}
    for item in items:
        tech, sep, path = item.partition("=")
        if not sep or not tech or not path:
            raise VeilError(f"--avoid expects TECHNIQUE=FILE, got {item!r}")
        avoid[tech] = frozenset(w.lower() for w in read_word_list(path))
    for tech in AVOID_TECHNIQUES:
        avoid.setdefault(tech, default_avoid(tech))
    return avoid


def resolve_fields(args: argparse.Namespace):
    """The masked file's fields: each flag given, else what veil mask recorded beside it, else the defaults.

    A group field other than the one the file was masked with is an error: numbering and
    substitutes must agree on what one document is."""
    from veil.io.formats import Fields
    from veil.run.corpus import recorded_fields

    rec = recorded_fields(args.input)
    if rec is not None and args.group_field is not None and rec.group != args.group_field:
        raise VeilError(f"{args.input} was masked " + (f"with --group-field {rec.group}" if rec.group else
                        "without a group field") + f"; fill it the same way (not --group-field {args.group_field}), "
                        "or mask it again")
    base = rec or Fields()
    return Fields(text=args.text_field if args.text_field is not None else base.text,
                  id=(args.id_field or None) if args.id_field is not None else base.id,
                  person=args.person_field if args.person_field is not None else base.person,
                  group=args.group_field if args.group_field is not None else base.group)


def run(args: argparse.Namespace) -> int:
    from functools import partial

    from veil.cli.common import progress_of
    from veil.io.records import substitutions_path
    from veil.run.corpus import fill_corpus
    from veil.run.executors import executor_of

    if args.threads is not None and args.threads < 1:
        raise VeilError("--threads must be at least 1")
    if args.k < 1 or (args.batch_size is not None and args.batch_size < 1) or args.chunk < 1:
        raise VeilError("--k, --batch-size and --chunk must be at least 1")
    if args.max_fallback_share is not None and not 0 <= args.max_fallback_share <= 1:
        raise VeilError("--max-fallback-share must be between 0 and 1")
    executor = executor_of(args, args.device, args.threads)

    def filler():  # built after fill_corpus has checked the input and the output: no model loads for a bad input
        if args.threads is not None:
            import torch

            torch.set_num_threads(args.threads)
        return build_filler(args)

    settings = run_identity(args)
    fields = resolve_fields(args)
    stats = fill_corpus(args.input, args.output, filler if executor.name == "local" else partial(build_filler, args),
                        settings=settings, fields=fields, input_format=args.input_format,
                        output_format=args.output_format, chunk_size=args.chunk, overwrite=args.overwrite,
                        limit=args.limit, progress=progress_of(args), executor=executor,
                        allow_unmasked=args.allow_unmasked, max_fallback_share=args.max_fallback_share)
    log.info("filled %s -> %s (+ %s): %d documents filled now, %d fell back", args.input, args.output,
             substitutions_path(args.output).name, stats.get("filled_now", 0),
             len(stats.get("fallback_documents", [])))
    log.debug("fill statistics: %s", json.dumps(stats))
    if args.check_types and args.output != "-":
        from veil.fill.typed import entity_type_agreement
        from veil.io.records import read_filled

        report = entity_type_agreement(read_filled(args.output, args.output_format, fields))
        if not report:
            log.info("type check: no person/place/organisation substitutes")
        for name, r in report.items():
            log.info("type check %-12s %5d substitutes, %5.1f%% tagged with the same type by spaCy",
                     name, r["n"], 100 * r["share"])
    return 0
