"""The ``mlm`` filler's padding-free CPU path (:mod:`veil.fill.mlm_packed`) and its top-k."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")

from conftest import build_model, build_tokenizer  # noqa: E402
from test_mlm import build_roberta, masked_corpus, reference_top1  # noqa: E402
from veil.fill.mlm import MaskedLMProposer, MLMFiller, top_k  # noqa: E402
from veil.fill.mlm_packed import PackedEncoder, packed_supported  # noqa: E402


def encoded_corpus(prop, n=16, seed=7):
    docs = masked_corpus(n, seed=seed)
    texts = [d.text for d in docs]
    # targets at the first and at the last marker, so the target is not always early in the sentence
    targets = [(d.placeholders[i].start, d.placeholders[i].end) for j, d in enumerate(docs)
               for i in [0 if j % 2 else -1]]
    return prop.encode(texts, targets)


@pytest.mark.parametrize("budget", [512, 40, 1])
def test_packed_logits_equal_the_padded_models(untrained_mlm, budget):
    model, tok = untrained_mlm
    packed = MaskedLMProposer(model, tok, token_budget=budget)
    assert packed.packed is not None
    # budget 40 or 1: several chunks, sentences longer than a chunk
    padded = MaskedLMProposer(model, tok, batch_size=3, packed=False)
    full = MaskedLMProposer(model, tok, batch_size=1, head_at_masks=False)
    enc = encoded_corpus(packed)
    assert len({len(ids) for ids, _ in enc}) > 3  # mixed lengths: runs of equal length inside a chunk
    got = packed.logits_at_targets(enc)
    torch.testing.assert_close(got, padded.logits_at_targets(enc), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(got, full.logits_at_targets(enc), atol=1e-4, rtol=1e-4)


def test_packed_roberta_positions_and_outputs():
    model, tok = build_roberta(seed=3)
    model.eval()
    assert packed_supported(model)
    packed = MaskedLMProposer(model, tok)
    full = MaskedLMProposer(model, tok, batch_size=2, head_at_masks=False)
    assert packed.packed is not None and packed.packed.pos_offset == tok.pad_token_id + 1
    texts = ["i live in [MASK] with my family", "the cat sat on the [MASK]", "[MASK] likes to read"]
    enc = packed.encode(texts, [(10, 16), (19, 25), (0, 6)])
    torch.testing.assert_close(packed.logits_at_targets(enc), full.logits_at_targets(enc), atol=1e-4, rtol=1e-4)


def test_packed_fill_equals_the_reference_top1(untrained_mlm):
    model, tok = untrained_mlm
    docs = masked_corpus(12, seed=3)
    filler = MLMFiller(model_obj=model, tokenizer=tok)
    assert filler.proposer.packed is not None
    assert [f.text for f in filler.fill(docs)] == [reference_top1(model, tok, d.text) for d in docs]


def test_packed_weights_follow_in_place_training():
    tok = build_tokenizer()
    model = build_model(tok, seed=4).eval()
    prop = MaskedLMProposer(model, tok)
    enc = encoded_corpus(prop, n=6)
    before = prop.logits_at_targets(enc)
    with torch.no_grad():  # what an optimiser step does: the same tensors, changed in place
        for p in model.parameters():
            p.mul_(1.5)
    fresh = MaskedLMProposer(model, tok, packed=False, batch_size=4).logits_at_targets(enc)
    after = prop.logits_at_targets(enc)
    assert not torch.allclose(before, after, atol=1e-3)
    torch.testing.assert_close(after, fresh, atol=1e-4, rtol=1e-4)


def test_unsupported_models_take_the_generic_path(untrained_mlm):
    model, tok = untrained_mlm
    other = copy.deepcopy(model)
    other.config.position_embedding_type = "relative_key"
    assert packed_supported(model) and not packed_supported(other)
    assert MaskedLMProposer(other, tok).packed is None
    assert MaskedLMProposer(model, tok, packed=False).packed is None
    assert MaskedLMProposer(model, tok, head_at_masks=False).packed is None
    with pytest.raises(ValueError):
        PackedEncoder(other)


@pytest.mark.parametrize("dtype", ["bf16", "int8"])
def test_packed_reduced_precision_close_to_fp32(untrained_mlm, dtype):
    model, tok = untrained_mlm
    ref = MaskedLMProposer(model, tok)
    low = MaskedLMProposer(copy.deepcopy(model), tok, dtype=dtype)
    assert low.packed is not None
    enc = encoded_corpus(ref, n=8)
    a, b = ref.logits_at_targets(enc), low.logits_at_targets(enc)
    assert b.dtype == torch.float32 and a.shape == b.shape
    assert (a.argmax(-1) == b.argmax(-1)).float().mean() >= 0.5


@pytest.mark.parametrize("width", [30522, 4096, 1000, 513, 300])
@pytest.mark.parametrize("k", [1, 5, 14, 100])
def test_top_k_equals_torch_topk(width, k):
    g = torch.Generator().manual_seed(width + k)
    x = torch.randn(9, width, generator=g)
    x[:, torch.rand(width, generator=g) < 0.4] = float("-inf")  # the masked, non-whole-word entries
    x[3, : width // 2] = float("-inf")  # a row whose best entries all sit in its second half
    k = min(k, int(torch.isfinite(x).sum(-1).min()))
    v, i = top_k(x, k)
    ref = torch.topk(x, k, dim=-1)
    assert torch.equal(v, ref.values) and torch.equal(i, ref.indices)


def test_fused_gelu_matches_the_modules(untrained_mlm):
    from transformers.activations import ACT2FN

    model, tok = untrained_mlm
    prop = MaskedLMProposer(model, tok)
    inter = prop.packed.layers[0].intermediate
    assert PackedEncoder._exact_gelu(inter.intermediate_act_fn) and PackedEncoder._fusable(inter.dense)
    assert not PackedEncoder._exact_gelu(ACT2FN["gelu_new"]) and not PackedEncoder._exact_gelu(ACT2FN["relu"])
    enc = encoded_corpus(prop, n=8)
    fused = prop.logits_at_targets(enc)
    prop.packed.fuse_gelu = False
    torch.testing.assert_close(fused, prop.logits_at_targets(enc), atol=1e-5, rtol=1e-5)
    prop.packed.fuse_gelu = True
    a = torch.randn(5, inter.dense.in_features)
    with torch.inference_mode():
        torch.testing.assert_close(prop.packed._intermediate(inter, a), inter(a))
