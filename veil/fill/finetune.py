"""Fill stage: MLM fine-tuning of an ``mlm`` filler on the corpus it fills (paper §3.2, *FT*).

Training text comes from the masked corpus only (never from original text):

- ``mask-free``: the documents with no placeholder (their text is unchanged by masking), or
- ``top1`` / ``topk``: the whole corpus filled by the current model with that strategy.

:func:`veil.fill.rounds.finetune_rounds` repeats *fill -> fine-tune -> fill again* for N rounds; each round starts
from the previous round's model. Training is plain masked-language-model training (15% of the
tokens, or of the whole words by default, through transformers' ``DataCollatorForLanguageModeling``)
in a short torch loop with AdamW and a linear schedule; every default is in :class:`MLMTrainConfig`.
Each round is saved with ``save_pretrained`` (model and tokenizer) to ``OUT/round-N`` and the last one
to ``OUT`` itself, so ``veil fill --filler mlm --model OUT`` loads it. Folders are written under a
temporary name and renamed when complete, so an interrupted run resumes at the first unfinished round.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from veil.errors import VeilError
from veil.markers import unescape
from veil.types import MaskedDocument

log = logging.getLogger(__name__)

DATA_SOURCES = ("mask-free", "top1", "topk")


@dataclass
class MLMTrainConfig:
    epochs: float = 1.0  # passes over the training texts (a fraction is allowed)
    max_steps: int | None = None  # stop after this many optimiser steps (overrides epochs)
    batch_size: int = 16  # sequences per step
    lr: float = 5e-5  # AdamW learning rate (BERT fine-tuning range)
    weight_decay: float = 0.01  # AdamW weight decay (not on biases / LayerNorm)
    warmup_ratio: float = 0.06  # linear warm-up share of the steps, then linear decay
    mlm_probability: float = 0.15  # share of tokens (or whole words) masked, as in BERT
    whole_word: bool = True  # mask whole words (all their pieces) rather than single tokens
    max_length: int = 128  # tokens per training sequence; longer texts are cut into several
    seed: int = 0  # shuffling and masking
    device: str | None = None  # cpu / cuda (default: a GPU when present)


def mask_free_texts(docs: Sequence[MaskedDocument]) -> list[str]:
    """The texts of the documents that have no placeholder (user look-alikes unescaped)."""
    return [unescape(d.text) for d in docs if not d.placeholders and d.text.strip()]


def train_mlm(model: Any, tok: Any, texts: Sequence[str], cfg: MLMTrainConfig,
              progress: bool = True) -> dict[str, Any]:
    """Fine-tunes ``model`` in place on ``texts``; returns the step count and losses."""
    import torch
    from transformers import DataCollatorForLanguageModeling

    from veil.models.device import resolve_device
    from veil.training import adamw, matrix_decay_groups, optimise

    texts = [t for t in texts if t.strip()]
    if not texts:
        raise VeilError("no training text (no mask-free document, or an empty corpus)")
    if cfg.batch_size < 1 or cfg.max_length < 8 or not (0 < cfg.mlm_probability < 1):
        raise VeilError("batch_size >= 1, max_length >= 8 and 0 < mlm_probability < 1 are needed")
    torch.manual_seed(cfg.seed)
    device = torch.device(resolve_device(cfg.device))
    enc = tok(list(texts), truncation=True, max_length=cfg.max_length, return_overflowing_tokens=True,
              return_special_tokens_mask=True, return_offsets_mapping=cfg.whole_word)
    keys = ["input_ids", "special_tokens_mask"] + (["offset_mapping"] if cfg.whole_word else [])
    features = [{k: enc[k][i] for k in keys} for i in range(len(enc["input_ids"]))]
    # transformers' whole-word masking replaces every chosen word by the mask (no 10% random / 10% kept)
    replace = dict(mask_replace_prob=1.0, random_replace_prob=0.0) if cfg.whole_word else {}
    collator = DataCollatorForLanguageModeling(tok, mlm=True, mlm_probability=cfg.mlm_probability,
                                               whole_word_mask=cfg.whole_word, seed=cfg.seed, **replace)
    gen = torch.Generator().manual_seed(cfg.seed)
    steps_per_epoch = math.ceil(len(features) / cfg.batch_size)
    total = cfg.max_steps or max(1, math.ceil(cfg.epochs * steps_per_epoch))
    groups = matrix_decay_groups((p for p in model.parameters() if p.requires_grad), cfg.weight_decay)
    opt, sched = adamw(groups, lr=cfg.lr, total=total, warmup=int(cfg.warmup_ratio * total))
    model.to(device).train()

    def batches() -> Iterator[dict[str, Any]]:
        while True:  # epochs of shuffled batches; a batch with nothing masked (tiny texts) is left out
            any_masked = False
            for idx in torch.randperm(len(features), generator=gen).split(cfg.batch_size):
                batch = collator(_pad_features([features[i] for i in idx.tolist()], tok.pad_token_id or 0))
                batch = {k: v.to(device) for k, v in batch.items() if k in ("input_ids", "attention_mask", "labels")}
                if int((batch["labels"] != -100).sum()) > 0:
                    any_masked = True
                    yield batch
            if not any_masked:
                raise VeilError("no token could be masked for training; the texts are too short")

    losses = optimise(batches(), lambda batch: model(**batch).loss, opt, sched, steps=total,
                      clip_params=model.parameters(), desc="finetune", progress=progress)
    step = len(losses)
    model.eval()
    return {"steps": step, "sequences": len(features), "first_loss": losses[0], "last_loss": losses[-1],
            "mean_loss_last_10pct": sum(losses[-max(1, len(losses) // 10):]) / max(1, len(losses) // 10)}


def _pad_features(feats: list[dict[str, Any]], pad_id: int) -> list[dict[str, Any]]:
    """Pads a batch to one length here: the collator's own padding does not pad ``offset_mapping``."""
    longest = max(len(f["input_ids"]) for f in feats)
    out = []
    for f in feats:
        n = longest - len(f["input_ids"])
        g = {"input_ids": list(f["input_ids"]) + [pad_id] * n,
             "attention_mask": [1] * len(f["input_ids"]) + [0] * n,
             "special_tokens_mask": list(f["special_tokens_mask"]) + [1] * n}
        if "offset_mapping" in f:
            g["offset_mapping"] = [tuple(o) for o in f["offset_mapping"]] + [(0, 0)] * n
        out.append(g)
    return out


def save_model(model: Any, tok: Any, out: Path, extra: dict[str, Any] | None = None) -> None:
    """``save_pretrained`` of model and tokenizer into ``out``, replaced atomically."""
    import json

    import tempfile

    from veil.io.atomic import check_target

    check_target(out.with_name(out.name + ".old"))  # (a link there is refused, never followed)
    out.parent.mkdir(parents=True, exist_ok=True)
    # a fresh folder veil made (0700, random name) beside out: nothing planted there can be written through
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    if extra is not None:
        (tmp / "veil_finetune.json").write_text(json.dumps(extra, indent=1), encoding="utf-8")
    tmp.chmod(0o755)
    if out.is_symlink():
        raise VeilError(f"{out} is a symbolic link; veil never writes through links (remove it, or choose another -o)")
    if out.exists():
        old = out.with_name(out.name + ".old")
        if old.exists():
            shutil.rmtree(old)
        os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old)
    else:
        os.replace(tmp, out)
