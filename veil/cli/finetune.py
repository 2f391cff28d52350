"""Fill stage command: ``veil finetune INPUT -o OUT --filler {mlm,llm-instruct}`` (MLM, or LoRA for llm-instruct)."""

from __future__ import annotations

import argparse
import json
import logging

from veil.errors import VeilError

log = logging.getLogger(__name__)


#: the fillers `veil finetune` knows how to train; other registered fillers are refused at run time, by name
FINETUNABLE = ("mlm", "llm-instruct")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from veil.registry import fillers

    p.add_argument("input", help="masked corpus (JSONL as veil mask writes it); training text comes from it only")
    p.add_argument("-o", "--output", required=True, help="output folder; load it with veil fill --model OUTPUT")
    p.add_argument("--filler", choices=fillers.names(), default="mlm",
                   help="mlm: masked-LM fine-tuning; llm-instruct: LoRA on instruction prompts (default mlm)")
    p.add_argument("--model", default=None, help="the model to start from (hub name or folder; default: the filler's)")
    p.add_argument("--data", choices=("mask-free", "top1", "topk"), default="mask-free",
                   help="train on the documents without placeholders, or on the corpus filled by the "
                        "current model with Top-1 / Top-K (default mask-free)")
    p.add_argument("--filled", default=None,
                   help="train on this already filled corpus (veil fill output) instead of --data")
    p.add_argument("--rounds", type=int, default=1, help="fill -> fine-tune rounds (top1/topk data; default 1)")
    p.add_argument("--epochs", type=float, default=1.0, help="passes over the training text per round")
    p.add_argument("--max-steps", type=int, default=None, help="optimiser steps per round (overrides --epochs)")
    p.add_argument("--batch-size", type=int, default=16, help="training sequences per step")
    p.add_argument("--lr", type=float, default=None, help="learning rate (default 5e-5 mlm, 2e-4 LoRA)")
    p.add_argument("--mlm-probability", type=float, default=0.15, help="share of words/tokens masked (mlm)")
    p.add_argument("--token-masking", action="store_true", help="mask single tokens instead of whole words (mlm)")
    p.add_argument("--max-length", type=int, default=None,
                   help="tokens per training sequence (default 128 for mlm; 256 for llm-instruct: prompt + answer)")
    p.add_argument("--k", type=int, default=10, help="K when --data topk")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument("--limit", type=int, default=None, help="use only the first N documents")
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
    if args.rounds < 1 or args.batch_size < 1:
        raise VeilError("--rounds and --batch-size must be at least 1")
    if args.filled and args.rounds > 1:
        raise VeilError("--filled gives one round of training text; drop --rounds or --filled")
    if args.filler not in FINETUNABLE:
        raise VeilError(f"veil finetune cannot train filler {args.filler!r} (it trains {', '.join(FINETUNABLE)})")
    progress = not args.no_progress
    if args.filler == "llm-instruct":
        return _run_instruct(args, progress)

    from veil.fill.finetune import MLMTrainConfig, finetune_rounds, save_model, train_mlm
    from veil.fill.mlm import load_mlm

    cfg = MLMTrainConfig(epochs=args.epochs, max_steps=args.max_steps, batch_size=args.batch_size,
                         lr=args.lr if args.lr is not None else 5e-5, mlm_probability=args.mlm_probability,
                         whole_word=not args.token_masking, max_length=args.max_length or 128, seed=args.seed,
                         device=args.device)
    if args.filled:
        from pathlib import Path

        texts = _training_texts_from_filled(args.filled, args.limit)
        model, tok = load_mlm(args.model)
        info = train_mlm(model, tok, texts, cfg, progress=progress)
        info.update(data=f"filled:{args.filled}", texts=len(texts), base_model=args.model)
        save_model(model, tok, Path(args.output), info)
        log.info("fine-tuned on %d filled documents -> %s: %s", len(texts), args.output, json.dumps(info))
        return 0
    docs = _masked(args.input, args.limit)
    summaries = finetune_rounds(docs, args.output, model=args.model, data=args.data, rounds=args.rounds, cfg=cfg,
                                k=args.k, seed=args.seed, progress=progress)
    for s in summaries:
        log.info("round %s: %s", s.get("round"), json.dumps({k: v for k, v in s.items() if k != "config"}))
    log.info("saved to %s (load with: veil fill --filler mlm --model %s)", args.output, args.output)
    return 0


def _run_instruct(args: argparse.Namespace, progress: bool) -> int:
    try:
        from veil.fill.llm_instruct import finetune_instruct
    except ImportError as e:
        raise VeilError(f"LoRA fine-tuning for llm-instruct is not available: {e}") from None
    from veil.pipeline import fill_documents
    from veil.fill.finetune import mask_free_texts

    if args.rounds != 1:
        raise VeilError("llm-instruct fine-tuning runs one round; drop --rounds")
    if args.filled:
        texts = _training_texts_from_filled(args.filled, args.limit)
    else:
        docs = _masked(args.input, args.limit)
        if args.data == "mask-free":
            texts = mask_free_texts(docs)
        else:  # the corpus filled by the llm scorer (the instruct model's base) with Top-1 / Top-K
            from veil.registry import create, fillers

            filler = create(fillers, "llm", model=args.model, strategy=args.data, k=args.k, seed=args.seed)
            texts = [d.text for d in fill_documents(filler, docs, progress=progress)]
    kwargs = dict(model=args.model, epochs=args.epochs, max_steps=args.max_steps, batch_size=args.batch_size,
                  max_tokens=args.max_length or 256, seed=args.seed, device=args.device, progress=progress)
    if args.lr is not None:
        kwargs["learning_rate"] = args.lr
    info = finetune_instruct(texts, args.output, **kwargs)
    log.info("LoRA fine-tuned llm-instruct on %d texts -> %s: %s", len(texts), args.output,
             json.dumps(info, default=str))
    return 0
