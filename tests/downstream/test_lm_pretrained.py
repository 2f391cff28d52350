"""Train / evaluate stage: a pre-trained downstream LM (``lm.model``) with its own tokenizer, adapted by LoRA
or full fine-tuning; a tiny config-built Llama saved to disk stands in for SmolLM2."""

from __future__ import annotations

import dataclasses
import math

import pytest

from veil.errors import VeilError
from veil.downstream import lm

TEXTS = ["the cat sees the dog in the barn .", "a hen likes the fox in the yard .",
         "the owl feeds the cow in the field ."] * 10


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A 2-layer Llama and its byte-level BPE tokenizer, saved where ``AutoModelForCausalLM`` loads them."""
    from tests.tiny_models import build_tiny_causal_lm

    model, tok = build_tiny_causal_lm(TEXTS + ["[MASK] [MASK]"], vocab_size=300, hidden_size=32)
    path = tmp_path_factory.mktemp("tiny_llama")
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


def settings(model: str, **kw) -> lm.LMSettings:
    return lm.LMSettings.from_dict({"model": model, "context": 16, "batch_size": 4, "warmup_steps": 1, **kw})


def test_mask_flags_cover_every_token_of_a_mask(tiny_model):
    _, vocab = lm.load_pretrained(tiny_model)
    (ids, flags), = vocab.encode_with_mask_flags(["the [MASK] sees [MASK]."])
    assert ids[-1] == vocab.eos_id and len(flags) == len(ids) and vocab.mask_id is None
    pieces = [vocab.tok.decode([i]) for i in ids[:-1]]
    covered = "".join(p for p, f in zip(pieces, flags) if f)
    assert covered.count("MASK") == 2 and "the" not in covered and "sees" not in covered
    (ids0, flags0), = vocab.encode_with_mask_flags(["the cat"])
    assert not any(flags0)
    stream, stream_flags = lm.stream_ids_and_mask_flags(vocab, ["the [MASK]", "the cat"])
    assert stream[0] == vocab.eos_id and len(stream) == len(stream_flags) and stream.count(vocab.eos_id) >= 3


def test_whitespace_at_a_texts_end_is_not_tokenised(tiny_model):
    """PTB's lines end with a space: the stream has no space token before ``<eos>``; a leading space stays
    (the first word's usual token), and offsets and mask flags index the text as given."""
    _, vocab = lm.load_pretrained(tiny_model)
    padded, plain = " the [MASK] sees the dog \n", " the [MASK] sees the dog"
    (ids, offs), (ids_plain, _) = [(a[0], b[0]) for a, b in [vocab.encode_with_offsets([t]) for t in (padded, plain)]]
    assert ids == ids_plain and ids != vocab.encode_with_offsets([plain.strip()])[0][0]
    assert "".join(padded[a:b] for a, b in offs) == plain
    (fids, flags), = vocab.encode_with_mask_flags([padded])
    assert fids[:-1] == ids_plain and "".join(padded[a:b] for (a, b), f in zip(offs, flags) if f).strip() == "[MASK]"


def test_stream_version_keys_only_stages_whose_text_it_changed(tiny_model, tmp_path):
    from types import SimpleNamespace

    from veil.experiment.runner import ExperimentRunner

    runner = SimpleNamespace(lm=settings(tiny_model))
    assert ExperimentRunner._tokenization(runner, ["a b", " c d"]) == {}  # no text's end changed: cached stages stay
    assert ExperimentRunner._tokenization(runner, ["a b", " c d "]) == {"stream": lm.STREAM_VERSION}
    built = SimpleNamespace(lm=lm.LMSettings.from_dict({"tokenizer": "word"}))
    assert ExperimentRunner._tokenization(built, [" c d "]) == {}


def test_lora_trains_only_adapters_and_round_trips(tiny_model, tmp_path):
    s = settings(tiny_model, lora_r=4, lora_alpha=8, lora_dropout=0.0)
    model, vocab = lm.load_pretrained(tiny_model)
    before = lm.perplexity(model, vocab, TEXTS[:3], s, progress=False)
    frozen = {n: p.detach().clone() for n, p in model.named_parameters()}
    peft_model = lm.adaptable(model, s)
    trainable = [n for n, p in peft_model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    info = lm.train(peft_model, vocab, TEXTS, s, epochs=4, lr=3e-2, progress=False)
    assert info["last_loss"] < info["first_loss"]
    for n, p in peft_model.named_parameters():  # the base weights did not move
        if "lora_" not in n:
            base = n.replace("base_model.model.", "").replace(".base_layer", "")
            assert base in frozen and bool((frozen[base] == p).all()), n
    after = lm.perplexity(peft_model, vocab, TEXTS[:3], s, progress=False)
    assert after["perplexity"] < 0.9 * before["perplexity"]
    assert after["words"] == sum(len(t.split()) - 1 for t in TEXTS[:3]) + 3  # same denominator as ever

    lm.save(peft_model, vocab, tmp_path / "ft", {"steps": info["steps"]})
    assert (tmp_path / "ft" / "adapter_config.json").is_file()
    assert not list((tmp_path / "ft").glob("model*.safetensors"))  # adapters only, not the whole model
    loaded, vocab2 = lm.load(tmp_path / "ft")
    again = lm.perplexity(loaded, vocab2, TEXTS[:3], s, progress=False)
    assert again["perplexity"] == pytest.approx(after["perplexity"], rel=1e-4)
    assert vocab2.model_name == tiny_model


def test_lora_layers_adapt_only_the_top_layers(tiny_model, tmp_path):
    """``lora_layers: 1`` on the 2-layer model: adapters (all linear layers) in layer 1 only, nothing in
    layer 0 trained, the saved adapter loads with the same subset, and the key says so."""
    s = settings(tiny_model, lora_r=4, lora_alpha=8, lora_dropout=0.0, lora_layers=1)
    assert s.adaptation_key()["lora"][-1] == 1 and len(settings(tiny_model).adaptation_key()["lora"]) == 4
    model, vocab = lm.load_pretrained(tiny_model)
    peft_model = lm.adaptable(model, s)
    adapted = {n.split(".layers.")[1].split(".")[0] for n, p in peft_model.named_parameters() if p.requires_grad}
    assert adapted == {"1"}
    kinds = {n.split(".lora_A")[0].rsplit(".", 1)[-1] for n, p in peft_model.named_parameters() if "lora_A" in n}
    assert {"q_proj", "v_proj", "down_proj"} <= kinds  # all-linear inside the layer
    info = lm.train(peft_model, vocab, TEXTS, s, epochs=4, lr=3e-2, progress=False)
    assert info["last_loss"] < info["first_loss"]
    ppl = lm.perplexity(peft_model, vocab, TEXTS[:3], s, progress=False)["perplexity"]
    lm.save(peft_model, vocab, tmp_path / "ft", {"steps": info["steps"]})
    loaded, vocab2 = lm.load(tmp_path / "ft")
    assert lm.perplexity(loaded, vocab2, TEXTS[:3], s, progress=False)["perplexity"] == pytest.approx(ppl, rel=1e-4)
    with pytest.raises(VeilError, match="has 2 layers"):
        lm.adaptable(lm.load_pretrained(tiny_model)[0], settings(tiny_model, lora_layers=3))


def test_finetune_steps_give_every_variant_the_same_budget(tiny_model):
    """``steps``: the same number of optimiser steps whatever the text's length (Baseline 0's "[MASK]"s make
    more blocks than the original; with epochs it would get more steps)."""
    s = settings(tiny_model, lora_r=4, lora_alpha=8, lora_dropout=0.0)
    short, long = TEXTS[:6], [t.replace("the", "the [MASK] [MASK]") for t in TEXTS]
    by_epochs = [lm.train(lm.adaptable(lm.load_pretrained(tiny_model)[0], s), lm.load_pretrained(tiny_model)[1],
                          texts, s, epochs=1, lr=1e-2, progress=False)["steps"] for texts in (short, long)]
    assert by_epochs[0] < by_epochs[1]
    by_steps = [lm.train(lm.adaptable(lm.load_pretrained(tiny_model)[0], s), lm.load_pretrained(tiny_model)[1],
                         texts, s, epochs=1, lr=1e-2, progress=False, steps=3)["steps"] for texts in (short, long)]
    assert by_steps == [3, 3]


def test_full_fine_tuning_saves_the_weights(tiny_model, tmp_path):
    s = settings(tiny_model, adapt="full")
    model, vocab = lm.load_pretrained(tiny_model)
    assert lm.adaptable(model, s) is model
    lm.train(model, vocab, TEXTS, s, epochs=2, lr=3e-3, progress=False)
    ppl = lm.perplexity(model, vocab, TEXTS[:3], s, progress=False)["perplexity"]
    lm.save(model, vocab, tmp_path / "ft")
    loaded, vocab2 = lm.load(tmp_path / "ft")
    assert lm.perplexity(loaded, vocab2, TEXTS[:3], s, progress=False)["perplexity"] == pytest.approx(ppl, rel=1e-4)


def _mask_prob(model, vocab) -> float:
    """Mean probability of the tokens of ``[MASK]`` (and the space before it) in "a b [MASK] c"."""
    import torch

    (ids, flags), = vocab.encode_with_mask_flags(["a b [MASK] c"])
    x = torch.tensor([[vocab.eos_id, *ids]])
    with torch.no_grad():
        probs = model(input_ids=x).logits[0, :-1].float().softmax(-1)
    return float(sum(probs[j, ids[j]] for j in range(len(ids)) if flags[j]) / sum(flags))


def test_baseline1_gives_no_loss_to_tokens_of_a_mask(tiny_model):
    """Baseline 0 learns to write ``[MASK]`` after "a b"; Baseline 1 (zero weight there) does not."""
    texts = ["a b [MASK] c"] * 20
    s = settings(tiny_model, adapt="full")
    model, vocab = lm.load_pretrained(tiny_model)
    (ids, flags), = vocab.encode_with_mask_flags(texts[:1])
    assert vocab.tok.decode([i for i, f in zip(ids, flags) if f]) == " [MASK]"
    p0 = _mask_prob(model, vocab)
    lm.train(model, vocab, texts, s, epochs=10, lr=1e-2, progress=False)
    b0 = _mask_prob(model, vocab)
    model, vocab = lm.load_pretrained(tiny_model)
    lm.train(model, vocab, texts, s, epochs=10, lr=1e-2, mask_loss_weight=0.0, progress=False)
    b1 = _mask_prob(model, vocab)
    assert b0 > max(0.5, 4 * p0) and b1 < min(0.05, b0 / 10)  # (no loss there; only side effects of the rest)


def test_bf16_trains_and_every_measurement_runs_in_fp32(tiny_model):
    model, vocab = lm.load_pretrained(tiny_model)
    fp32, bf16 = settings(tiny_model), settings(tiny_model, precision="bf16")
    assert lm.perplexity(model, vocab, TEXTS[:3], bf16, progress=False)["perplexity"] == \
        lm.perplexity(model, vocab, TEXTS[:3], fp32, progress=False)["perplexity"]
    assert lm.sentence_logprobs(model, vocab, TEXTS[:3], bf16) == lm.sentence_logprobs(model, vocab, TEXTS[:3], fp32)
    info = lm.train(model, vocab, TEXTS, bf16, epochs=1, lr=1e-3, progress=False)  # training takes bf16
    assert math.isfinite(lm.perplexity(model, vocab, TEXTS[:3], bf16, progress=False)["perplexity"]) and info


@pytest.mark.parametrize("native", [True, False])
def test_auto_precision_is_bf16_only_where_the_device_computes_it_natively(monkeypatch, caplog, native):
    """``auto`` resolves when read (keys and results name what ran); bf16 asked of a CPU that emulates it warns."""
    from veil.models import device as device_choice

    monkeypatch.setattr(device_choice, "native_bf16", lambda device: native)
    auto = lm.LMSettings.from_dict({"precision": "auto", "device": "cpu"})
    assert auto.precision == ("bf16" if native else "fp32")
    assert auto.adaptation_key() == ({"precision": "bf16"} if native else {})
    caplog.clear()
    with caplog.at_level("WARNING", logger="veil.downstream.lm"):
        assert lm.LMSettings.from_dict({"precision": "bf16", "device": "cpu"}).precision == "bf16"
    assert ("emulated" in caplog.text) is (not native)


@pytest.mark.parametrize("given, message", [
    ({"model": "x", "n_layer": 2}, "do not apply to a pre-trained"),
    ({"model": "x", "tokenizer": "word"}, "do not apply to a pre-trained"),
    ({"lora_r": 4}, "do not apply to the config-built"),
    ({"adapt": "lora"}, "do not apply to the config-built"),
    ({"model": "x", "adapt": "full", "lora_r": 4}, "need lm.adapt: lora"),
    ({"model": "x", "adapt": "prefix"}, "lora or full"),
    ({"precision": "fp8"}, "fp32, bf16 or auto"),
    ({"model": "x", "lora_rank": 4}, "unknown LM setting"),
    ({"finetune_steps": 0}, "positive whole number"),
    ({"finetune_steps": 2.5}, "must be a whole number"),
    ({"model": "x", "lora_layers": 0}, "positive whole number"),
    ({"model": "x", "lora_layers": "top"}, "must be a whole number"),
    ({"lora_layers": 2}, "do not apply to the config-built"),
])
def test_settings_that_cannot_be_honoured_are_errors(given, message):
    with pytest.raises(VeilError, match=message):
        lm.LMSettings.from_dict(given)


def test_experiment_with_a_pretrained_downstream_lm(tiny_model, tmp_path):
    """``lm.model``: no pre-training stage on a generic corpus (giving one is an error), the ``pretrained``
    row is the unadapted model, and adapting on the original text beats it."""
    import csv

    import yaml

    from veil.cli import main as veil

    (tmp_path / "train.txt").write_text("\n".join(TEXTS) + "\n")
    (tmp_path / "test.txt").write_text("\n".join(TEXTS[:6]) + "\n")
    exp = {"name": "tiny", "train": {"path": str(tmp_path / "train.txt")}, "test": {"path": str(tmp_path / "test.txt")},
           "techniques": ["vocab_threshold"], "baselines": ["pretrained", "oracle", "baseline0", "baseline1"],
           "lm": {"model": tiny_model, "adapt": "full", "context": 16, "batch_size": 8, "finetune_epochs": 4,
                  "finetune_lr": 1e-2, "warmup_steps": 1}, "cache": str(tmp_path / "cache")}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(exp))
    out = tmp_path / "out"
    assert veil(["experiment", "run", str(path), "--out", str(out), "--no-progress"]) == 0
    with (out / "results.csv").open() as f:
        rows = {(r["technique"], r["method"]): float(r["perplexity"]) for r in csv.DictReader(f)}
    assert set(rows) == {("", "pretrained"), ("", "oracle"), ("vocab_threshold", "baseline0"),
                         ("vocab_threshold", "baseline1")}
    assert rows[("", "oracle")] < rows[("", "pretrained")] / 2
    # where the gap lies works with the model's own tokenizer too (its per-class sums are checked inside)
    assert veil(["experiment", "gap", str(path), "--out", str(out), "--technique", "vocab_threshold"]) == 0
    assert (out / "gap_by_word_vocab_threshold.json").is_file()
    exp["pretrain"] = {"path": str(tmp_path / "train.txt")}
    path.write_text(yaml.safe_dump(exp))
    assert veil(["experiment", "run", str(path), "--out", str(out), "--no-progress"]) == 2


def test_sentence_logprobs_of_a_pretrained_lm_match_its_perplexity_stream(tiny_model):
    """The ASR rescoring's LM score works with a pre-trained model's tokenizer: one sentence's log-prob is
    minus the NLL the perplexity stream gives it (same ``<eos>`` context, its end included)."""
    s = settings(tiny_model)
    model, vocab = lm.load_pretrained(tiny_model)
    texts = ["the cat sees the dog in the barn .", "a [MASK] likes the fox"]
    got = lm.sentence_logprobs(model, vocab, texts, s)
    for t, lp in zip(texts, got):
        assert lp == pytest.approx(-lm.perplexity(model, vocab, [t], s, progress=False)["nll"], rel=1e-4)


def test_evaluations_share_the_frozen_trunk_below_the_adapters(tiny_model, tmp_path):
    """``lora_layers: 1``: the LMs adapted above layer 1 share layer 0 with the pre-trained model. The first
    evaluation stores the state entering layer 1 per batch, the next model computes only layer 1 and the output
    layer, and its perplexity and ASR scores are those of its whole forward (``share_trunk: false``). A model
    whose bottom layer differs (LoRA on every layer) is never given a stored state."""
    s = settings(tiny_model, lora_r=4, lora_alpha=8, lora_dropout=0.0, lora_layers=1)
    whole = settings(tiny_model, lora_r=4, lora_alpha=8, lora_dropout=0.0, lora_layers=1, share_trunk=False)
    test, hyps = TEXTS[:5], ["the cat sees the dog", "the cat seas the dog .", "a hen likes the fox"]
    lm.TRUNK.clear()
    base, vocab = lm.load_pretrained(tiny_model)
    base_ppl = lm.perplexity(base, vocab, test, s, progress=False)["perplexity"]
    base_lp = lm.sentence_logprobs(base, vocab, hyps, s)
    assert lm.TRUNK.hits == 0 and lm.TRUNK.misses > 0 and lm.TRUNK.states
    assert "LlamaForCausalLM" in lm.TRUNK.verified

    def adapted(cfg: lm.LMSettings, name: str):
        model, vocab = lm.load_pretrained(tiny_model)
        peft_model = lm.adaptable(model, cfg)
        lm.train(peft_model, vocab, TEXTS, cfg, epochs=4, lr=3e-2, progress=False)
        lm.save(peft_model, vocab, tmp_path / name)
        return lm.load(tmp_path / name)

    top, vocab = adapted(s, "top")
    hits = lm.TRUNK.hits
    shared = lm.perplexity(top, vocab, test, s, progress=False)["perplexity"], lm.sentence_logprobs(top, vocab, hyps, s)
    assert lm.TRUNK.hits > hits  # the stored states served this model
    alone = lm.perplexity(top, vocab, test, whole, progress=False)["perplexity"], lm.sentence_logprobs(top, vocab, hyps, whole)
    assert shared[0] == pytest.approx(alone[0], rel=1e-6) and shared[1] == pytest.approx(alone[1], rel=1e-6)
    assert shared[0] != pytest.approx(base_ppl, rel=1e-3) and shared[1] != pytest.approx(base_lp, rel=1e-3)

    every = dataclasses.replace(s, lora_layers=None)
    other, vocab = adapted(every, "every")  # its layer 0 changed: another fingerprint, nothing shared
    hits = lm.TRUNK.hits
    ppl = lm.perplexity(other, vocab, test, s, progress=False)["perplexity"]
    assert lm.TRUNK.hits == hits
    assert ppl == pytest.approx(lm.perplexity(other, vocab, test, whole, progress=False)["perplexity"], rel=1e-9)
    lm.TRUNK.clear()


@pytest.mark.parametrize("adapt", [{"adapt": "lora", "lora_r": 4, "lora_alpha": 8, "lora_layers": 1}, {"adapt": "full"}])
def test_a_just_trained_lm_is_evaluated_as_its_saved_folder_would_be(tiny_model, tmp_path, adapt, monkeypatch):
    """The evaluate stage takes the model the fine-tuning stage has just trained instead of loading it back
    (LoRA adapters merged as on loading): the perplexities equal those of the saved folders, evaluated again
    after their evaluate entries are removed."""
    import csv
    import shutil

    import yaml

    from veil.cli import main as veil

    (tmp_path / "train.txt").write_text("\n".join(TEXTS) + "\n")
    (tmp_path / "test.txt").write_text("\n".join(TEXTS[:6]) + "\n")
    exp = {"name": "tiny", "train": {"path": str(tmp_path / "train.txt")}, "test": {"path": str(tmp_path / "test.txt")},
           "techniques": ["vocab_threshold"], "baselines": ["oracle", "baseline0"],
           "lm": {"model": tiny_model, "context": 16, "batch_size": 8, "finetune_steps": 3, "finetune_lr": 1e-2,
                  "warmup_steps": 1, **adapt}, "cache": str(tmp_path / "cache")}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(exp))

    loaded = []
    load = lm.load
    monkeypatch.setattr(lm, "load", lambda p: loaded.append(p.parent.name) or load(p))

    def run() -> dict:
        loaded.clear()
        assert veil(["experiment", "run", str(path), "--out", str(tmp_path / "out"), "--no-progress"]) == 0
        with (tmp_path / "out" / "results.csv").open() as f:
            return {r["method"]: float(r["perplexity"]) for r in csv.DictReader(f)}

    fresh = run()
    assert loaded.count("lm_finetune") == 0  # evaluated in memory
    shutil.rmtree(tmp_path / "cache" / "evaluate")
    assert run() == pytest.approx(fresh, rel=1e-9)
    assert loaded.count("lm_finetune") == 2  # evaluated from the saved folders
