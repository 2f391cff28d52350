"""Train / evaluate stage: the downstream LM's settings (the experiment file's ``lm:`` section), validated.

All defaults on one screen (nanoGPT-style); an unknown setting, or one that does not apply to the
kind of LM chosen (config-built or a pre-trained ``lm.model``), is an error.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import Any

from veil.errors import VeilError

log = logging.getLogger(__name__)


#: settings of the config-built LM only, and of a pre-trained ``model`` only: giving one to the other
#: kind is an error (it would be ignored)
BUILT_ONLY = ("arch", "n_layer", "n_embd", "n_head", "vocab_size", "tokenizer", "dropout", "pretrain_epochs",
              "pretrain_lr")
PRETRAINED_ONLY = ("adapt", "lora_r", "lora_alpha", "lora_dropout", "lora_targets", "lora_layers", "share_trunk")
@dataclass
class LMSettings:
    """Every setting of the downstream LM; identical for all fine-tuning variants of one experiment."""

    # a pre-trained causal LM: "smollm2" (packaged, offline) or a name/path for AutoModelForCausalLM;
    # None: the config-built ``arch`` below, pre-trained on the experiment's ``pretrain`` corpus
    model: str | None = None
    adapt: str = "lora"  # how a pre-trained model is fine-tuned: "lora" (peft adapters) or "full"
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    lora_targets: str = "all-linear"  # peft target_modules: "all-linear" or comma-separated module names
    # adapters on the top N transformer layers only (None: every layer). Back-propagation then stops at the
    # lowest adapted layer: a LoRA step on SmolLM2-135M with the top 8 of 30 layers runs about 1.9x as many
    # tokens/s on a CPU (docs/experiments.md)
    lora_layers: int | None = None
    # with lora_layers: evaluations share the layers below the adapters (the same weights in every adapted LM)
    # through veil.downstream.lm.TRUNK, computed once per test batch; the same logits, about half the evaluation time
    share_trunk: bool = True
    # "bf16": training under torch.autocast(bfloat16), fp32 weights, evaluations in fp32; "auto": bf16 where the
    # device computes it natively (a CPU with AVX-512 BF16 or AMX, a GPU that supports it), else fp32.
    # Resolved when the settings are read, so keys and results name the precision that ran.
    precision: str = "fp32"
    arch: str = "gpt2"  # a name in veil.registry.downstream_lms: a factory (settings, vocab) -> causal LM
    n_layer: int = 2
    n_embd: int = 256
    n_head: int = 4
    context: int = 64
    vocab_size: int = 8000
    tokenizer: str = "bpe"  # byte-level BPE trained on the pre-training corpus; "word": words + <unk>
    dropout: float = 0.1
    seed: int = 0
    seeds: int = 1  # fine-tuning runs per variant (seeds seed, seed+1, ...): mean and spread of perplexity
    batch_size: int = 32
    pretrain_epochs: float = 1.0
    pretrain_lr: float = 2e-3
    finetune_epochs: float = 2.0
    # every fine-tuning run takes exactly this many optimiser steps: one training budget for every corpus
    # variant (None: finetune_epochs over the variant's own blocks, so a variant whose text is more tokens
    # long, such as Baseline 0's "[MASK]"s, also gets more steps)
    finetune_steps: int | None = None
    finetune_lr: float = 5e-4
    weight_decay: float = 0.01
    warmup_steps: int = 50
    threads: int | None = None
    device: str | None = None  # None: cuda when present, else cpu

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "LMSettings":
        from veil.config import check_keys, field_names, from_mapping

        d = dict(d or {})
        check_keys(d, field_names(cls), "lm", "LM setting")
        wrong = sorted(set(d) & set(BUILT_ONLY if d.get("model") else PRETRAINED_ONLY))
        if wrong:
            kind = "a pre-trained lm.model" if d.get("model") else "the config-built LM (no lm.model)"
            raise VeilError(f"LM setting(s) {', '.join(wrong)} do not apply to {kind}")
        if d.get("adapt") == "full" and any(k.startswith("lora_") for k in d):
            raise VeilError("lm.lora_* settings need lm.adapt: lora")
        s = from_mapping(cls, d, "lm", "LM setting")
        if s.adapt not in ("lora", "full"):
            raise VeilError(f"lm.adapt must be lora or full, not {s.adapt!r}")
        if s.precision not in ("fp32", "bf16", "auto"):
            raise VeilError(f"lm.precision must be fp32, bf16 or auto, not {s.precision!r}")
        if s.precision != "fp32":
            from veil.models.device import native_bf16, resolve_device

            device = resolve_device(s.device)
            native = native_bf16(device)
            if s.precision == "auto":
                s.precision = "bf16" if native else "fp32"
                log.info("lm.precision auto: %s on %s", s.precision, device)
            elif not native:
                log.warning("lm.precision bf16 on %s, which has no native bfloat16: it is emulated, several times "
                            "slower than fp32 (precision: auto picks fp32 here)", device)
        if s.lora_r < 1:
            raise VeilError("lm.lora_r must be at least 1")
        if s.lora_layers is not None and (not isinstance(s.lora_layers, int) or isinstance(s.lora_layers, bool)
                                          or s.lora_layers < 1):
            raise VeilError(f"lm.lora_layers must be a positive whole number (the top N layers), not {s.lora_layers!r}")
        if s.n_embd % s.n_head:
            raise VeilError(f"lm.n_embd ({s.n_embd}) must be a multiple of lm.n_head ({s.n_head})")
        if s.finetune_steps is not None and (not isinstance(s.finetune_steps, int) or s.finetune_steps < 1):
            raise VeilError(f"lm.finetune_steps must be a positive whole number, not {s.finetune_steps!r}")
        if min(s.n_layer, s.n_embd, s.n_head, s.context, s.batch_size, s.seeds) < 1 or s.context < 2:
            raise VeilError("lm sizes must be positive and context at least 2")
        return s

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def adaptation_key(self) -> dict[str, Any]:
        """Settings of a fine-tuning run beyond those the runner always keys (empty for the config-built
        LM in fp32, whose cached stages predate these settings)."""
        out: dict[str, Any] = {}
        if self.model:
            out["adapt"] = self.adapt
            if self.adapt == "lora":
                out["lora"] = [self.lora_r, self.lora_alpha, self.lora_dropout, self.lora_targets]
                if self.lora_layers is not None:  # keys of runs on every layer stay what they were
                    out["lora"].append(self.lora_layers)
            out["context"] = self.context
        if self.precision != "fp32":
            out["precision"] = self.precision
        return out
