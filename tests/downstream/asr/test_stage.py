"""ASR evaluation stage: a tiny experiment with WER rows (fake recogniser, real tiny LMs), its cache, and sentence scores."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest
import yaml

from veil.downstream.asr import recognise
from veil.downstream.asr.speech import write_wav
from veil.cli import main as veil

ANIMALS = ["cat", "dog", "cow", "hen", "fox", "owl"]
VERBS = ["sees", "likes", "feeds", "chases"]
PLACES = ["the barn", "the farm", "the yard", "the field"]
LM = {"n_layer": 1, "n_embd": 32, "n_head": 2, "context": 32, "batch_size": 8, "pretrain_epochs": 2,
      "finetune_epochs": 6, "finetune_lr": 3e-3, "pretrain_lr": 3e-3, "warmup_steps": 2, "dropout": 0.0}


def sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"the {rng.choice(ANIMALS)} {rng.choice(VERBS)} the {rng.choice(ANIMALS)} in {rng.choice(PLACES)} ."
            for _ in range(n)]


class FakeRecogniser:
    """Hears every utterance's reference and prefers a garbled copy of it (the LM should know better)."""

    built = 0
    references: dict[str, str] = {}

    def __init__(self, model, compute_type="int8", threads=None, beam=8, nbest=8):
        FakeRecogniser.built += 1

    def nbest_lists(self, audios, batch_size=4):
        out = []
        for a in audios:
            ref = self.references[Path(a).name]
            w = ref.split()
            garbled = " ".join(w[:4] + ["zqxv"] + w[5:])
            short = " ".join(w[:-3] + w[-1:])
            out.append([{"text": garbled, "score": -0.1, "tokens": 10, "logprob": -1.0},
                        {"text": ref, "score": -0.13, "tokens": 10, "logprob": -1.3},
                        {"text": short, "score": -0.25, "tokens": 8, "logprob": -2.0}])
        return out


@pytest.fixture
def fake_recogniser(monkeypatch):
    FakeRecogniser.built = 0
    monkeypatch.setattr(recognise, "WhisperNBest", FakeRecogniser)
    monkeypatch.setattr(recognise, "load_audio", lambda path: str(path))
    return FakeRecogniser


def write_experiment(tmp: Path, fake) -> Path:
    (tmp / "train.txt").write_text("\n".join(sentences(60, 1)) + "\n")
    test = sentences(30, 2)
    (tmp / "test.txt").write_text("\n".join(test) + "\n")
    (tmp / "generic.txt").write_text("\n".join(sentences(40, 3)) + "\n")
    (tmp / "audio").mkdir()
    with (tmp / "audio" / "manifest.jsonl").open("w") as f:
        for i, t in enumerate(test):
            write_wav(tmp / "audio" / f"u{i}.wav", [0.0] * 160, 16000)
            fake.references[f"u{i}.wav"] = t
            f.write(json.dumps({"audio": f"u{i}.wav", "text": t}) + "\n")
    (tmp / "whisper").mkdir()
    (tmp / "whisper" / "model.bin").write_bytes(b"fake weights")
    exp = {"name": "tiny", "train": "train.txt", "test": "test.txt", "pretrain": "generic.txt",
           "techniques": ["allow_list"], "baselines": ["pretrained", "oracle", "baseline0"], "lm": LM,
           "cache": "cache", "asr": {"speech": "audio/manifest.jsonl", "model": "whisper", "dev": 10, "sentences": 20,
                                     "lm_weights": [0.0, 0.1, 0.5, 1.0], "word_bonus": [0.0, 0.5]}}
    p = tmp / "exp.yaml"
    p.write_text(yaml.safe_dump(exp))
    return p


def read_rows(out: Path) -> list[dict]:
    with (out / "results.csv").open() as f:
        return list(csv.DictReader(f))


