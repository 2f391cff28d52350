"""Fill stage command: ``veil finetune INPUT -o OUT --filler NAME``, through the filler's ``finetune`` hook."""

from __future__ import annotations

import argparse
import json
import logging

from veil.cli.common import count
from veil.errors import VeilError
from veil.fill.finetune import MLMTrainConfig

log = logging.getLogger(__name__)


def add_arguments(p: argparse.ArgumentParser) -> None:
    from veil.registry import fillers

    p.add_argument("input", help="masked corpus (JSONL as veil mask writes it); training text comes from it only")
    p.add_argument("-o", "--output", required=True, help="output folder; load it with veil fill --model OUTPUT")
    # every registered filler is offered; one without a finetune hook says so when run
    p.add_argument("--filler", choices=fillers.names(), default="mlm",
                   help="the filler whose model to fine-tune: mlm (masked-LM fine-tuning), llm (next-token LoRA), "
                        "llm-instruct (LoRA on instruction prompts); any registered filler with a finetune hook "
                        "(default mlm)")
    p.add_argument("--model", default=None, help="the model to start from (hub name or folder; default: the filler's)")
    p.add_argument("--data", choices=("mask-free", "top1", "topk"), default="mask-free",
                   help="train on the documents without placeholders, or on the corpus filled by the "
                        "current model with Top-1 / Top-K (default mask-free)")
    p.add_argument("--filled", default=None,
                   help="train on this already filled corpus (veil fill output) instead of --data")
    p.add_argument("--rounds", type=int, default=1, help="fill -> fine-tune rounds (top1/topk data; default 1)")
    cfg = MLMTrainConfig  # the defaults shown are the training config's own
    p.add_argument("--epochs", type=float, default=cfg.epochs,
                   help="passes over the training text per round (default %(default)s)")
    p.add_argument("--max-steps", type=int, default=cfg.max_steps,
                   help="optimiser steps per round (overrides --epochs)")
    p.add_argument("--batch-size", type=int, default=cfg.batch_size, help="training sequences per step (default %(default)s)")
    p.add_argument("--lr", type=float, default=None,
                   help=f"learning rate (default {cfg.lr:g} for mlm; the LoRA fillers' own for llm, llm-instruct)")
    p.add_argument("--mlm-probability", type=float, default=cfg.mlm_probability,
                   help="share of words/tokens masked (mlm; default %(default)s)")
    p.add_argument("--token-masking", action="store_true", default=not cfg.whole_word,
                   help="mask single tokens instead of whole words (mlm)")
    p.add_argument("--max-length", type=int, default=None,
                   help=f"tokens per training sequence (default {cfg.max_length} for mlm; the filler's own otherwise: "
                        "prompt + answer for llm-instruct)")
    p.add_argument("--k", type=int, default=10, help="K when --data topk")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument("--limit", type=count, default=None, help="use only the first N documents")
    p.add_argument("--device", default=None, help="cpu or cuda (default: a GPU when present)")


def _training_texts_from_filled(path: str, limit: int | None) -> list[str]:
    from itertools import islice

    from veil.io.records import read_filled

    return [d.text for d in islice(read_filled(path), limit)]


def _masked(path: str, limit: int | None) -> list:
    from itertools import islice

    from veil.io.records import read_masked

    return list(islice(read_masked(path), limit))


def run(args: argparse.Namespace) -> int:
    from veil.registry import create, fillers
    from veil.run.inmemory import fill_documents

    if args.rounds < 1 or args.batch_size < 1:
        raise VeilError("--rounds and --batch-size must be at least 1")
    if args.filled and args.rounds > 1:
        raise VeilError("--filled gives one round of training text; drop --rounds or --filled")
    try:
        filler = fillers.get(args.filler)
    except KeyError as e:
        raise VeilError(e.args[0]) from None
    progress = not args.no_progress
    # the training options every hook knows; the MLM-only ones only when set, so that a filler
    # that cannot honour them says so instead of ignoring them
    options = dict(epochs=args.epochs, batch_size=args.batch_size, device=args.device)
    cfg = MLMTrainConfig
    for name, value, default in (("max_steps", args.max_steps, cfg.max_steps), ("lr", args.lr, None),
                                 ("max_length", args.max_length, None),
                                 ("mlm_probability", args.mlm_probability, cfg.mlm_probability),
                                 ("whole_word", not args.token_masking, cfg.whole_word)):
        if value != default:
            options[name] = value
    docs, texts = [], None
    if args.filled:
        texts = _training_texts_from_filled(args.filled, args.limit)
    else:
        docs = _masked(args.input, args.limit)
        if args.data != "mask-free" and args.data not in filler.finetune_data:
            # the corpus filled with Top-1 / Top-K by this filler (or the one it names), then one round
            if args.rounds != 1:
                raise VeilError(f"{args.filler} fine-tuning on --data {args.data} runs one round; drop --rounds")
            scorer = create(fillers, filler.finetune_fill_filler or args.filler, model=args.model,
                            strategy=args.data, k=args.k, seed=args.seed)
            texts = [d.text for d in fill_documents(scorer, docs, progress)]
    info = filler.finetune(docs, args.output, texts=texts, data=args.data, model=args.model, rounds=args.rounds,
                           k=args.k, seed=args.seed, progress=progress, fill=fill_documents, **options)
    log.info("fine-tuned %s -> %s: %s", args.filler, args.output, json.dumps(info, default=str))
    log.info("fill with it: veil fill MASKED -o FILLED --filler %s --model %s", args.filler, args.output)
    return 0
