"""Train / evaluate stage: a small GPT-2-style downstream LM, pre-training, fine-tuning, perplexity per word.

The model is built from a config (no weights downloaded) by the architecture registered in
``veil.registry.downstream_lms`` (default ``gpt2``: ``GPT2LMHeadModel``), saved with ``save_pretrained``
and loaded back through ``AutoModelForCausalLM``, so any causal LM architecture works; over a
byte-level BPE (default) or word-level vocabulary (:mod:`veil.train.tokenizer`). Text is one stream of sentences separated by
``<eos>``, cut into blocks of ``context`` tokens that overlap by one token, so every token but the
first is predicted exactly once. Fine-tuning can give zero loss weight to positions whose *target*
is ``[MASK]`` (the paper's Baseline 1).

Perplexity per word = exp(total NLL of every token of the test stream / (words + sentences)),
words counted with :func:`veil.textutil.count_words` and one end-of-sentence per sentence; the same
denominator for every method, so perplexities compare.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from veil.errors import VeilError
from veil.textutil import count_words
from veil.train.tokenizer import BPEVocab, WordVocab, load_vocab, save_vocab

log = logging.getLogger(__name__)


@dataclass
class LMSettings:
    """Every setting of the downstream LM; identical for all fine-tuning variants of one experiment."""

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
    finetune_lr: float = 5e-4
    weight_decay: float = 0.01
    warmup_steps: int = 50
    threads: int | None = None
    device: str | None = None  # None: cuda when present, else cpu

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "LMSettings":
        d = dict(d or {})
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(d) - known)
        if unknown:
            raise VeilError(f"unknown LM setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        s = cls(**d)
        if s.n_embd % s.n_head:
            raise VeilError(f"lm.n_embd ({s.n_embd}) must be a multiple of lm.n_head ({s.n_head})")
        if min(s.n_layer, s.n_embd, s.n_head, s.context, s.batch_size, s.seeds) < 1 or s.context < 2:
            raise VeilError("lm sizes must be positive and context at least 2")
        return s

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _device(s: LMSettings) -> str:
    import torch

    if s.device:
        return s.device
    return "cuda" if torch.cuda.is_available() else "cpu"


def make_model(s: LMSettings, vocab: WordVocab | BPEVocab) -> Any:
    """A fresh downstream LM built by the registered architecture ``s.arch`` (default ``gpt2``)."""
    from veil.registry import downstream_lms

    try:
        factory = downstream_lms.get(s.arch)
    except KeyError as e:
        raise VeilError(f"lm.arch: {e.args[0]}") from None
    return factory(s, vocab)


def make_gpt2(s: LMSettings, vocab: WordVocab | BPEVocab) -> Any:
    """GPT-2 built from a config (nothing downloaded): the paper's downstream Transformer LM, smaller."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(s.seed)
    cfg = GPT2Config(vocab_size=len(vocab), n_positions=s.context, n_embd=s.n_embd, n_layer=s.n_layer,
                     n_head=s.n_head, resid_pdrop=s.dropout, embd_pdrop=s.dropout, attn_pdrop=s.dropout,
                     bos_token_id=vocab.eos_id, eos_token_id=vocab.eos_id, pad_token_id=vocab.pad_id)
    return GPT2LMHeadModel(cfg)


def n_params(model: Any) -> int:
    return sum(p.numel() for p in model.parameters())


def stream_ids(vocab: WordVocab | BPEVocab, texts: Sequence[str]) -> list[int]:
    """``<eos> s1 <eos> s2 <eos> ...``: the leading ``<eos>`` is the context of the first word."""
    ids = [vocab.eos_id]
    if isinstance(vocab, BPEVocab):
        for i in range(0, len(texts), 4096):
            for row in vocab.encode_batch(texts[i:i + 4096]):
                ids.extend(row)
        return ids
    for t in texts:
        ids.extend(vocab.encode(t))
    return ids


def blocks(ids: Sequence[int], context: int) -> list[list[int]]:
    """Blocks of ``context`` tokens overlapping by one: each token but ``ids[0]`` is a target once."""
    step = context - 1
    out = []
    for i in range(0, max(1, len(ids) - 1), step):
        b = list(ids[i:i + context])
        if len(b) >= 2:
            out.append(b)
    return out


def _batch(rows: list[list[int]], pad_id: int, device: str) -> tuple[Any, Any, Any]:
    import torch

    n = max(len(r) for r in rows)
    x = torch.full((len(rows), n), pad_id, dtype=torch.long)
    valid = torch.zeros((len(rows), n), dtype=torch.bool)
    for i, r in enumerate(rows):
        x[i, :len(r)] = torch.tensor(r, dtype=torch.long)
        valid[i, :len(r)] = True
    return x.to(device), valid.to(device), valid.long().to(device)


def token_nll(model: Any, x: Any, valid: Any, attn: Any) -> Any:
    """NLL of every target position (shape batch x (len-1)); padding targets are 0 and ``valid`` says which."""
    import torch.nn.functional as F

    logits = model(input_ids=x, attention_mask=attn).logits[:, :-1]
    tgt = x[:, 1:]
    nll = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), tgt.reshape(-1), reduction="none")
    return nll.view(tgt.shape) * valid[:, 1:]