def test_wer_rows_tuning_and_cache(tmp_path, fake_recogniser, capsys):
    exp = write_experiment(tmp_path, fake_recogniser)
    out = tmp_path / "out"
    assert veil(["experiment", "run", str(exp), "--out", str(out), "--no-progress"]) == 0
    rows = {(r["technique"], r["method"]): r for r in read_rows(out)}
    assert set(rows) == {("", "pretrained"), ("", "oracle"), ("allow_list", "baseline0"), ("", "no_lm")}
    no_lm = rows[("", "no_lm")]
    assert no_lm["perplexity"] == "" and float(no_lm["wer"]) == pytest.approx(100 * 20 / 160)  # 1 of 8 words wrong
    assert float(no_lm["nbest_oracle_wer"]) == 0.0 and no_lm["asr_test_utterances"] == "20"
    wer = {m: float(r["wer"]) for (_, m), r in rows.items()}
    assert wer["oracle"] < wer["no_lm"]  # the adapted LM rejects the garbled word
    assert len({(r["asr_lambda"], r["asr_beta"]) for r in rows.values()}) == 1  # one lambda / beta for all
    md = (out / "results.md").read_text()
    assert "Word error rate" in md and "| no_lm |" in md and "n-best oracle" in md
    assert "word error rate with the LM fused in" in (out / "report.html").read_text()
    assert fake_recogniser.built == 1
    capsys.readouterr()

    # second run: n-best lists and LM scores come from the cache
    assert veil(["experiment", "run", str(exp), "--out", str(out), "--no-progress"]) == 0
    assert "stages computed: 0," in capsys.readouterr().out and fake_recogniser.built == 1
    again = {(r["technique"], r["method"]): r["wer"] for r in read_rows(out)}
    assert again == {k: r["wer"] for k, r in rows.items()}

    # a run of one method still tunes with the Oracle LM (cached) and gives the same WER
    out2 = tmp_path / "out2"
    assert veil(["experiment", "run", str(exp), "--out", str(out2), "--no-progress", "--method", "baseline0"]) == 0
    part = {(r["technique"], r["method"]): r for r in read_rows(out2)}
    assert set(part) == {("allow_list", "baseline0"), ("", "no_lm")}
    assert part[("allow_list", "baseline0")]["wer"] == rows[("allow_list", "baseline0")]["wer"]

    # another dev / test split of the same 30 utterances: the n-best lists are reused, the split is this run's
    out3 = tmp_path / "out3"
    capsys.readouterr()
    assert veil(["experiment", "run", str(exp), "--out", str(out3), "--no-progress", "--method", "baseline0",
                 "--set", "asr.dev=15", "--set", "asr.sentences=15"]) == 0
    assert fake_recogniser.built == 1
    assert {r["asr_test_utterances"] for r in read_rows(out3)} == {"15"}


def test_without_lm_weight_the_fusion_keeps_the_recognisers_own_choice():
    """The acoustic term is the recogniser's length-normalised score (x the first hypothesis's length): at
    lambda = beta = 0 the fused choice is its first hypothesis, although a shorter one has the higher total log p."""
    from veil.downstream.asr import rescore

    hyps = [{"text": "the cat sat on the mat", "score": -0.20, "tokens": 10, "logprob": -2.0},
            {"text": "the cat sat", "score": -0.30, "tokens": 5, "logprob": -1.5}]
    acoustic = rescore.acoustic_scores(hyps)
    assert acoustic == pytest.approx([-2.0, -3.0])
    nb = rescore.NBest(acoustic, [6, 3], [0, 3], 6)
    assert rescore.choose(nb, [-20.0, -10.0], 0.0, 0.0) == 0  # the raw log p (-2.0 vs -1.5) would pick the short one
    assert rescore.choose(nb, [-20.0, -10.0], 1.0, 0.0) == 1  # an LM weight can still overrule it
    with pytest.raises(Exception, match="at least one hypothesis"):
        rescore.acoustic_scores([])


def test_sentence_logprobs_match_the_perplexity_stream_and_do_not_depend_on_batching():
    import math

    from veil.downstream import lm
    from veil.downstream.tokenizer import build_vocab

    texts = sentences(12, 5)
    s = lm.LMSettings.from_dict({**LM, "context": 8, "batch_size": 3})
    vocab = build_vocab("bpe", texts, 200)
    model = lm.make_model(s, vocab)
    one = lm.sentence_logprobs(model, vocab, texts[:1], s)
    stream = sum(float(x.sum()) for x in lm.stream_nll(model, vocab, texts[:1], s))
    assert one[0] == pytest.approx(-stream, rel=1e-5)  # longer than the context: scored in blocks, as the stream
    batched = lm.sentence_logprobs(model, vocab, texts, s)
    single = [lm.sentence_logprobs(model, vocab, [t], s)[0] for t in texts]
    assert batched == pytest.approx(single, rel=1e-4) and all(math.isfinite(x) and x < 0 for x in batched)


def test_sentence_logprobs_with_a_pretrained_models_own_tokenizer():
    """The SmolLM2-style downstream LM (``lm.model``): its tokenizer, pad = eos, same scores batched or not."""
    from tests.tiny_models import build_tiny_causal_lm
    from veil.downstream import lm

    texts = sentences(6, 7)
    model, tok = build_tiny_causal_lm(texts, vocab_size=300, hidden_size=32)
    vocab = lm.CausalLMTokens(tok, "tiny")
    s = lm.LMSettings.from_dict({"context": 16, "batch_size": 4})
    stream = sum(float(x.sum()) for x in lm.stream_nll(model, vocab, texts[:1], s))
    assert lm.sentence_logprobs(model, vocab, texts[:1], s)[0] == pytest.approx(-stream, rel=1e-5)
    batched = lm.sentence_logprobs(model, vocab, texts, s)
    assert batched == pytest.approx([lm.sentence_logprobs(model, vocab, [t], s)[0] for t in texts], rel=1e-4)


