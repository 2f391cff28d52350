"""The ``mlm`` filler on tiny BERT / RoBERTa models built from configs (trained for seconds where needed)."""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")

from conftest import build_model, fixture_sentences, train_one_blank  # noqa: E402
from veil.fill.mlm import MaskedLMProposer, MLMFiller, segment_markers  # noqa: E402
from veil.markers import find_markers  # noqa: E402
from veil.mask.placeholders import render  # noqa: E402
from veil.types import Document, MaskedDocument, Span  # noqa: E402

BLANKS = ["mat", "rug", "sofa", "bed", "paris", "london", "berlin", "rome", "john", "mary", "anna", "peter",
          "bread", "cheese", "pasta", "soup", "red", "blue", "green", "black", "piano", "guitar"]


def masked_corpus(n: int = 24, seed: int = 7, words=BLANKS, style: str = "mask") -> list[MaskedDocument]:
    docs = []
    for i, s in enumerate(fixture_sentences(n, seed)):
        # two sentences per document so that most have several markers, some adjacent
        s2 = fixture_sentences(1, seed + i + 100)[0]
        text = f"{s} . {s2}" if i % 3 else f"{s} {s2}"
        spans = [Span(m.start(), m.end(), "WORD", "allow_list")
                 for m in re.finditer(r"\b(" + "|".join(words) + r"|sat|likes|every)\b", text)]
        docs.append(render(Document(f"d{i}", text), spans, style))
    return docs


def whole_word_ids(tok) -> list[int]:
    special = set(tok.all_special_ids)
    return [i for i, t in enumerate(tok.convert_ids_to_tokens(list(range(len(tok)))))
            if i not in special and not t.startswith("##") and t.isalnum()]


def reference_top1(model, tok, text: str) -> str:
    """The paper's Top-1 written plainly: leftmost marker (runs merged), full forward of one sentence,
    arg-max over whole-word tokens, substitute, repeat."""
    valid = torch.tensor(whole_word_ids(tok))
    while True:
        runs = segment_markers(text)
        if not runs:
            return text
        model_text, pos = "", 0
        for s, e in runs:
            model_text += text[pos:s] + tok.mask_token
            pos = e
        model_text += text[pos:]
        enc = tok(model_text, return_tensors="pt")
        with torch.no_grad():
            logits = model(**enc).logits[0]
        first = (enc["input_ids"][0] == tok.mask_token_id).nonzero()[0, 0]
        best = int(valid[logits[first, valid].argmax()])
        s, e = runs[0]
        text = text[:s] + tok.decode([best]).strip() + text[e:]


def test_top1_left_to_right_equals_the_reference(tiny_mlm):
    model, tok, _ = tiny_mlm
    docs = masked_corpus()
    assert sum(len(d.placeholders) for d in docs) > 2 * len(docs)
    filler = MLMFiller(model_obj=model, tokenizer=tok, strategy="top1", batch_size=5)
    out = filler.fill(docs)
    for d, f in zip(docs, out):
        assert f.text == reference_top1(model, tok, d.text)
        assert not find_markers(f.text)
    # the batched loop ran one model step per marker index, not one per marker
    assert filler.stats["model_calls"] < filler.stats["model_markers"] / 3


def test_untrained_model_also_matches_the_reference(untrained_mlm):
    model, tok = untrained_mlm
    docs = masked_corpus(12, seed=3)
    out = MLMFiller(model_obj=model, tokenizer=tok, batch_size=4).fill(docs)
    assert [f.text for f in out] == [reference_top1(model, tok, d.text) for d in docs]


def test_head_only_at_masks_gives_the_full_models_logits(untrained_mlm):
    model, tok = untrained_mlm
    docs = masked_corpus(8)
    texts = [d.text for d in docs]
    targets = [(d.placeholders[0].start, d.placeholders[0].end) for d in docs]
    fast = MaskedLMProposer(model, tok, batch_size=3)
    slow = MaskedLMProposer(model, tok, batch_size=1, head_at_masks=False)
    enc = fast.encode(texts, targets)
    torch.testing.assert_close(fast.logits_at_targets(enc), slow.logits_at_targets(enc), atol=1e-4, rtol=1e-4)


def test_candidates_are_whole_words_only(tiny_mlm):
    model, tok, _ = tiny_mlm
    prop = MaskedLMProposer(model, tok)
    cands = prop.propose(["the cat sat on the [MASK]"], [(19, 25)], k=1000)[0]
    words = [w for w, _ in cands]
    assert len(words) == len(whole_word_ids(tok))
    assert all(w.isalnum() and not w.startswith("##") for w in words)
    assert words[:4] and set(words[:4]) <= {"mat", "rug", "sofa", "bed"}  # the trained model learnt the blank


def test_user_mask_literals_never_become_masks(tiny_mlm):
    model, tok, _ = tiny_mlm
    text = "type [MASK] or <mask> and the cat sat on the mat"
    doc = render(Document("u", text), [Span(text.rindex("mat"), len(text), "WORD", "allow_list")], "mask")
    assert doc.text == "type [\\MASK] or <mask> and the cat sat on the [MASK]"
    prop = MaskedLMProposer(model, tok)
    ids, pos = prop.encode([doc.text], [(doc.placeholders[0].start, doc.placeholders[0].end)])[0]
    assert ids.count(tok.mask_token_id) == 1 and ids[pos] == tok.mask_token_id
    out = MLMFiller(model_obj=model, tokenizer=tok).fill([doc])[0]
    assert out.text.startswith("type [MASK] or <mask> and the cat sat on the ")
    assert out.substitutions[0].substitute.isalnum()


