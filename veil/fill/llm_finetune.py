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

import logging
from pathlib import Path
from typing import Any, Iterable, Sequence

from veil.errors import VeilError
from veil.markers import MARKER_RE, unescape

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
    from veil.fill.lora import base_name, check_output, load_base, save_adapter, train_lora

    out = Path(output_dir)
    check_output(out)
    rows, skipped = training_texts(texts, limit)
    if not rows:
        raise VeilError(f"no training text: every text was empty or still contained markers ({skipped} skipped)")
    base, tok, device = load_base(model, model_obj, tokenizer, device)
    start = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    if start is None:
        raise VeilError("the tokenizer has neither a BOS nor an EOS token")
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    seqs = [[start] + ids[:max_tokens - 1] for ids in tok(rows, add_special_tokens=False)["input_ids"]]
    examples = [(x, [-100] + x[1:]) for x in seqs if len(x) >= 2]  # loss on every token after the start
    peft_model, info = train_lora(base, examples, pad_id=pad_id, device=device, epochs=epochs,
                                  learning_rate=learning_rate, batch_size=batch_size, lora_r=lora_r,
                                  lora_alpha=lora_alpha, lora_dropout=lora_dropout, target_modules=target_modules,
                                  seed=seed, bucket_by_length=True, desc="llm LoRA", progress=progress)
    total = info["steps"]
    summary = {"base_model": base_name(model, base, model_obj is not None), "objective": "next-token (llm filler)",
               "examples": len(examples), "skipped_texts": skipped, "epochs": epochs, **info}
    save_adapter(peft_model, tok, out, summary)
    log.info("llm adapters saved to %s (%d texts, %d steps, loss %.3f -> %.3f, %.0f s)", out, len(examples), total,
             summary["first_loss"], summary["final_loss"], summary["seconds"])
    return summary
