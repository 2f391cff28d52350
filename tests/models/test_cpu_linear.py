"""veil.models.cpu_linear: oneDNN linear layers for fp32 CPU inference, PyTorch's own path otherwise."""

import pytest
import torch

from veil.models import cpu_linear
from veil.models.cpu_linear import (accelerate_linears, fast_linear, fast_linear_class, is_linear, linear_backend,
                                    onednn_available, restore_linears)

needs_onednn = pytest.mark.skipif(not onednn_available(), reason="PyTorch built without oneDNN")


def small_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8, bias=False))


def test_backend_override_and_bad_value(monkeypatch):
    monkeypatch.setenv("VEIL_LINEAR", "blas")
    assert linear_backend() == "blas"
    assert accelerate_linears(small_model()) == 0
    monkeypatch.setenv("VEIL_LINEAR", "fastest")
    with pytest.raises(ValueError, match="VEIL_LINEAR"):
        linear_backend()


@needs_onednn
def test_accelerated_model_matches_pytorch_and_keeps_its_weights(monkeypatch):
    monkeypatch.setenv("VEIL_LINEAR", "onednn")
    model = small_model()
    x = torch.randn(3, 5, 16)
    with torch.no_grad():
        ref = model(x)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    assert accelerate_linears(model) == 2
    assert all(type(m) is fast_linear_class() for m in (model[0], model[2])) and is_linear(model[0])
    with torch.no_grad():
        out = model(x)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())
    restore_linears(model)
    assert type(model[0]) is torch.nn.Linear


@needs_onednn
def test_training_keeps_autograd(monkeypatch):
    """oneDNN's op has no gradient: anything that needs one takes PyTorch's path and trains as before."""
    monkeypatch.setenv("VEIL_LINEAR", "onednn")
    model = small_model()
    accelerate_linears(model)
    x = torch.randn(4, 16)
    model(x).pow(2).sum().backward()
    assert model[0].weight.grad is not None and model[0].weight.grad.abs().sum() > 0
    # frozen weights, an input that needs a gradient (LoRA's base layers): still differentiable
    for p in model.parameters():
        p.requires_grad_(False)
    xg = torch.randn(4, 16, requires_grad=True)
    model(xg).sum().backward()
    assert xg.grad is not None and xg.grad.abs().sum() > 0


@needs_onednn
def test_fast_linear_other_dtypes_fall_back(monkeypatch):
    monkeypatch.setenv("VEIL_LINEAR", "onednn")
    x, w, b = torch.randn(3, 8), torch.randn(4, 8), torch.randn(4)
    torch.testing.assert_close(fast_linear(x, w, b), torch.nn.functional.linear(x, w, b), rtol=1e-4, atol=1e-5)
    out = fast_linear(x.bfloat16(), w.bfloat16(), b.bfloat16())
    assert out.dtype == torch.bfloat16


def test_auto_probe_decides_once_per_thread_count(monkeypatch):
    monkeypatch.delenv("VEIL_LINEAR", raising=False)
    cpu_linear._probe.cache_clear()
    first = linear_backend()
    assert first in ("onednn", "blas")
    assert linear_backend() == first and cpu_linear._probe.cache_info().hits >= (1 if onednn_available() else 0)