def test_hypotheses_are_scored_in_the_form_of_the_corpus_lines(tmp_path):
    """PTB's lines all start with a space, so an LM with a pre-trained tokenizer learnt each first word as `` the``:
    the recogniser's ``the ...`` is scored as `` the ...`` (and keyed apart from a run without the space)."""
    from veil.downstream.asr.settings import ASRSettings
    from veil.downstream.asr.stage import ASREvaluation, shared_lead
    from veil.cache import StageCache
    from tests.tiny_models import build_tiny_causal_lm
    from veil.downstream import lm

    assert shared_lead([" the cat sat ", " a dog "]) == " "
    assert shared_lead([" the cat", "a dog"]) == "" and shared_lead(["the cat", "a dog"]) == ""
    texts = sentences(8, 9)
    model, tok = build_tiny_causal_lm([" " + t for t in texts], vocab_size=300, hidden_size=32)
    vocab = lm.CausalLMTokens(tok, "tiny")
    s = lm.LMSettings.from_dict({"context": 32, "batch_size": 4})
    lm.save(model, vocab, tmp_path / "lm", {})
    records = [{"id": f"u{i}", "reference": t, "hyps": [{"text": t.rstrip(" ."), "score": -0.1, "tokens": 9}]}
               for i, t in enumerate(texts[:3])]
    cache = StageCache(tmp_path / "cache")
    ev = ASREvaluation(ASRSettings.from_dict({"speech": "audio"}), cache, tmp_path, lm_settings=s, progress=False)
    plain, _ = ev.lm_scores(tmp_path / "lm", "lmkey", records, "nb")
    spaced, _ = ev.lm_scores(tmp_path / "lm", "lmkey", records, "nb", lead=" ")
    loaded, lvocab = lm.load(tmp_path / "lm")
    hyps = [r["hyps"][0]["text"] for r in records]
    assert [x[0] for x in spaced] == pytest.approx(lm.sentence_logprobs(loaded, lvocab, [" " + h for h in hyps], s), rel=1e-5)
    assert [x[0] for x in plain] == pytest.approx(lm.sentence_logprobs(loaded, lvocab, hyps, s), rel=1e-5)
    assert [x[0] for x in plain] != pytest.approx([x[0] for x in spaced])
    assert len(cache.computed) == 2  # the lead is part of the key


def test_lm_scores_are_taken_while_the_evaluated_model_is_in_memory(tmp_path, fake_recogniser, monkeypatch):
    """The run scores the n-best lists with each LM right after its perplexity (no second load of the
    model); the scores and WER are those of scoring the saved model at the end."""
    from veil.downstream.asr.stage import ASREvaluation
    from veil.downstream import lm

    exp = write_experiment(tmp_path, fake_recogniser)
    loads, real_load = [], lm.load
    monkeypatch.setattr(lm, "load", lambda path: loads.append(Path(path).parent.name) or real_load(path))
    assert veil(["experiment", "run", str(exp), "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    assert "lm_finetune" not in loads  # the fine-tuned LMs were never loaded back (the pre-trained one is)
    primed = {(r["technique"], r["method"]): r["wer"] for r in read_rows(tmp_path / "out")}

    monkeypatch.setattr(ASREvaluation, "prime", lambda self, *a, **k: None)
    data = yaml.safe_load(exp.read_text())
    exp.write_text(yaml.safe_dump({**data, "cache": "cache2"}))
    loads.clear()
    assert veil(["experiment", "run", str(exp), "--out", str(tmp_path / "out2"), "--no-progress"]) == 0
    assert loads.count("lm_finetune") == 2  # without priming: Oracle and Baseline 0 loaded for their scores
    assert {(r["technique"], r["method"]): r["wer"] for r in read_rows(tmp_path / "out2")} == primed

    def scores(cache: str) -> dict:
        out = {}
        for d in (tmp_path / cache / "asr_lm").iterdir():
            meta = json.loads((d / "done.json").read_text())
            out[meta["settings"]["lm"].split("/")[0], meta["settings"]["utterances"]] = json.loads(
                (d / "scores.json").read_text())
        return out

    a, b = scores("cache"), scores("cache2")
    assert a.keys() == b.keys() and len(a) == 3
    for k in a:
        assert [x for r in a[k] for x in r] == pytest.approx([x for r in b[k] for x in r], abs=1e-4)


def test_too_few_sentences_to_speak_is_an_error_not_a_smaller_test_split():
    from veil.errors import VeilError
    from veil.downstream.asr.settings import ASRSettings
    from veil.downstream.asr.stage import select_sentences

    texts = ["one two three four five", "too short", "six seven eight nine ten", "a b c <unk> d e"]
    s = ASRSettings.from_dict({"speech": "synth", "dev": 1, "sentences": 1})
    assert [t for _, _, t in select_sentences(texts, s, 0)] == [texts[0], texts[2]]
    with pytest.raises(VeilError, match="only 2 of the 4 test sentences"):
        select_sentences(texts, ASRSettings.from_dict({"speech": "synth", "dev": 1, "sentences": 2}), 0)
