"""Core: where a model runs and in which number format, one choice for every model veil loads or trains.

``--device`` / ``device:`` settings everywhere mean the same: a GPU asked for and absent is an error,
nothing given means ``cuda`` when a GPU is present, else ``cpu``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from veil.errors import VeilError


def resolve_device(device: str | None = None) -> str:
    """``device``, or ``cuda`` when a GPU is present, else ``cpu``; a GPU asked for and absent is an error."""
    import torch

    if device:
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise VeilError(f"--device {device}: this machine has no CUDA GPU (or torch was built without CUDA)")
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def native_bf16(device: str) -> bool:
    """Whether ``device`` computes in bfloat16 natively: a CUDA GPU that supports it, or a CPU with
    AVX-512 BF16 or AMX (elsewhere bf16 is emulated and no faster than fp32)."""
    if device.startswith("cuda"):
        import torch

        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    if device == "cpu":
        try:
            flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
        return re.search(r"\b(avx512_bf16|amx_bf16)\b", flags) is not None
    return False


def resolve_dtype(dtype: str | None, device: str) -> Any:
    """The torch dtype for ``dtype`` (``None``/``float32``/``fp32``, ``bfloat16``/``bf16``,
    ``float16``/``fp16``, or ``auto``: bf16 where :func:`native_bf16`, else fp32)."""
    import torch

    if dtype == "auto":
        return torch.bfloat16 if native_bf16(device) else torch.float32
    torch_dtype = {None: torch.float32, "float32": torch.float32, "fp32": torch.float32,
                   "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
                   "float16": torch.float16, "fp16": torch.float16}.get(dtype)
    if torch_dtype is None:
        raise VeilError(f"unknown dtype {dtype!r}; use auto, float32, bfloat16 or float16")
    return torch_dtype
