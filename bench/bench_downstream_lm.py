"""Train / evaluate stage benchmark: tokens per second of the downstream LMs, to size the experiments.

One command: ``.venv/bin/python bench/bench_downstream_lm.py`` (about 3 minutes on two idle CPU
threads; ``--steps N`` for steadier numbers).

Workload: Switchboard validation utterances (``../shared/data/switchboard/val``; the bundled demo
corpus when ``shared/`` is absent) as one token stream cut into blocks of ``--context`` tokens,
``--batch`` blocks a step, through veil's own code (:func:`veil.downstream.lm.token_nll`,
:func:`veil.downstream.lm.autocast`). Configurations, each in fp32 and in bf16 (``lm.precision: bf16``:
``torch.autocast``, fp32 weights):

- ``eval``: forward only, no gradient (the ``evaluate`` stage);
- ``eval-trunkN`` (with ``--lora-layers N``): the same for an LM adapted on its top N layers whose
  bottom layers' output is already stored (:data:`veil.downstream.lm.TRUNK`: every evaluation after the first
  of an experiment's LMs on the same test batches);
- ``lora-rR``: forward + backward + AdamW step of LoRA adapters of rank R on every linear layer;
- ``lora-rR-topN`` (``--lora-layers N,...``): the same with adapters on the top N layers only
  (``lm.lora_layers``; back-propagation stops at the lowest adapted layer);
- ``full``: the same for every weight (full fine-tuning);
- ``gpt2``: veil's config-built 2-layer, 256-wide GPT-2 (the other downstream LM), full training, fp32:
  the baseline the pre-trained LM's cost is compared with.

Prints a table of tokens/s and the ratio to ``gpt2`` training, with ``uptime`` (timings on a shared
machine vary). Numbers feed ``docs/experiments.md``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def texts() -> list[str]:
    from veil.experiment.runner import load_corpus
    from veil.experiment.spec import CorpusSpec

    sb = ROOT.parent / "shared" / "data" / "switchboard" / "val"
    if sb.is_dir():
        return [d.text for d in load_corpus(CorpusSpec(sb, "switchboard", limit=2000))]
    return [d.text for d in load_corpus(CorpusSpec(ROOT / "veil" / "data" / "demo" / "calls.jsonl", "jsonl"))]


def time_config(model, vocab, bl, s, batch: int, steps: int, train: bool, trunk=None) -> float:
    import torch

    from veil.downstream import lm

    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5) if train else None
    model.train(train)
    done, t0 = 0, None
    for step in range(steps + 1):  # the first step warms up (oneDNN primitives, allocations)
        rows = bl[(step * batch) % max(1, len(bl) - batch):][:batch]
        if step == 1:
            t0, done = time.perf_counter(), 0
        x, valid, attn = lm._batch(rows, vocab.pad_id, "cpu")
        if train:
            with lm.autocast(s):
                nll = lm.token_nll(model, x, valid, attn)
            loss = nll.sum() / valid[:, 1:].sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        else:
            with torch.no_grad(), lm.autocast(s):
                lm.token_nll(model, x, valid, attn, trunk)
        done += sum(len(r) - 1 for r in rows)
    return done / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2", help="the pre-trained downstream LM (default smollm2)")
    ap.add_argument("--context", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=4, help="timed steps per configuration (after one warm-up)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ranks", default="8,32", help="LoRA ranks to time")
    ap.add_argument("--lora-layers", default="", help="also time LoRA on the top N layers only (comma-separated N)")
    ap.add_argument("--lora-dropout", type=float, default=0.05, help="LoRA dropout (lm.lora_dropout; default 0.05)")
    ap.add_argument("--only", default="", help="comma-separated configurations (eval, eval-trunkN, lora-rR, "
                                               "lora-rR-topN, full, gpt2)")
    ap.add_argument("--precisions", default="fp32,bf16", help="comma-separated: fp32, bf16")
    args = ap.parse_args(argv)

    import torch

    from veil.downstream import lm
    from veil.downstream.tokenizer import build_vocab

    torch.set_num_threads(args.threads)
    data = texts()
    rows = []
    only = {c for c in args.only.split(",") if c}

    def wanted(name: str) -> bool:
        return not only or name in only

    # the baseline a user has today: the config-built GPT-2 (its own BPE vocabulary), fp32 training
    if wanted("gpt2"):
        s = lm.LMSettings(context=args.context)
        vocab = build_vocab("bpe", data, 8000)
        model = lm.make_model(s, vocab)
        bl = lm.blocks(lm.stream_ids(vocab, data), args.context)
        rows.append(("gpt2", "fp32", lm.n_params(model), time_config(model, vocab, bl, s, args.batch, args.steps, True)))
    ranks = [int(r) for r in args.ranks.split(",") if r]
    tops = [int(n) for n in args.lora_layers.split(",") if n]
    configs = ([("eval", None, None)] + [(f"eval-trunk{n}", None, n) for n in tops] + [(f"lora-r{r}", r, None) for r in ranks]
               + [(f"lora-r{r}-top{n}", r, n) for r in ranks for n in tops] + [("full", None, None)])
    for precision in [p for p in args.precisions.split(",") if p]:
        for name, rank, top in configs:
            if not wanted(name):
                continue
            kw = {"model": args.model, "context": args.context, "precision": precision}
            if rank:
                kw.update(lora_r=rank, lora_alpha=2 * rank, lora_dropout=args.lora_dropout)
            if top:
                kw["lora_layers"] = top
            elif name == "full":
                kw["adapt"] = "full"
            s = lm.LMSettings.from_dict(kw)
            model, vocab = lm.load_pretrained(args.model)
            train = not name.startswith("eval")
            if train:
                model = lm.adaptable(model, s)
            bl = lm.blocks(lm.stream_ids(vocab, data), args.context)
            trainable = sum(p.numel() for p in model.parameters() if p.requires_grad) if train else 0
            trunk = None
            if name.startswith("eval-trunk"):  # an untimed pass stores the bottom layers' output, as the first LM does
                trunk = (lm.trunk_layer(s, model), f"{s.precision}:cpu")
                lm.TRUNK.clear()
                time_config(model, vocab, bl, s, args.batch, args.steps, False, trunk)
            tps = time_config(model, vocab, bl, s, args.batch, args.steps, train, trunk)
            rows.append((name, precision, trainable, tps))
            load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
            print(f"{name:8s} {precision}: {tps:8.0f} tokens/s  ({load})", file=sys.stderr, flush=True)
            del model
    base = next((r[3] for r in rows if r[0] == "gpt2"), None)
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"\nDownstream LM speed: {args.model}, context {args.context}, batch {args.batch}, "
          f"{args.threads} thread(s), {args.steps} timed steps; {os.cpu_count()} CPUs; {load}\n")
    print(f"LoRA dropout {args.lora_dropout}\n")
    print("| configuration | precision | trained parameters | tokens/s | vs gpt2 training | vs eval |")
    print("|---|---|---:|---:|---:|---:|")
    for name, precision, n, tps in rows:
        ratio = f"{tps / base:.3f}x" if base else ""
        ev = next((r[3] for r in rows if r[0] == "eval" and r[1] == precision), None)
        print(f"| {name} | {precision} | {n:,} | {tps:,.0f} | {ratio} | {f'{tps / ev:.2f}x' if ev else ''} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
