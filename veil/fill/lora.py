"""LoRA fine-tuning shared by the decoder fillers (``llm`` next-token FT, ``llm-instruct`` prompts).

A plain loop rather than ``transformers.Trainer``: minutes-long CPU runs need no checkpointing or
distributed set-up, and the loop shows every training default on one screen. Examples are
``(input_ids, labels)`` pairs (labels ``-100`` where no loss is taken; the model shifts them).
Adapters are saved atomically in the folder format :func:`veil.models.smollm2.load_causal_lm` loads.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

from veil.errors import VeilError


class LoRAFinetuned:
    """A decoder filler fine-tuned with LoRA adapters in one round: ``finetune`` trains :meth:`lora_train`
    on the texts :func:`veil.fill.base.lora_finetune` picks, with the options ``veil finetune`` passes."""

    name: str

    @staticmethod
    def lora_train() -> Any:
        """The training function ``(texts, output_dir, *, model, seed, progress, **options) -> summary``."""
        raise NotImplementedError

    @classmethod
    def finetune(cls, docs, output_dir, *, texts=None, data="mask-free", model=None, rounds=1, k=10, seed=0,
                 progress=True, fill=None, **options):
        # fill: unused, one round on given or mask-free text has nothing to fill
        from veil.fill.base import lora_finetune

        return lora_finetune(cls.name, cls.lora_train(), docs, output_dir, texts=texts, data=data, rounds=rounds,
                             model=model, seed=seed, progress=progress, options=options)


def check_output(out: Path) -> None:
    if out.exists() and any(out.iterdir()) and not (out / "adapter_config.json").is_file():
        raise VeilError(f"{out} exists and is not a veil adapter folder; choose another output")


def load_base(model: str | None, model_obj: Any, tokenizer: Any, device: str | None) -> tuple[Any, Any, str]:
    """``(model, tokenizer, device)``: the given objects, or the causal LM ``model`` (default SmolLM2)."""
    from veil.models.device import resolve_device
    from veil.models.smollm2 import load_causal_lm

    device = resolve_device(device)
    if model_obj is not None:
        model_obj.to(device)
        return model_obj, tokenizer, device
    base, tok = load_causal_lm(model, device=device)
    return base, tok, device


def base_name(model: str | None, base: Any, given: bool) -> str:
    from veil.models.smollm2 import DEFAULT_MODEL

    name = str(model) if model else (getattr(base.config, "name_or_path", "") if given else "")
    return name or DEFAULT_MODEL


def train_lora(base: Any, examples: Sequence[tuple[list[int], list[int]]], *, pad_id: int, device: str,
               epochs: float, learning_rate: float, batch_size: int, lora_r: int, lora_alpha: int,
               lora_dropout: float, target_modules: Sequence[str], seed: int, max_steps: int | None = None,
               bucket_by_length: bool = False, desc: str = "LoRA", progress: bool = True) -> tuple[Any, dict[str, Any]]:
    """Train LoRA adapters on ``base``; returns the peft model (eval mode) and a summary."""
    import torch
    from peft import LoraConfig, get_peft_model
    from veil.training import adamw, optimise

    torch.manual_seed(seed)
    cfg = LoraConfig(r=lora_r, lora_alpha=lora_alpha, lora_dropout=lora_dropout,
                     target_modules=list(target_modules), task_type="CAUSAL_LM")
    peft_model = get_peft_model(base, cfg)
    peft_model.train()
    params = [p for p in peft_model.parameters() if p.requires_grad]
    steps_per_epoch = math.ceil(len(examples) / batch_size)
    total = max_steps if max_steps is not None else max(1, math.ceil(steps_per_epoch * epochs))
    if total < 1:
        raise VeilError("max_steps must be at least 1")
    opt, sched = adamw(params, lr=learning_rate, total=total, warmup=max(1, total // 20))
    rng = random.Random(seed)
    t0 = time.time()

    def batches() -> Iterator[list[tuple[list[int], list[int]]]]:
        while True:
            order = list(range(len(examples)))
            rng.shuffle(order)
            if bucket_by_length:  # similar lengths together (less padding), batches in random order
                order.sort(key=lambda i: len(examples[i][0]) // 8)
            epoch = [order[b:b + batch_size] for b in range(0, len(order), batch_size)]
            if bucket_by_length:
                rng.shuffle(epoch)
            for idx in epoch:
                yield [examples[i] for i in idx]

    def loss_of(batch: list[tuple[list[int], list[int]]]) -> Any:
        L = max(len(x) for x, _ in batch)
        ids = torch.full((len(batch), L), pad_id, dtype=torch.long)
        labels = torch.full((len(batch), L), -100, dtype=torch.long)
        mask = torch.zeros(len(batch), L, dtype=torch.long)
        for r, (x, y) in enumerate(batch):
            ids[r, :len(x)] = torch.tensor(x)
            labels[r, :len(y)] = torch.tensor(y)
            mask[r, :len(x)] = 1
        return peft_model(input_ids=ids.to(device), attention_mask=mask.to(device), labels=labels.to(device)).loss

    losses = optimise(batches(), loss_of, opt, sched, steps=total, clip_params=params, desc=desc, progress=progress,
                      window=20)
    peft_model.eval()
    return peft_model, {"steps": total, "first_loss": losses[0], "final_loss": sum(losses[-20:]) / len(losses[-20:]),
                        "seconds": round(time.time() - t0, 1), "device": device,
                        "lora": {"r": lora_r, "alpha": lora_alpha, "dropout": lora_dropout,
                                 "target_modules": list(target_modules)}}


def save_adapter(peft_model: Any, tok: Any, out: Path, summary: dict[str, Any]) -> None:
    """Adapters, tokenizer and ``veil_adapter.json`` into ``out``, replaced atomically."""
    from veil.models.smollm2 import ADAPTER_META

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=out.name + ".", dir=out.parent))
    try:
        peft_model.save_pretrained(str(tmp))
        tok.save_pretrained(str(tmp))
        (tmp / ADAPTER_META).write_text(json.dumps(summary, indent=2))
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
