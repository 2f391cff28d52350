"""Model loading: device and dtype plumbing (``--device``, ``--dtype auto``), checked on the CPU."""

import pytest

torch = pytest.importorskip("torch")

from veil.errors import VeilError  # noqa: E402
from veil.models import device  # noqa: E402
from veil.models.device import resolve_device, resolve_dtype  # noqa: E402
from veil.models.smollm2 import load_causal_lm  # noqa: E402
from tests.tiny_models import build_tiny_causal_lm  # noqa: E402


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    model, tok = build_tiny_causal_lm(["the cat sat on the mat", "we went to the store"] * 4, vocab_size=300)
    out = tmp_path_factory.mktemp("tiny_dev") / "m"
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.mark.parametrize("native, expected", [(True, torch.bfloat16), (False, torch.float32)])
def test_auto_dtype_is_bf16_only_where_native(monkeypatch, native, expected):
    monkeypatch.setattr(device, "native_bf16", lambda device: native)
    assert resolve_dtype("auto", "cpu") is expected


@pytest.mark.parametrize("name, expected", [(None, torch.float32), ("fp32", torch.float32), ("bf16", torch.bfloat16),
                                            ("bfloat16", torch.bfloat16), ("float16", torch.float16)])
def test_named_dtypes(name, expected):
    assert resolve_dtype(name, "cpu") is expected


def test_unknown_dtype_and_absent_gpu_are_errors():
    with pytest.raises(VeilError, match="unknown dtype"):
        resolve_dtype("int3", "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(VeilError, match="no CUDA GPU"):
            resolve_device("cuda")
        assert device.native_bf16("cuda") is False


def test_cpu_flags_decide_native_bf16(monkeypatch, tmp_path):
    fake = tmp_path / "cpuinfo"
    monkeypatch.setattr(device, "Path", lambda p: fake if p == "/proc/cpuinfo" else device.Path(p))
    fake.write_text("flags\t\t: fpu avx2 avx512f avx512bw\n")
    assert device.native_bf16("cpu") is False
    fake.write_text("flags\t\t: fpu avx2 avx512f avx512_bf16 avx512bw\n")
    assert device.native_bf16("cpu") is True


def test_bf16_filler_loads_and_fills_on_cpu(tiny_dir):
    from veil.fill.llm import LLMFiller
    from veil.types import MaskedDocument, Placeholder

    model, _ = load_causal_lm(str(tiny_dir), device="cpu", dtype="bf16")
    assert next(model.parameters()).dtype is torch.bfloat16
    filler = LLMFiller(model=str(tiny_dir), device="cpu", dtype="bf16", avoid={}, n_candidates=6)
    doc = MaskedDocument("d", "the cat sat on the [MASK]", (Placeholder(19, 25, "MASK", "MASK#0", "allow_list"),), "mask")
    out = filler.fill([doc])
    assert next(filler.scorer.model.parameters()).dtype is torch.bfloat16
    assert "[MASK]" not in out[0].text and out[0].substitutions[0].substitute
