"""Fill stage, ``llm`` back-end: whole-word proposals, exact cached scoring, context rules (tiny model)."""

import pytest

pytest.importorskip("torch")

from tests.fill.naive_llm import propose_naive, rank_naive, score_naive  # noqa: E402
from veil.errors import VeilError  # noqa: E402
from veil.fill.causal_scorer import CausalWordScorer, marker_context  # noqa: E402
from veil.fill.llm import LLMFiller  # noqa: E402
from tests.tiny_models import build_tiny_causal_lm  # noqa: E402
from veil.textutil import WORD_RE  # noqa: E402
from veil.types import MaskedDocument, Placeholder  # noqa: E402

CORPUS = [
    "the cat sat on the mat and the dog didn't like it at all",
    "I think that computers are really useful for most people",
    "we went to the store yesterday to buy some food for dinner",
    "she said she'd call me back tomorrow morning before work",
    "my brother lives in Dallas and works at a bank downtown",
    "they're watching the game on television with their friends",
] * 4

TEXTS = [
    "I think [MASK] are really useful",
    "[MASK] cat sat on the mat",
    "we went to the [MASK] [MASK] to buy",  # first of two markers: right context cut at the second
    "she said (she'd [MASK]) me back",
    "the dog didn't like [MASK]",
    "my brother re[MASK] in Dallas",  # marker glued to a word: tokenisation differs from the cached prefix
    "they're [MASK] the game on television [\\MASK] too",  # an escaped look-alike after it
]


def _targets(texts):
    out = []
    for t in texts:
        s = t.index("[MASK]")
        out.append((s, s + len("[MASK]")))
    return out


@pytest.fixture(scope="module")
def tiny():
    return build_tiny_causal_lm(CORPUS, vocab_size=300)


@pytest.fixture(scope="module")
def scorer(tiny):
    model, tok = tiny
    return CausalWordScorer(model, tok, n_candidates=12, token_budget=512)


def test_propose_batch_returns_ranked_whole_words(tiny):
    model, tok = tiny
    filler = LLMFiller(model_obj=model, tokenizer=tok, n_candidates=12)
    props = filler.propose_batch(TEXTS, _targets(TEXTS), 10)
    assert len(props) == len(TEXTS)
    for cands in props:
        assert 1 <= len(cands) <= 10
        words = [w for w, _ in cands]
        assert len(set(words)) == len(words)
        for w in words:
            assert WORD_RE.fullmatch(w), w  # a whole word: no spaces, no punctuation, no marker
            assert "[" not in w and "MASK" not in w
        scores = [s for _, s in cands]
        assert scores == sorted(scores, reverse=True)


def test_cached_proposals_equal_the_naive_ones(scorer):
    ctx = scorer.contexts(TEXTS, _targets(TEXTS))
    assert scorer.propose(ctx) == propose_naive(scorer, ctx)


def test_cached_scores_equal_full_sentence_log_likelihood(scorer):
    ctx = scorer.contexts(TEXTS, _targets(TEXTS))
    cands = scorer.propose(ctx)
    fast = scorer.score(ctx, cands)
    naive = score_naive(scorer, ctx, cands)
    for f_row, n_row in zip(fast, naive):
        assert f_row == pytest.approx(n_row, abs=1e-3)


def test_ranking_equals_naive_ranking(scorer):
    fast = scorer.rank(TEXTS, _targets(TEXTS), 10)
    naive = rank_naive(scorer, TEXTS, _targets(TEXTS), 10)
    assert [[w for w, _ in r] for r in fast] == [[w for w, _ in r] for r in naive]


def test_small_token_budget_gives_the_same_scores(tiny):
    model, tok = tiny
    big = CausalWordScorer(model, tok, n_candidates=8, token_budget=1 << 16)
    small = CausalWordScorer(model, tok, n_candidates=8, token_budget=16)  # one row per batch
    a, b = big.rank(TEXTS, _targets(TEXTS), 8), small.rank(TEXTS, _targets(TEXTS), 8)
    assert [[w for w, _ in r] for r in a] == [[w for w, _ in r] for r in b]
    for ra, rb in zip(a, b):
        assert [s for _, s in ra] == pytest.approx([s for _, s in rb], abs=1e-3)


def test_context_rules():
    t = "a [MASK] b c [MASK] d"
    c = marker_context(t, (2, 8))
    assert c.left == "a " and c.right == " b c"  # cut before the next marker
    c = marker_context("x [\\MASK] y [MASK] z", (12, 18))
    assert c.left == "x [MASK] y " and c.right == " z"  # escaped look-alikes unescaped for the model
    c = marker_context("one two three four [MASK] five six seven", (19, 25), left_words=2, right_words=1)
    assert c.left == "three four " and c.right == " five"
    merged = "we saw [MASK] [MASK] there"
    c = marker_context(merged, (7, 20))  # a run merged by the fill loop is one slot
    assert c.left == "we saw " and c.right == " there"


