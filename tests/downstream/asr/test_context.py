"""ASR evaluation stage: hypotheses scored after the conversation's earlier turns (``asr.lm_context``)."""

from __future__ import annotations

import pytest

from tests.downstream.asr.test_stage import sentences


def tiny_lm(texts, context):
    from tests.tiny_models import build_tiny_causal_lm
    from veil.downstream import lm

    model, tok = build_tiny_causal_lm(texts, vocab_size=300, hidden_size=32)
    return model, lm.CausalLMTokens(tok, "tiny"), lm.LMSettings.from_dict({"context": context, "batch_size": 4})


def stream_total(model, vocab, texts, s) -> float:
    from veil.downstream import lm

    return sum(float(x.sum()) for x in lm.stream_nll(model, vocab, texts, s))


def test_a_hypothesis_is_scored_after_its_context_and_only_its_own_tokens_count():
    from veil.downstream import lm

    texts = sentences(6, 11)
    model, vocab, s = tiny_lm(texts, 64)
    ctx, t = texts[:2], texts[2]
    # log p(t | ctx) = log p(ctx, t) - log p(ctx): the stream's NLL of ctx + t less that of ctx alone
    want = stream_total(model, vocab, ctx, s) - stream_total(model, vocab, ctx + [t], s)
    got = lm.sentence_logprobs(model, vocab, [t], s, [ctx])[0]
    assert got == pytest.approx(want, rel=1e-5)
    alone = lm.sentence_logprobs(model, vocab, [t], s)[0]
    assert got != pytest.approx(alone, rel=1e-3)  # the context changed the score
    assert lm.sentence_logprobs(model, vocab, [t], s, [[]])[0] == pytest.approx(alone, rel=1e-6)
    # batched with texts of other lengths and contexts: the same scores as one at a time
    contexts = [texts[:i] for i in range(len(texts))]
    batched = lm.sentence_logprobs(model, vocab, texts, s, contexts)
    assert batched == pytest.approx([lm.sentence_logprobs(model, vocab, [x], s, [c])[0]
                                     for x, c in zip(texts, contexts)], rel=1e-4)


def test_a_context_longer_than_the_block_is_cut_from_the_left():
    from veil.downstream import lm

    texts = sentences(6, 12)
    model, vocab, s = tiny_lm(texts, 20)
    ctx, t = texts[:4], texts[4]
    full = lm.stream_ids(vocab, ctx + [t])
    n_text = len(lm.stream_ids(vocab, [t])) - 1
    assert len(full) > s.context > n_text + 1
    got = lm.sentence_logprobs(model, vocab, [t], s, [ctx])[0]
    # the same as scoring the last 20 tokens of the stream and counting the text's own targets
    import torch

    x = torch.tensor([full[-s.context:]])
    nll = lm.token_nll(model, x, torch.ones_like(x, dtype=torch.bool), torch.ones_like(x))
    assert got == pytest.approx(-float(nll[0, -n_text:].sum().detach()), rel=1e-5)
    # a text that alone fills the block is scored without context, as before
    tight = lm.LMSettings.from_dict({"context": n_text, "batch_size": 4})
    assert lm.sentence_logprobs(model, vocab, [t], tight, [ctx]) == pytest.approx(
        lm.sentence_logprobs(model, vocab, [t], tight), rel=1e-6)


def test_earlier_turns_stay_inside_the_conversation():
    from veil.downstream.asr.stage import earlier_turns

    texts = ["a1", "a2", "a3", "b1", "b2", "b3"]
    groups = ["A", "A", "A", "B", "B", "B"]
    records = [{"id": f"s{i:06d}"} for i in (0, 2, 3, 5)]
    assert earlier_turns(records, texts, groups, 2) == [[], ["a1", "a2"], [], ["b1", "b2"]]
    assert earlier_turns(records, texts, groups, 1) == [[], ["a2"], [], ["b2"]]
    assert earlier_turns(records, texts, None, 2)[2] == ["a2", "a3"]  # no conversations: one stream


def test_lm_context_changes_the_scores_and_the_key(tmp_path):
    from veil.cache import StageCache
    from veil.downstream import lm
    from veil.downstream.asr.settings import ASRSettings
    from veil.downstream.asr.stage import ASREvaluation

    texts = sentences(8, 13)
    model, vocab, s = tiny_lm(texts, 64)
    lm.save(model, vocab, tmp_path / "lm", {})
    records = [{"id": f"s{i:06d}", "reference": texts[i], "hyps": [{"text": texts[i], "score": -0.1, "tokens": 9},
                                                                    {"text": texts[0], "score": -0.2, "tokens": 9}]}
               for i in (2, 5)]
    cache = StageCache(tmp_path / "cache")
    scores = {}
    for n in (0, 1, 2):
        ev = ASREvaluation(ASRSettings.from_dict({"lm_context": n}), cache, tmp_path, lm_settings=s, progress=False,
                           groups=["A"] * 4 + ["B"] * 4)
        scores[n], _ = ev.lm_scores(tmp_path / "lm", "lmkey", records, "nb", test_texts=texts)
    assert len(cache.computed) == 3  # the context is part of the key
    loaded, lvocab = lm.load(tmp_path / "lm")
    assert scores[2][0][0] == pytest.approx(lm.sentence_logprobs(loaded, lvocab, [texts[2]], s, [texts[:2]])[0], rel=1e-5)
    # s000005 is the second utterance of conversation B: one earlier turn there, whatever lm_context asks
    assert scores[2][1] == pytest.approx(scores[1][1], rel=1e-6)
    assert scores[1][1][0] == pytest.approx(lm.sentence_logprobs(loaded, lvocab, [texts[5]], s, [texts[4:5]])[0], rel=1e-5)
    assert abs(scores[1][1][0] - scores[0][1][0]) > 1e-3
