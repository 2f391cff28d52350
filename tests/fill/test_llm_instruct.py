"""Fill stage, ``llm-instruct`` back-end: prompts, strict parsing with fallback, LoRA fine-tuning through
``veil finetune`` and loading the adapter with ``veil fill --model`` (tiny config-built causal LM)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

from veil.cli import main  # noqa: E402
from veil.fill.instruct_prompt import INSTRUCTION, align_output, build_prompt  # noqa: E402
from veil.fill.llm_instruct import InstructLLMFiller, encode_example, training_examples  # noqa: E402
from veil.markers import find_markers  # noqa: E402
from veil.models.smollm2 import ADAPTER_META, load_causal_lm  # noqa: E402
from tests.tiny_models import build_tiny_causal_lm  # noqa: E402
from veil.textutil import WORD_RE  # noqa: E402
from veil.types import MaskedDocument, Placeholder  # noqa: E402

CORPUS = [
    "the cat sat on the mat and the dog slept",
    "I think that computers are really useful for people",
    "we went to the store yesterday to buy some food",
    "my brother lives in Dallas and works at a bank",
] * 4


@pytest.fixture(scope="module")
def tiny():
    return build_tiny_causal_lm(CORPUS + [INSTRUCTION], vocab_size=320)


@pytest.fixture(scope="module")
def tiny_dir(tiny, tmp_path_factory):
    model, tok = tiny
    out = tmp_path_factory.mktemp("tiny_causal") / "base"
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def _doc(i, text):
    phs, pos = [], 0
    while (s := text.find("[MASK]", pos)) >= 0:
        phs.append(Placeholder(s, s + 6, "WORD", f"MASK#{len(phs)}", "allow_list"))
        pos = s + 6
    return MaskedDocument(f"d{i}", text, tuple(phs), "mask")


def test_align_output_accepts_only_one_word_per_mask_with_every_other_word_kept():
    assert align_output("the [MASK] sat on the [MASK]", "The cat sat on the mat.") == ("ok", ["cat", "mat"])
    assert align_output("the [MASK] sat", "the big cat sat")[0] == "multiword"
    assert align_output("the [MASK] sat", "the sat")[0] == "multiword"
    assert align_output("the [MASK] sat", "the [MASK] sat")[0] == "multiword"  # the marker echoed
    assert align_output("the [MASK] sat on it", "a cat sat on it")[0] == "dropped"  # an unmasked word changed
    assert align_output("the [MASK] sat", "")[0] == "dropped"


def test_training_examples_mask_a_few_words_and_skip_masked_texts():
    pairs, skipped = training_examples(CORPUS[:4] + ["still [MASK] here"], seed=1)
    assert skipped == 1 and len(pairs) == 4
    for masked, full in pairs:
        assert full in CORPUS
        assert 1 <= masked.count("[MASK]") <= 3
        assert masked.replace("[MASK]", "").split() != full.split()


def test_encoded_example_trains_on_the_answer_only(tiny):
    _, tok = tiny
    ids, labels = encode_example(tok, "the [MASK] sat", "the cat sat")
    prompt = tok(build_prompt(tok, "the [MASK] sat"), add_special_tokens=False)["input_ids"]
    assert ids[:len(prompt)] == prompt and all(x == -100 for x in labels[:len(prompt)])
    assert labels[len(prompt):] == ids[len(prompt):] and ids[-1] == tok.eos_token_id


def test_unparseable_outputs_are_counted_and_fall_back_to_llm(tiny):
    model, tok = tiny
    docs = [_doc(i, t) for i, t in enumerate(["I think [MASK] are really useful", "the [MASK] sat on the mat"])]
    filler = InstructLLMFiller(model_obj=model, tokenizer=tok, avoid={}, max_new_tokens=6,
                               llm_options={"n_candidates": 6})
    out = filler.fill(docs)  # an untrained model's output breaks the input: the llm scorer fills
    assert all(not find_markers(d.text) and WORD_RE.fullmatch(d.substitutions[0].substitute) for d in out)
    rep = filler.parse_report()
    assert rep["sentences"] == 2 and rep["broken_dropped_words"] + rep["broken_not_one_word"] == 2
    assert rep["fallback_markers"] == 2


def test_top1_uses_the_parsed_answers_without_ranking(tiny, monkeypatch):
    model, tok = tiny
    docs = [_doc(0, "the [MASK] sat on the [MASK] today")]
    filler = InstructLLMFiller(model_obj=model, tokenizer=tok, avoid={})
    generated = []

    def fake_generate(inputs):
        generated.extend(inputs)
        return ["The dog sat on the rug today."] * len(inputs)

    monkeypatch.setattr(filler, "generate", fake_generate)
    monkeypatch.setattr(type(filler), "scorer", property(lambda self: pytest.fail("Top-1 ranked a parsed marker")))
    out = filler.fill(docs)[0]
    assert out.text == "the dog sat on the rug today"
    assert generated == ["the [MASK] sat on the [MASK] today"]  # one generation fills both markers
    assert filler.parse_report()["fallback_markers"] == 0


def test_topk_follows_the_answer_with_the_llm_ranking(tiny, monkeypatch):
    model, tok = tiny
    filler = InstructLLMFiller(model_obj=model, tokenizer=tok, avoid={}, llm_options={"n_candidates": 8})
    monkeypatch.setattr(filler, "generate", lambda inputs: ["the dog sat"] * len(inputs))
    props = filler.propose_batch(["the [MASK] sat"], [(4, 10)], 8)[0]
    words = [w for w, _ in props]
    assert words[0] == "dog" and len(words) > 1 and len(set(words)) == len(words)


def test_veil_finetune_llm_instruct_saves_an_adapter_that_veil_fill_loads(tiny_dir, tmp_path):
    src = tmp_path / "masked.jsonl"
    with open(src, "w", encoding="utf-8") as f:
        for i, t in enumerate(CORPUS[:4] + ["we saw [MASK] there"]):
            f.write(json.dumps({"id": f"d{i}", "text": t}) + "\n")
    ft = tmp_path / "adapter"
    rc = main(["finetune", str(src), "-o", str(ft), "--filler", "llm-instruct", "--model", str(tiny_dir),
               "--max-steps", "2", "--batch-size", "2", "--no-progress"])
    assert rc == 0
    assert (ft / "adapter_config.json").is_file()
    meta = json.loads((ft / ADAPTER_META).read_text())
    assert meta["base_model"] == str(tiny_dir) and meta["steps"] == 2
    assert meta["examples"] == 4  # the masked document is not trained on (mask-free texts only)

    model, _ = load_causal_lm(str(ft), device="cpu")
    assert hasattr(model, "disable_adapter")  # a PeftModel on the tiny base
    out = tmp_path / "filled.jsonl"
    rc = main(["fill", str(src), "-o", str(out), "--filler", "llm-instruct", "--model", str(ft),
               "--no-avoid", "--no-progress", "--threads", "1"])
    assert rc == 0
    rows = [json.loads(x) for x in open(out, encoding="utf-8")]
    assert len(rows) == 5 and all(not find_markers(r["text"]) for r in rows)


def test_answer_context_teacher_forces_the_input_around_the_marker(tiny):
    from veil.fill.instruct_prompt import answer_context

    _, tok = tiny
    text = "the [MASK] sat on the [MASK] today"
    first = answer_context(tok, text, (4, 10))
    prompt = build_prompt(tok, "the [MASK] sat on the [MASK] today")
    bos = tok.bos_token or ""
    assert (bos + first.left) == prompt + "the " or first.left == prompt + "the "
    assert first.right == " sat on the"  # the answer scored stops before the next marker
    filled = "the dog sat on the [MASK] today"
    last = answer_context(tok, filled, (19, 25))
    assert "Input: the dog sat on the [MASK] today" in last.left and last.left.endswith("the dog sat on the ")
    assert last.right.startswith(" today") and last.right.endswith(tok.eos_token)  # end of the turn scored


def test_ranked_decode_never_breaks_the_input_and_ranks_with_the_adapter_on(tiny, monkeypatch):
    model, tok = tiny
    docs = [_doc(i, t) for i, t in enumerate(["I think [MASK] are really useful", "the [MASK] sat on the [MASK]"])]
    filler = InstructLLMFiller(model_obj=model, tokenizer=tok, avoid={}, decode="ranked",
                               llm_options={"n_candidates": 6})
    monkeypatch.setattr(filler, "generate", lambda inputs: pytest.fail("ranked decoding generated"))
    monkeypatch.setattr(filler, "_adapter_off", lambda: pytest.fail("ranked decoding switched the adapter off"))
    out = filler.fill(docs)
    assert all(not find_markers(d.text) and all(WORD_RE.fullmatch(s.substitute) for s in d.substitutions)
               for d in out)
    rep = filler.parse_report()
    assert rep["ranked_markers"] == 3 and rep["fallback_markers"] == 0 and rep["sentences"] == 0
    # Top-K: K distinct words, best first
    props = filler.propose_batch(["the [MASK] sat"], [(4, 10)], 5)[0]
    assert len(props) == 5 and len({w for w, _ in props}) == 5
    assert [s for _, s in props] == sorted((s for _, s in props), reverse=True)


def test_ranked_decode_follows_the_prompt(tiny):
    """The ranking is the model's likelihood of the answer given the prompt: what the prompt's input says
    around the marker changes the scores (not a left-context-only ranking)."""
    from veil.fill.instruct_prompt import answer_context

    model, tok = tiny
    filler = InstructLLMFiller(model_obj=model, tokenizer=tok, avoid={}, decode="ranked")
    a = answer_context(tok, "the [MASK] sat on the mat", (4, 10))
    b = answer_context(tok, "the [MASK] slept", (4, 10))
    sa, sb = filler.scorer.score([a, b], [["cat", "dog"], ["cat", "dog"]])
    assert sa != sb


def test_instruct_decode_is_checked(tmp_path, capsys):
    with pytest.raises(Exception, match="decode must be one of"):
        InstructLLMFiller(decode="beam")
    src = tmp_path / "masked.jsonl"
    src.write_text(json.dumps({"id": "a", "text": "the [MASK] sat"}) + "\n", encoding="utf-8")
    rc = main(["fill", str(src), "-o", str(tmp_path / "out.jsonl"), "--filler", "llm", "--instruct-decode", "ranked"])
    assert rc != 0 and "llm-instruct only" in capsys.readouterr().err
    assert not (tmp_path / "out.jsonl").exists()


def test_ranked_decode_never_fills_the_marker_word_and_falls_back_when_nothing_else_is_proposed(tiny, monkeypatch):
    model, tok = tiny
    filler = InstructLLMFiller(model_obj=model, tokenizer=tok, avoid={}, decode="ranked",
                               llm_options={"n_candidates": 6})
    scorer = filler.scorer
    real_propose = scorer.propose
    monkeypatch.setattr(scorer, "propose", lambda ctx, exclude=None: [["MASK", "Mask", "dog"] for _ in ctx])
    props = filler.propose_batch(["the [MASK] sat"], [(4, 10)], 3)[0]
    assert [w for w, _ in props] == ["dog"]
    monkeypatch.setattr(scorer, "propose", lambda ctx, exclude=None: real_propose(ctx, exclude)
                        if all("Predict" not in c.left for c in ctx) else [["MASK"] for _ in ctx])
    props = filler.propose_batch(["the [MASK] sat"], [(4, 10)], 3)[0]
    assert props and all(w.casefold() != "mask" for w, _ in props)  # the llm ranking, adapter off
    assert filler.parse_report()["fallback_markers"] == 1
