"""Train / evaluate stage: vocabulary, blocks, Baseline1's zero loss on [MASK] targets, per-word perplexity."""

from __future__ import annotations

import math

import pytest

from veil.downstream import lm
from veil.downstream.tokenizer import WordVocab, tokenize

S = lm.LMSettings(n_layer=1, n_embd=32, n_head=2, context=16, batch_size=4, dropout=0.0, warmup_steps=1)


def test_tokenize_and_vocab():
    assert tokenize("Hello, [MASK] don't <unk>!") == ["hello", ",", "[MASK]", "don't", "<unk>", "!"]
    v = WordVocab.build(["a b b", "c [MASK]"], max_size=6)
    assert v.words[:4] == ["<pad>", "<unk>", "<eos>", "[MASK]"] and v.words[4] == "b" and len(v) == 6
    assert v.encode("b zzz") == [v.index["b"], v.unk_id, v.eos_id]
    assert v.encode("[MASK]", eos=False) == [v.mask_id]


def test_blocks_predict_every_token_once():
    ids = list(range(50))
    bl = lm.blocks(ids, 16)
    targets = [t for b in bl for t in b[1:]]
    assert targets == ids[1:]


def test_perplexity_per_word_of_a_uniform_model():
    import torch

    v = WordVocab.build(["the cat sat", "a dog ran"])
    model = lm.make_model(S, v)
    with torch.no_grad():
        for p in model.lm_head.parameters():
            p.zero_()  # tied with the embeddings: all logits 0, a uniform distribution
    texts = ["the cat sat .", "a dog"]
    r = lm.perplexity(model, v, texts, S, progress=False)
    tokens = 5 + 3  # 4 + eos, 2 + eos (the leading eos is context only)
    assert r["tokens"] == tokens and r["words"] == 3 + 2 + 2
    assert r["perplexity"] == pytest.approx(math.exp(tokens * math.log(len(v)) / 7), rel=1e-5)


def _mask_prob(model, v):
    import torch

    x = torch.tensor([[v.eos_id, *v.encode("a b", eos=False)]])
    with torch.no_grad():
        return float(model(input_ids=x).logits[0, -1].softmax(-1)[v.mask_id])


def test_baseline1_gives_no_loss_to_mask_targets():
    texts = ["a b [MASK] c"] * 20
    v = WordVocab.build(texts + ["d e f"])
    before = lm.make_model(S, v)
    p0 = _mask_prob(before, v)
    b0 = lm.make_model(S, v)
    lm.train(b0, v, texts, S, epochs=30, lr=5e-3, progress=False)
    b1 = lm.make_model(S, v)
    lm.train(b1, v, texts, S, epochs=30, lr=5e-3, mask_loss_weight=0.0, progress=False)
    assert _mask_prob(b0, v) > max(0.5, 4 * p0)  # Baseline0 learns to predict the mask token
    assert _mask_prob(b1, v) <= p0 * 1.5  # Baseline1 never does


def test_settings_are_checked():
    from veil.errors import VeilError

    with pytest.raises(VeilError, match="unknown LM setting"):
        lm.LMSettings.from_dict({"layers": 2})
    with pytest.raises(VeilError, match="multiple"):
        lm.LMSettings.from_dict({"n_embd": 30, "n_head": 4})


def test_bpe_vocabulary_has_no_unknown_words_and_one_mask_token(tmp_path):
    from veil.downstream.tokenizer import BPEVocab, load_vocab, save_vocab

    texts = ["the cat sat on the mat", "a dog ran to the park", "the cat and the dog"] * 20
    v = BPEVocab.build(texts, max_size=300)
    ids = v.encode("Zyxwq [MASK] the cat", eos=True)
    assert v.unk_id not in ids and ids[-1] == v.eos_id and ids.count(v.mask_id) == 1
    assert v.encode("[\\MASK]", eos=False).count(v.mask_id) == 0  # an escaped look-alike is text
    assert v.encode("THE Cat", eos=False) == v.encode("the cat", eos=False)
    save_vocab(v, tmp_path)
    w = load_vocab(tmp_path)
    assert isinstance(w, BPEVocab) and w.encode("Zyxwq [MASK]") == v.encode("Zyxwq [MASK]")
    assert lm.stream_ids(v, ["a b", "c"]) == [v.eos_id] + v.encode("a b") + v.encode("c")


def test_bpe_special_tokens_take_their_leading_space(tmp_path):
    """`` [MASK]`` and `` <unk>`` are one token each: no bare-space token shared by both (it made the
    masked baselines predict the space before PTB's ``<unk>`` better than Oracle)."""
    from veil.downstream.tokenizer import BPEVocab, load_vocab, save_vocab

    v = BPEVocab.build(["the cat sat on the mat", "a dog ran to the park"] * 20, max_size=300)
    ids = v.encode("the [MASK] of <unk> corp", eos=False)
    assert ids == v.encode("the", eos=False) + [v.mask_id] + v.encode(" of", eos=False) + [v.unk_id] + \
        v.encode(" corp", eos=False)
    assert v.encode("<unk> cat", eos=False)[0] == v.unk_id
    save_vocab(v, tmp_path)
    assert load_vocab(tmp_path).encode("a [MASK] <unk>", eos=False) == v.encode("a [MASK] <unk>", eos=False)


def test_baseline1_with_bpe():
    from veil.downstream.tokenizer import BPEVocab

    texts = ["a b [MASK] c"] * 20
    v = BPEVocab.build(texts + ["d e f"] * 5, max_size=280)
    b1 = lm.make_model(S, v)
    p0 = _mask_prob(b1, v)
    lm.train(b1, v, texts, S, epochs=30, lr=5e-3, mask_loss_weight=0.0, progress=False)
    assert _mask_prob(b1, v) <= p0 * 1.5


def test_any_registered_causal_lm_trains_saves_and_loads_back(tmp_path):
    """The downstream LM is not tied to GPT-2: a Llama registered as an architecture round-trips
    through save / load (AutoModelForCausalLM) with the same perplexity."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from veil.registry import downstream_lms

    def tiny_llama(s, vocab):
        return LlamaForCausalLM(LlamaConfig(vocab_size=len(vocab), hidden_size=s.n_embd, intermediate_size=64,
                                            num_hidden_layers=s.n_layer, num_attention_heads=s.n_head,
                                            max_position_embeddings=s.context, pad_token_id=vocab.pad_id))

    downstream_lms.register("test_tiny_llama", tiny_llama)
    try:
        s = lm.LMSettings(**{**S.to_dict(), "arch": "test_tiny_llama"})
        texts = ["the cat sat on the mat", "a dog ran"] * 5
        v = WordVocab.build(texts)
        model = lm.make_model(s, v)
        lm.train(model, v, texts, s, epochs=1, lr=1e-3, progress=False)
        before = lm.perplexity(model, v, texts, s, progress=False)["perplexity"]
        lm.save(model, v, tmp_path / "m")
        loaded, v2 = lm.load(tmp_path / "m")
        assert type(loaded).__name__ == "LlamaForCausalLM" and v2.words == v.words
        assert lm.perplexity(loaded, v2, texts, s, progress=False)["perplexity"] == pytest.approx(before, rel=1e-5)
    finally:
        downstream_lms._entries.pop("test_tiny_llama", None)