def test_topk_avoids_the_allow_list_with_a_trained_model(tiny_mlm):
    model, tok, _ = tiny_mlm
    docs = [render(Document(f"c{i}", "the cat sat on the mat"), [Span(19, 22, "WORD", "allow_list")], "mask")
            for i in range(30)]
    likely = {"mat", "rug", "sofa", "bed"}
    plain = MLMFiller(model_obj=model, tokenizer=tok, strategy="topk", k=4, avoid={}).fill(docs)
    assert {d.substitutions[0].substitute for d in plain} <= likely
    avoiding = MLMFiller(model_obj=model, tokenizer=tok, strategy="topk", k=6,
                         avoid={"allow_list": likely}).fill(docs)
    subs = {d.substitutions[0].substitute for d in avoiding}
    assert subs and not subs & likely


def test_topk_reproducible_and_seed_dependent(tiny_mlm):
    model, tok, _ = tiny_mlm
    docs = masked_corpus(16, seed=11)
    run = lambda seed, bs: [d.text for d in MLMFiller(model_obj=model, tokenizer=tok, strategy="topk",  # noqa: E731
                                                      seed=seed, batch_size=bs, avoid={}).fill(docs)]
    assert run(1, 4) == run(1, 16)
    assert run(1, 4) != run(2, 4)


def test_long_texts_are_windowed_around_the_target(tiny_mlm):
    model, tok, _ = tiny_mlm  # max_position_embeddings = 64
    body = " ".join(["the cat sat on the rug ."] * 30)
    prop = MaskedLMProposer(model, tok)
    for text in (body + " i live in [MASK] with my family", "i live in [MASK] with my family " + body):
        s = text.index("[MASK]")
        ids, pos = prop.encode([text], [(s, s + 6)])[0]
        assert len(ids) <= 64 and ids[pos] == tok.mask_token_id
        assert tok.convert_ids_to_tokens(ids[pos - 3:pos]) == ["i", "live", "in"]
        out = MLMFiller(model_obj=model, tokenizer=tok).fill([MaskedDocument("long", text, (), "mask")])[0]
        assert not find_markers(out.text) and len(out.text) > len(body)


@pytest.mark.parametrize("dtype", ["bf16", "int8"])
def test_reduced_precision_runs_and_mostly_agrees(tiny_mlm, dtype):
    model, tok, _ = tiny_mlm
    import copy

    docs = masked_corpus(12, seed=5)
    ref = [d.text for d in MLMFiller(model_obj=model, tokenizer=tok).fill(docs)]
    got = [d.text for d in MLMFiller(model_obj=copy.deepcopy(model), tokenizer=tok, dtype=dtype).fill(docs)]
    assert all(not find_markers(t) for t in got)
    assert sum(a == b for a, b in zip(ref, got)) >= len(docs) // 2


def build_roberta(seed: int = 0):
    from tokenizers import AddedToken, ByteLevelBPETokenizer
    from tokenizers.processors import RobertaProcessing
    from transformers import PreTrainedTokenizerFast, RobertaConfig, RobertaForMaskedLM

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(fixture_sentences(), vocab_size=400, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"], show_progress=False)
    bpe._tokenizer.post_processor = RobertaProcessing(("</s>", bpe.token_to_id("</s>")), ("<s>", bpe.token_to_id("<s>")))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                  cls_token="<s>", unk_token="<unk>", pad_token="<pad>",
                                  mask_token=AddedToken("<mask>", lstrip=True))
    torch.manual_seed(seed)
    cfg = RobertaConfig(vocab_size=len(tok), hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=128, max_position_embeddings=66, pad_token_id=tok.pad_token_id,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, type_vocab_size=1)
    return RobertaForMaskedLM(cfg), tok


def test_roberta_mask_convention_and_byte_level_whole_words():
    model, tok = build_roberta()
    train_one_blank(model, tok, fixture_sentences(), steps=60)
    prop = MaskedLMProposer(model, tok)
    text = "i live in [MASK] with my family"
    ids, pos = prop.encode([text], [(10, 16)])[0]
    assert ids == tok("i live in <mask> with my family")["input_ids"]  # the tokenisation a user would get
    assert ids[pos] == tok.mask_token_id
    cands = prop.propose([text], [(10, 16)], k=50)[0]
    for w, _ in cands:  # every candidate is one whole word with its leading-space marker in the vocabulary
        assert re.fullmatch(r"\w+", w)
        assert tok.convert_tokens_to_ids("\u0120" + w) != tok.unk_token_id
    text = "type <mask> here: i live in rome with my family"
    doc = render(Document("r", text), [Span(text.index("rome"), text.index("rome") + 4, "WORD", "x")], "mask")
    ids, _ = prop.encode([doc.text], [(doc.placeholders[0].start, doc.placeholders[0].end)])[0]
    assert ids.count(tok.mask_token_id) == 1  # the user's literal <mask> stays text
    out = MLMFiller(model_obj=model, tokenizer=tok).fill([doc])[0]
    assert out.text.startswith("type <mask> here: i live in ") and out.text.endswith(" with my family")