def test_sentence_end_is_scored_only_where_the_text_ends():
    end = "\n"
    assert marker_context("the cat [MASK] ", (8, 14), sentence_end=end).right == end  # trailing blank dropped
    assert marker_context("a [MASK] b c", (2, 8), sentence_end=end).right == " b c" + end
    assert marker_context("a [MASK] b [MASK]", (2, 8), sentence_end=end).right == " b"  # a later marker
    c = marker_context("one [MASK] two three", (4, 10), right_words=1, sentence_end=end)
    assert c.right == " two"  # cut short: not the end of the sentence
    assert marker_context("a [MASK]", (2, 8)).right == ""  # off by default in the function


def test_scorer_appends_the_sentence_end_and_naive_agrees(tiny):
    model, tok = tiny
    on = CausalWordScorer(model, tok, n_candidates=6, max_word_tokens=3)
    off = CausalWordScorer(model, tok, n_candidates=6, max_word_tokens=3, sentence_end=None)
    texts, targets = ["the cat sat on the [MASK]"], [(19, 25)]
    assert on.contexts(texts, targets)[0].right == "\n" and off.contexts(texts, targets)[0].right == ""
    ctx = on.contexts(texts, targets)
    cands = on.propose(ctx)
    fast, naive = on.score(ctx, cands)[0], score_naive(on, ctx, cands)[0]
    assert fast == pytest.approx(naive, abs=1e-3)
    # the end's log-probability is part of the score: lower than without it, by a different amount per word
    base = off.score(off.contexts(texts, targets), cands)[0]
    assert all(a < b for a, b in zip(fast, base))


def test_bad_target_is_a_clear_error(scorer):
    with pytest.raises(VeilError):
        scorer.rank(["no marker here"], [(0, 2)], 3)
    with pytest.raises(VeilError):
        scorer.rank(["a [MASK]"], [(0, 2), (2, 8)], 3)


def test_fill_replaces_every_marker_with_a_whole_word(tiny):
    model, tok = tiny
    text = "I think [MASK] are really [MASK] for most people"
    phs = [Placeholder(8, 14, "WORD", "MASK#0", "allow_list"), Placeholder(26, 32, "WORD", "MASK#1", "allow_list")]
    doc = MaskedDocument("d1", text, tuple(phs), "mask")
    for strategy in ("top1", "topk"):
        filler = LLMFiller(model_obj=model, tokenizer=tok, strategy=strategy, k=5, n_candidates=8, avoid={})
        out = filler.fill([doc])[0]
        assert "[MASK]" not in out.text
        assert len(out.substitutions) == 2
        for s in out.substitutions:
            assert WORD_RE.fullmatch(s.substitute)
            assert out.text[s.start:s.end] == s.substitute


