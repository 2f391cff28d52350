"""Fine-tuning (FT) of the ``llm`` filler: LoRA next-token training of the causal LM on corpus text.

The paper's "Top-K, FT" fine-tunes the masked LM that fills the masks on the corpus itself (the
mask-free documents, or a filled corpus) so its proposals fit the domain. For the ``llm`` filler,
whose ranking is the whole-sentence log-likelihood of a causal LM, the matching objective is plain
next-token prediction on those texts, each sentence starting with the same start token the
scorer uses. Only LoRA adapters are trained (peft); they are saved in the folder format
:func:`veil.models.smollm2.load_causal_lm` loads, so ``veil fill --filler llm --model DIR`` uses them.
Texts that still contain a marker are skipped: the filler never learns from masked text.
"""

from __future__ import annotations

import json
import logging
import math
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

from veil.errors import VeilError
from veil.mask.placeholders import MARKER_RE, unescape

log = logging.getLogger(__name__)


def training_texts(texts: Iterable[Any], limit: int | None = None) -> tuple[list[str], int]:
    """Unescaped texts without markers (strings or documents with ``.text``), at most ``limit``."""
    out, skipped = [], 0
    for t in texts:
        t = getattr(t, "text", t)
        if not isinstance(t, str) or not t.strip():
            continue
        if MARKER_RE.search(t):
            skipped += 1
            continue
        out.append(unescape(t))
        if limit is not None and len(out) >= limit:
            break
    return out, skipped


def finetune_causal(texts: Iterable[Any], output_dir: str | Path, *, model: str | None = None,
                    epochs: float = 1.0, learning_rate: float = 3e-4, batch_size: int = 16,
                    lora_r: int = 8, lora_alpha: int = 16, lora_dropout: float = 0.05,
                    target_modules: Sequence[str] = ("q_proj", "k_proj", "v_proj", "o_proj"),
                    max_tokens: int = 96, limit: int | None = None, seed: int = 0, device: str | None = None,
                    model_obj: Any = None, tokenizer: Any = None, progress: bool = True) -> dict[str, Any]:
    """LoRA next-token fine-tuning of the ``llm`` filler's causal LM; returns a summary dict."""
    import torch
    from peft import LoraConfig, get_peft_model
    from tqdm.auto import tqdm
    from transformers import get_linear_schedule_with_warmup

    from veil.models.smollm2 import ADAPTER_META, DEFAULT_MODEL, load_causal_lm, resolve_device

    out = Path(output_dir)
    if out.exists() and any(out.iterdir()) and not (out / "adapter_config.json").is_file():
        raise VeilError(f"{out} exists and is not a veil adapter folder; choose another output")
    rows, skipped = training_texts(texts, limit)
    if not rows:
        raise VeilError(f"no training text: every text was empty or still contained markers ({skipped} skipped)")
    torch.manual_seed(seed)
    device = resolve_device(device)
    if model_obj is not None:
        base, tok = model_obj, tokenizer
        base.to(device)
    else:
        base, tok = load_causal_lm(model, device=device)
    start = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    if start is None:
        raise VeilError("the tokenizer has neither a BOS nor an EOS token")
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    examples = [[start] + ids[:max_tokens - 1] for ids in tok(rows, add_special_tokens=False)["input_ids"]]
    examples = [e for e in examples if len(e) >= 2]
    cfg = LoraConfig(r=lora_r, lora_alpha=lora_alpha, lora_dropout=lora_dropout,
                     target_modules=list(target_modules), task_type="CAUSAL_LM")
    peft_model = get_peft_model(base, cfg)
    peft_model.train()
    params = [p for p in peft_model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=learning_rate, weight_decay=0.0)
    total = max(1, math.ceil(math.ceil(len(examples) / batch_size) * epochs))
    sched = get_linear_schedule_with_warmup(opt, num_warmup_steps=max(1, total // 20), num_training_steps=total)
    rng = random.Random(seed)
    losses: list[float] = []
    t0 = time.time()
    bar = tqdm(total=total, desc="llm LoRA", disable=not progress, unit="step")
    step = 0
    while step < total:
        order = list(range(len(examples)))
        rng.shuffle(order)
        order.sort(key=lambda i: len(examples[i]) // 8)  # similar lengths together: less padding
        batches = [order[b:b + batch_size] for b in range(0, len(order), batch_size)]
        rng.shuffle(batches)
        for idx in batches:
            if step >= total:
                break
            batch = [examples[i] for i in idx]
            L = max(len(x) for x in batch)
            ids = torch.full((len(batch), L), pad_id, dtype=torch.long)
            labels = torch.full((len(batch), L), -100, dtype=torch.long)
            mask = torch.zeros(len(batch), L, dtype=torch.long)
            for r, x in enumerate(batch):
                ids[r, :len(x)] = torch.tensor(x)
                labels[r, 1:len(x)] = torch.tensor(x[1:])
                mask[r, :len(x)] = 1
            loss = peft_model(input_ids=ids.to(device), attention_mask=mask.to(device), labels=labels.to(device)).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            losses.append(float(loss.detach()))
            step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{sum(losses[-20:]) / len(losses[-20:]):.3f}")
    bar.close()
    peft_model.eval()
    base_name = str(model) if model else (getattr(base.config, "name_or_path", "") if model_obj is not None else "")
    summary = {"base_model": base_name or DEFAULT_MODEL, "objective": "next-token (llm filler)",
               "examples": len(examples), "skipped_texts": skipped, "steps": total, "epochs": epochs,
               "first_loss": losses[0], "final_loss": sum(losses[-20:]) / len(losses[-20:]),
               "seconds": round(time.time() - t0, 1), "device": device,
               "lora": {"r": lora_r, "alpha": lora_alpha, "dropout": lora_dropout, "target_modules": list(target_modules)}}
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
    log.info("llm adapters saved to %s (%d texts, %d steps, loss %.3f -> %.3f, %.0f s)", out, len(examples), total,
             summary["first_loss"], summary["final_loss"], summary["seconds"])
    return summary
