"""fp32 linear layers through oneDNN on CPUs where it beats the BLAS PyTorch calls by default.

PyTorch runs a CPU fp32 ``nn.Linear`` as an MKL ``sgemm``. MKL takes its AVX2 path on AMD CPUs, so
on an AMD EPYC with full-width AVX-512 (Zen 5) it reaches half the machine's fp32 rate: measured
here with one thread, MKL 102-108 GFLOP/s against 222-241 GFLOP/s for oneDNN's linear
(``torch.ops.mkldnn._linear_pointwise``, which PyTorch ships and uses for its own fused CPU ops)
at 4096^3 and at BERT / SmolLM2 layer shapes, true fp32 both (errors against a float64 product of
the same order, 1e-4; bf16 would be 0.5). A whole SmolLM2-135M forward (32 x 40 tokens) took 3.68 s
with MKL and 1.89 s with oneDNN, the same arg-max token everywhere. Where MKL runs at full speed
(Intel CPUs) the probe below is expected to keep it.

:func:`linear_backend` decides once per process and thread count by timing both on a layer-sized
product (a few tens of milliseconds); ``VEIL_LINEAR=onednn|blas`` overrides it.
:func:`accelerate_linears` makes a model's ``nn.Linear`` layers use the faster one for inference;
anything that needs a gradient (training, LoRA), another dtype or another device keeps PyTorch's
own path. Results differ from MKL's only by fp32 rounding (the order of the sums).
"""

from __future__ import annotations

import functools
import logging
import os
import time
from typing import Any

log = logging.getLogger(__name__)

BACKENDS = ("auto", "onednn", "blas")
#: oneDNN is chosen when it runs the probe product at least this much faster than the BLAS
MIN_SPEEDUP = 1.15


def onednn_available() -> bool:
    import torch

    return bool(torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise"))


def onednn_linear(x: Any, weight: Any, bias: Any = None) -> Any:
    """``x @ weight.T + bias`` by oneDNN (fp32 CPU, no autograd)."""
    import torch

    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "none")


@functools.lru_cache(maxsize=None)
def _probe(threads: int) -> float:
    """oneDNN's speed-up over ``F.linear`` on a (256 x 1024) x (1024 x 1024) product, best of 5."""
    import torch

    x, w, b = torch.randn(256, 1024), torch.randn(1024, 1024), torch.zeros(1024)
    best = {}
    for name, fn in (("blas", torch.nn.functional.linear), ("onednn", onednn_linear)):
        with torch.no_grad():
            fn(x, w, b)
            t_best = float("inf")
            for _ in range(5):
                t = time.perf_counter()
                fn(x, w, b)
                t_best = min(t_best, time.perf_counter() - t)
        best[name] = t_best
    speedup = best["blas"] / best["onednn"]
    log.info("fp32 linear, %d thread(s): oneDNN %.2fx the BLAS", threads, speedup)
    return speedup


def linear_backend() -> str:
    """``"onednn"`` or ``"blas"``: the faster fp32 CPU linear here (``VEIL_LINEAR`` overrides)."""
    import torch

    choice = os.environ.get("VEIL_LINEAR", "auto").strip().lower() or "auto"
    if choice not in BACKENDS:
        raise ValueError(f"VEIL_LINEAR must be one of {', '.join(BACKENDS)}, got {choice!r}")
    if not onednn_available():
        return "blas"
    if choice != "auto":
        return choice
    return "onednn" if _probe(torch.get_num_threads()) >= MIN_SPEEDUP else "blas"


def _plain(x: Any, weight: Any) -> bool:
    """fp32 CPU tensors and no gradient wanted: the inference case oneDNN's op (no autograd) serves."""
    import torch

    return (x.dtype == torch.float32 and weight.dtype == torch.float32 and x.device.type == "cpu"
            and weight.device.type == "cpu" and not torch.is_autocast_enabled("cpu")  # autocast wants bf16
            and not (torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad)))


def fast_linear(x: Any, weight: Any, bias: Any = None) -> Any:
    """``F.linear(x, weight, bias)`` by the faster backend for fp32 CPU inference, else ``F.linear``."""
    import torch

    if _plain(x, weight) and linear_backend() == "onednn":
        return onednn_linear(x, weight, bias)
    return torch.nn.functional.linear(x, weight, bias)


@functools.lru_cache(maxsize=None)
def fast_linear_class() -> type:
    """The ``nn.Linear`` subclass :func:`accelerate_linears` switches layers to (built on first use)."""
    import torch

    class FastLinear(torch.nn.Linear):
        """An ``nn.Linear`` whose fp32 CPU inference runs through oneDNN."""

        def forward(self, x: Any) -> Any:
            if _plain(x, self.weight):
                return onednn_linear(x, self.weight, self.bias)
            return super().forward(x)

    return FastLinear


def is_linear(module: Any) -> bool:
    """A plain ``nn.Linear``, or one :func:`accelerate_linears` switched."""
    import torch

    return type(module) in (torch.nn.Linear, fast_linear_class())


def accelerate_linears(model: Any) -> int:
    """Switch ``model``'s plain ``nn.Linear`` layers to oneDNN for fp32 CPU inference when
    :func:`linear_backend` says it is faster here; returns how many layers were switched (0 when
    the BLAS is as fast). Weights, state dict and training behaviour are unchanged."""
    import torch

    if linear_backend() != "onednn":
        return 0
    cls = fast_linear_class()
    n = 0
    for m in model.modules():
        if type(m) is torch.nn.Linear:
            m.__class__ = cls
            n += 1
    if n:
        log.info("%d linear layers run through oneDNN (faster than the BLAS on this CPU)", n)
    return n


def restore_linears(model: Any) -> None:
    """Undo :func:`accelerate_linears` (before a conversion that matches ``nn.Linear`` by exact type,
    such as dynamic int8 quantisation)."""
    import torch

    cls = fast_linear_class()
    for m in model.modules():
        if type(m) is cls:
            m.__class__ = torch.nn.Linear