def test_importing_the_fillers_does_not_import_torch():
    import subprocess
    import sys

    code = ("import sys; import veil.fill.llm, veil.fill.llm_instruct, veil.models.smollm2; "
            "sys.exit(1 if 'torch' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_excluded_words_are_kept_out_of_the_proposals(scorer):
    ctx = scorer.contexts(TEXTS, _targets(TEXTS))
    plain = scorer.propose(ctx)
    # exclude each context's own top proposals: the rest of a larger pool takes their place
    excl = [frozenset(w.lower() for w in p[:3]) for p in plain]
    got = scorer.propose(ctx, excl)
    for p, g, x in zip(plain, got, excl):
        assert g and not {w.lower() for w in g} & x
        assert len(g) <= scorer.n_candidates
        assert [w for w in p if w.lower() not in x] == g[:len([w for w in p if w.lower() not in x])]
    # None for a context leaves it as it was, even in a batch with excluding contexts
    mixed = scorer.propose(ctx, [excl[0]] + [None] * (len(ctx) - 1))
    assert mixed[1:] == plain[1:] and mixed[0] == got[0]


def test_avoid_proposals_fills_off_the_list(tiny):
    model, tok = tiny
    text = "I think [MASK] are really useful"
    doc = MaskedDocument("d1", text, (Placeholder(8, 14, "WORD", "MASK#0", "allow_list"),), "mask")
    base = LLMFiller(model_obj=model, tokenizer=tok, n_candidates=8)
    listed = frozenset(w.lower() for w, _ in base.propose_batch([text], [(8, 14)], 8)[0])
    for strategy in ("topk", "sample"):
        f = LLMFiller(model_obj=model, tokenizer=tok, strategy=strategy, k=5, n_candidates=8,
                      avoid={"allow_list": listed}, avoid_proposals=True)
        for seed in range(5):
            f.seed = seed
            sub = f.fill([doc])[0].substitutions[0].substitute
            assert sub.lower() not in listed
    with pytest.raises(VeilError, match="avoid_proposals"):
        from veil.fill.loop import CandidateFiller

        class NoExclude(CandidateFiller):
            name = "noexclude"

        NoExclude(avoid_proposals=True)


def test_an_exclusion_that_leaves_nothing_keeps_the_plain_list(tiny, monkeypatch):
    model, tok = tiny
    scorer = CausalWordScorer(model, tok, n_candidates=12, token_budget=512, exclude_pool=1)  # pool = the list
    ctx = scorer.contexts(TEXTS[:1], _targets(TEXTS[:1]))
    plain = scorer.propose(ctx)[0]
    assert scorer.propose(ctx, [frozenset(w.lower() for w in plain)])[0] == plain


def test_shortlist_changes_nothing_where_it_keeps_every_candidate_or_the_right_context_is_short(tiny):
    model, tok = tiny
    exact = CausalWordScorer(model, tok, n_candidates=8, token_budget=512)
    targets = _targets(TEXTS)
    ref = exact.rank(TEXTS, targets, 5)
    assert CausalWordScorer(model, tok, n_candidates=8, token_budget=512, shortlist=8).rank(TEXTS, targets, 5) == ref
    # every right context here has at most 6 words: the quick score is the full score
    quick = CausalWordScorer(model, tok, n_candidates=8, token_budget=512, shortlist=2, shortlist_words=6)
    assert [[w for w, _ in r] for r in quick.rank(TEXTS, targets, 5)] == [[w for w, _ in r] for r in ref]


def test_shortlist_scores_only_its_best_quick_candidates_in_full(tiny):
    model, tok = tiny
    text = ["[MASK] cat sat on the mat and the dog didn't like it at all today"]
    sl = CausalWordScorer(model, tok, n_candidates=10, token_budget=512, shortlist=3, shortlist_words=2)
    got = sl.rank(text, _targets(text), 3)[0]
    ctx = sl.contexts(text, _targets(text))
    words = [w for w, _ in got]
    full = sl.score(ctx, [words])[0]
    assert [s for _, s in got] == pytest.approx(full, abs=1e-3)  # returned scores are full-sentence scores
    assert len(got) == 3


def test_close_calls_are_rescored_by_the_exact_model(tiny):
    import copy

    import torch

    model, tok = tiny
    exact = CausalWordScorer(model, tok, n_candidates=8, token_budget=512)
    low = copy.deepcopy(model).to(torch.bfloat16)
    approx = CausalWordScorer(low, tok, n_candidates=8, token_budget=512, verify=exact, verify_margin=1e9)
    targets = _targets(TEXTS)
    ranked = approx.rank(TEXTS, targets, 8)
    ctx = exact.contexts(TEXTS, targets)
    for r, ex in zip(ranked, exact.score(ctx, [[w for w, _ in r] for r in ranked])):
        assert [s for _, s in r] == pytest.approx(ex, abs=1e-3)  # every candidate was within the margin


def test_filler_defaults_bf16_with_fp32_verification_where_native(tiny, monkeypatch, tmp_path):
    import torch

    from veil.models import device as device_choice

    model, tok = tiny
    folder = tmp_path / "m"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    monkeypatch.setattr(device_choice, "native_bf16", lambda device: True)
    sc = LLMFiller(model=str(folder), device="cpu").scorer
    assert next(sc.model.parameters()).dtype is torch.bfloat16
    assert next(sc.verify.model.parameters()).dtype is torch.float32
    monkeypatch.setattr(device_choice, "native_bf16", lambda device: False)
    sc = LLMFiller(model=str(folder), device="cpu").scorer
    assert next(sc.model.parameters()).dtype is torch.float32 and sc.verify is None


def test_unranked_topk_draws_from_the_same_proposals_without_scoring_them(tiny, monkeypatch):
    model, tok = tiny
    targets = _targets(TEXTS)
    ranked = LLMFiller(model_obj=model, tokenizer=tok, strategy="topk", k=8, n_candidates=8)
    quick = LLMFiller(model_obj=model, tokenizer=tok, strategy="topk", k=8, n_candidates=8, rank_candidates=False)
    want = ranked.propose_batch(TEXTS, targets, 12)
    monkeypatch.setattr(type(quick.scorer), "_score_pre", lambda *a, **k: pytest.fail("scored"))
    got = quick.propose_batch(TEXTS, targets, 12)
    for w, g in zip(want, got):
        assert {x for x, _ in w} == {x for x, _ in g} and len(g) == len(w)  # the same set: every one drawable
        assert all(sc != sc for _, sc in g)  # NaN: no score was computed
    text = "I think [MASK] are really useful"
    doc = MaskedDocument("d1", text, (Placeholder(8, 14, "WORD", "MASK#0", "allow_list"),), "mask")
    pool = {w for w, _ in want[0]}
    draws = []
    for seed in range(12):
        quick.seed = seed
        draws.append(quick.fill([doc])[0].substitutions[0].substitute)
        assert draws[-1] in pool
        assert quick.fill([doc])[0].substitutions[0].substitute == draws[-1]  # a seed repeats its draw
    assert len(set(draws)) > 1


def test_unranked_candidates_are_refused_where_the_scores_decide(tiny):
    model, tok = tiny
    for kw in ({"strategy": "top1"}, {"strategy": "sample"}, {"strategy": "topk", "n_candidates": 12},
               {"strategy": "topk", "rank_candidates": "no"}):
        with pytest.raises(VeilError, match="rank_candidates"):
            LLMFiller(model_obj=model, tokenizer=tok, **{"k": 8, "n_candidates": 8, "rank_candidates": False, **kw})