def train(model: Any, vocab: WordVocab | BPEVocab, texts: Sequence[str], s: LMSettings, *, epochs: float, lr: float,
          mask_loss_weight: float = 1.0, desc: str = "train", progress: bool = True) -> dict[str, Any]:
    """Next-token training on ``texts``; positions whose target is ``[MASK]`` weigh ``mask_loss_weight``."""
    import random

    import torch

    from veil.train.loop import optimise

    if s.threads:
        torch.set_num_threads(s.threads)
    dev = _device(s)
    model.to(dev).train()
    bl = blocks(stream_ids(vocab, texts), s.context)
    if not bl or len(bl[0]) < 2:
        raise VeilError(f"{desc}: no training text")
    steps_per_epoch = math.ceil(len(bl) / s.batch_size)
    total = max(1, int(round(steps_per_epoch * epochs)))
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=s.weight_decay)
    warm = min(s.warmup_steps, max(1, total // 10))
    sched = torch.optim.lr_scheduler.LambdaLR(  # linear warm-up, then linear decay to 5%
        opt, lambda st: (st + 1) / warm if st < warm else max(0.05, (total - st) / max(1, total - warm)))
    rng = random.Random(s.seed)
    torch.manual_seed(s.seed)
    t0 = time.time()

    def shuffled_batches() -> Iterator[list[list[int]]]:
        order: list[int] = []
        while True:
            if len(order) < s.batch_size:
                more = list(range(len(bl)))
                rng.shuffle(more)
                order.extend(more)
            idx, order = order[:s.batch_size], order[s.batch_size:]
            yield [bl[i] for i in idx]

    def loss_of(rows: list[list[int]]) -> Any:
        x, valid, attn = _batch(rows, vocab.pad_id, dev)
        nll = token_nll(model, x, valid, attn)
        w = valid[:, 1:].float()
        if mask_loss_weight != 1.0:
            w = w * torch.where(x[:, 1:] == vocab.mask_id, mask_loss_weight, 1.0)
        return (nll * w).sum() / w.sum().clamp_min(1.0)

    losses = optimise(shuffled_batches(), loss_of, opt, sched, steps=total, clip_params=model.parameters(),
                      desc=desc, progress=progress)
    model.eval()
    tail = losses[-max(1, len(losses) // 10):]
    info = {"steps": total, "blocks": len(bl), "first_loss": losses[0], "last_loss": sum(tail) / len(tail),
            "seconds": round(time.time() - t0, 1), "device": dev}
    log.info("%s: %d steps on %d blocks, loss %.3f -> %.3f (%.0fs)", desc, total, len(bl), info["first_loss"],
             info["last_loss"], info["seconds"])
    return info


def stream_nll(model: Any, vocab: WordVocab | BPEVocab, texts: Sequence[str], s: LMSettings, progress: bool = False,
               desc: str = "perplexity") -> Iterator[Any]:
    """The NLL of every token of the test stream but the first, in stream order, one 1-D tensor per block."""
    import torch
    from tqdm import tqdm

    dev = _device(s)
    model.to(dev).eval()
    bl = blocks(stream_ids(vocab, texts), s.context)
    with torch.no_grad():
        for i in tqdm(range(0, len(bl), s.batch_size), desc=desc, disable=not progress, leave=False):
            rows = bl[i:i + s.batch_size]
            x, valid, attn = _batch(rows, vocab.pad_id, dev)
            nll = token_nll(model, x, valid, attn).double().cpu()
            for r, row in enumerate(rows):  # blocks overlap by one token: each token is a target once
                yield nll[r, :len(row) - 1]


def perplexity(model: Any, vocab: WordVocab | BPEVocab, texts: Sequence[str], s: LMSettings, progress: bool = True,
               desc: str = "perplexity") -> dict[str, Any]:
    """Per-word perplexity: exp(total NLL / (words + sentences)); ``inf`` past float range."""
    total = 0.0
    tokens = 0
    for nll in stream_nll(model, vocab, texts, s, progress=progress, desc=desc):
        total += float(nll.sum())
        tokens += len(nll)
    words = sum(count_words(t) for t in texts) + len(texts)
    if words == 0:
        raise VeilError("perplexity: the test set has no words")
    per_word = total / words
    ppl = math.exp(per_word) if per_word < 700 else float("inf")
    return {"perplexity": ppl, "nll": total, "words": words, "tokens": tokens,
            "token_perplexity": math.exp(min(700.0, total / max(1, tokens)))}


def save(model: Any, vocab: WordVocab | BPEVocab, out: Path, info: dict[str, Any] | None = None) -> None:
    import json

    out.mkdir(parents=True, exist_ok=True)
    model.to("cpu").save_pretrained(out, safe_serialization=True)
    save_vocab(vocab, out)
    if info is not None:
        (out / "train_info.json").write_text(json.dumps(info, indent=1), encoding="utf-8")


def load(path: Path) -> tuple[Any, WordVocab | BPEVocab]:
    """A saved downstream LM of any registered architecture (its config names the class) and its vocabulary."""
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path), load_vocab(path)


def sentence_logprobs(model: Any, vocab: WordVocab | BPEVocab, texts: Sequence[str], s: LMSettings) -> list[float]:
    """log p(text <eos> | <eos>) of each text in nats (the ASR rescoring's LM score), batched.

    Each text is scored as the perplexity stream scores a sentence: after ``<eos>``, its end
    included, in blocks of ``context`` tokens when it is longer.
    """
    import torch

    dev = _device(s)
    model.to(dev).eval()
    rows: list[list[int]] = []
    owner: list[int] = []
    for i, t in enumerate(texts):
        for b in blocks([vocab.eos_id] + vocab.encode(t), s.context):
            rows.append(b)
            owner.append(i)
    order = sorted(range(len(rows)), key=lambda j: len(rows[j]))  # similar lengths together: less padding
    out = [0.0] * len(texts)
    with torch.no_grad():
        for k in range(0, len(order), s.batch_size):
            idx = order[k:k + s.batch_size]
            x, valid, attn = _batch([rows[j] for j in idx], vocab.pad_id, dev)
            nll = token_nll(model, x, valid, attn).double().sum(dim=1).cpu().tolist()
            for j, v in zip(idx, nll):
                out[owner[j]] -= v
    return out
