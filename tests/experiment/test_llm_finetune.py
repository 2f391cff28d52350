"""Fill stage, ``llm`` fine-tuning (the "Top-K, FT" analogue): LoRA next-token training on corpus text."""

from __future__ import annotations

import json

import pytest

from veil.errors import VeilError
from veil.fill.llm_finetune import finetune_causal, training_texts

pytest.importorskip("peft")

CORPUS = ["my account number is on the card", "please call me back tomorrow morning",
          "the order was shipped to my office", "i would like to change my address"] * 6


def test_training_texts_skip_markers_and_unescape():
    rows, skipped = training_texts(["a [MASK] b", "plain text", "  ", "keep [\\MASK] literal"])
    assert rows == ["plain text", "keep [MASK] literal"] and skipped == 1


def test_finetune_lowers_the_loss_and_saves_a_loadable_adapter(tmp_path):
    import torch

    from veil.fill.llm import LLMFiller
    from veil.models.smollm2 import ADAPTER_META
    from tests.tiny_models import build_tiny_causal_lm

    model, tok = build_tiny_causal_lm(CORPUS, vocab_size=300)
    out = tmp_path / "adapter"
    info = finetune_causal(CORPUS, out, model_obj=model, tokenizer=tok, epochs=6, learning_rate=5e-3,
                           batch_size=8, progress=False)
    assert info["final_loss"] < info["first_loss"] and info["examples"] == len(CORPUS)
    assert (out / "adapter_config.json").is_file() and json.loads((out / ADAPTER_META).read_text())["steps"] == 18
    # the adapter is what the llm filler loads with --model DIR (base: a tiny model saved to disk)
    base_dir = tmp_path / "base"
    fresh, _ = build_tiny_causal_lm(CORPUS, vocab_size=300)
    fresh.save_pretrained(base_dir)
    tok.save_pretrained(base_dir)
    meta = json.loads((out / ADAPTER_META).read_text())
    meta["base_model"] = str(base_dir)
    (out / ADAPTER_META).write_text(json.dumps(meta))
    tuned = LLMFiller(model=str(out), n_candidates=4).scorer
    plain = LLMFiller(model=str(base_dir), n_candidates=4).scorer
    assert tuned.rank(["please call me [MASK] tomorrow"], [(15, 21)], 2)
    from veil.fill.causal_scorer import MarkerContext

    ctx = [MarkerContext("please call me ", " tomorrow morning")]
    with torch.no_grad():
        assert tuned.score(ctx, [["back"]])[0][0] > plain.score(ctx, [["back"]])[0][0]  # learnt the corpus


def test_no_training_text_is_a_clear_error(tmp_path):
    with pytest.raises(VeilError, match="no training text"):
        finetune_causal(["a [MASK]"], tmp_path / "x", model_obj=object(), tokenizer=object(), progress=False)
