"""Privacy-preserving MLM fine-tuning on a tiny 2-layer BERT (veil.audit.ppmlm, veil audit ppmlm)."""

import json
import random
from pathlib import Path

import pytest

from veil.audit import ppmlm
from veil.audit.ppmlm import Chunk, Method, TrainConfig
from veil.registry import ppmlm_methods
from veil.types import Document, Span

WORDS = ("i we you they the a and to of in is was it that my our house car dog cat went live lived "
         "work worked dallas texas smith plano zorgon vertebra quux blorp like really yeah uh know "
         "about think go school kids years ago x").split()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A 2-layer BertForMaskedLM with a WordPiece tokenizer over WORDS, saved to a folder."""
    torch = pytest.importorskip("torch")
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    d = tmp_path_factory.mktemp("tiny-mlm")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ",", ".", "'", "?", "##s", "##er", "##ing"] + WORDS
    tok = BertTokenizer(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64)
    model = BertForMaskedLM(cfg)
    model.save_pretrained(d)
    tok.save_pretrained(d)
    return d


def load(path):
    from veil.models.minilm import load_masked_lm

    return load_masked_lm(str(path))


def docs():
    return [Document("1:1", "I live in Dallas, Texas, with my dog.", "p1", "c1"),
            Document("1:2", "My dog likes the zorgon house.", "p1", "c1"),
            Document("1:3", "Yeah, I worked at the school.", "p2", "c1"),
            Document("2:1", "We went to Plano years ago, uh, really.", "p3", "c2"),
            Document("2:2", "The kids think about the vertebra.", "p4", "c2")]


def test_encoding_maps_tokens_to_whole_words_and_keeps_persons_apart(tiny):
    _, tok = load(tiny)
    chunks = ppmlm.encode_documents(docs(), tok, max_length=16)
    assert {c.person for c in chunks} == {"p1", "p2", "p3", "p4"}
    for c in chunks:
        assert len(c.input_ids) == len(c.word_ids) <= 16
        assert c.word_ids[0] == c.word_ids[-1] == -1
        # every word has at least one token, tokens of a word are contiguous
        pos = c.word_tokens()
        assert sorted(pos) == list(range(len(c.words)))
        assert all(p == list(range(p[0], p[-1] + 1)) for p in pos.values())
    p1 = [c for c in chunks if c.person == "p1"]
    assert p1[0].words[:5] == ["i", "live", "in", "dallas", "texas"]
    # "likes" is two WordPiece tokens (like ##s): one word
    likes = next(c for c in p1 if "likes" in c.words)
    assert len(likes.word_tokens()[likes.words.index("likes")]) == 2


def test_ppmlm_never_targets_identifiers_while_mlm_does():
    words = ["i", "live", "in", "dallas", "with", "zorgon", "and", "my", "dog", "cat"]
    c = Chunk("p1", [], [], words)
    c.protected = ppmlm.protected_flags(words, {"dallas", "zorgon"})
    rng = random.Random(0)
    protected_hits = mlm_hits = 0
    for _ in range(500):
        t = ppmlm.choose_targets(c, 0.15, rng, respect_protection=True)
        assert t and len(t) == round(0.15 * 8)
        protected_hits += sum(words[i] in {"dallas", "zorgon"} for i in t)
        mlm_hits += sum(words[i] in {"dallas", "zorgon"} for i in ppmlm.choose_targets(c, 0.15, rng, False))
    assert protected_hits == 0
    assert mlm_hits > 0


def test_ngram_identifiers_protect_every_word_of_an_occurrence():
    flags = ppmlm.protected_flags(["a", "purple", "house", "and", "purple", "car"], set(),
                                  {("purple", "house")}, max_n=2)
    assert flags == [False, True, True, False, False, False]


def test_masked_example_masks_every_token_of_a_target_word(tiny):
    _, tok = load(tiny)
    c = ppmlm.encode_documents([Document("d", "My dog likes the house.", "p", "g")], tok, 16)[0]
    w = c.words.index("likes")
    ids, am, lab = ppmlm.masked_example(c, [w], tok.mask_token_id, tok.pad_token_id, 16)
    masked = [i for i, x in enumerate(ids) if x == tok.mask_token_id]
    assert masked == c.word_tokens()[w] and len(masked) == 2
    assert [lab[i] for i in masked] == [c.input_ids[i] for i in masked]
    assert sum(1 for x in lab if x != -100) == 2 and len(ids) == 16 and sum(am) == len(c.input_ids)


def test_mlma_replaces_direct_identifiers_by_x():
    d = Document("d", "I live in Dallas, Texas, with Bob Smith.", "p", "g")
    spans = [Span(10, 16, "LOCATION", "t"), Span(18, 23, "LOCATION", "t"), Span(30, 39, "PERSON_NAME", "t")]
    assert ppmlm.replace_spans(d, spans).text == "I live in X, X, with X."
    assert ppmlm.direct_words({"p": {"the United States", "Bob"}}, stop={"the"}) == {"united", "states", "bob"}


def test_training_labels_avoid_protected_words(tiny):
    torch = pytest.importorskip("torch")
    _, tok = load(tiny)
    chunks = ppmlm.encode_documents(docs(), tok, 24)
    black = {"dallas", "texas", "zorgon", "plano", "vertebra"}
    for c in chunks:
        c.protected = ppmlm.protected_flags(c.words, black)
    ds = ppmlm._MaskingDataset(chunks, tok, TrainConfig(max_length=24), True, seed=1)
    for _ in range(50):
        for i in range(len(ds)):
            ids, am, lab = ds[i]
            c = chunks[i]
            for t in (lab != -100).nonzero().flatten().tolist():
                assert c.words[c.word_ids[t]] not in black
            # the protected words stay in the input as context: their tokens are never replaced
            for t, w in enumerate(c.word_ids):
                if w >= 0 and c.words[w] in black:
                    assert int(ids[t]) == c.input_ids[t] != tok.mask_token_id


def test_mlm_training_runs_and_changes_the_model(tiny):
    torch = pytest.importorskip("torch")
    model, tok = load(tiny)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    chunks = ppmlm.encode_documents(docs() * 4, tok, 24)
    stats = ppmlm.train(model, tok, chunks, ppmlm_methods.get("ppmlm"), TrainConfig(epochs=2, batch_size=4,
                                                                                max_length=24, lr=1e-3))
    model = stats["model"]
    assert stats["steps"] > 0 and stats["loss_last_20"] == stats["loss_last_20"]
    changed = [k for k, v in model.state_dict().items() if not torch.equal(v, before[k])]
    assert any("encoder" in k for k in changed)


def test_dp_defaults_are_the_papers():
    cfg = TrainConfig()
    assert (cfg.dp_epsilon, cfg.dp_delta, cfg.dp_max_grad_norm) == (8.0, 1e-5, 10.0)


def test_dp_method_runs_one_opacus_step(tiny):
    torch = pytest.importorskip("torch")
    pytest.importorskip("opacus")
    model, tok = load(tiny)
    layer = model.bert.encoder.layer[0].attention.self.query.weight
    before = layer.detach().clone()
    chunks = ppmlm.encode_documents(docs() * 8, tok, 24)
    stats = ppmlm.train(model, tok, chunks, ppmlm_methods.get("dp"), TrainConfig(epochs=1, batch_size=8,
                                                                             max_length=24, lr=1e-2))
    assert stats["dp"]["noise_multiplier"] > 0
    assert stats["dp"]["max_grad_norm"] == 10.0  # read back from Opacus' DP optimiser
    assert stats["dp"]["delta"] == 1e-5 and stats["dp"]["target_epsilon"] == 8.0
    assert 0 < stats["dp"]["epsilon_spent"] <= 8.0 + 1e-6
    assert not torch.equal(stats["model"].bert.encoder.layer[0].attention.self.query.weight.detach(), before)


def test_probe_predicts_every_planned_word(tiny):
    model, tok = load(tiny)
    chunks = ppmlm.encode_documents(docs(), tok, 24)
    plans = ppmlm.plan_probes(chunks, {"dallas", "zorgon"}, 0.15, seed=0)
    planned = sum(len(r) for p in plans for r in p.rounds)
    for p, c in zip(plans, chunks):
        assert all(len(r) <= max(1, round(0.15 * len(c.words))) for r in p.rounds)
        probed = {w for r in p.rounds for w in r}
        assert {i for i, w in enumerate(c.words) if w in {"dallas", "zorgon"}} <= probed
    preds = ppmlm.probe(model, tok, chunks, plans, 24, batch_size=3)
    assert len(preds) == planned
    assert {p.truth for p in preds} >= {"dallas", "zorgon"}


def switchboard_fixture(root: Path) -> Path:
    """A tiny Switchboard-shaped corpus: 8 callers in 4 conversations."""
    rng = random.Random(0)
    (root / "train").mkdir(parents=True)
    (root / "speakers").mkdir()
    rows = ["id_conv,id_caller,id_speaker,Unk_1,Unk_2,id_topic,Unk_4,Unk_5"]
    common = "i we you they the a and to of in is was it that my house car dog went live work like really yeah".split()
    rare = ["dallas", "texas", "smith", "plano", "zorgon", "vertebra", "quux", "blorp"]
    for conv, (a, b) in enumerate([(1, 2), (3, 4), (5, 6), (7, 8)], start=3001):
        rows += [f"{conv},A,{1000 + a},0,0,0,,Y", f"{conv},B,{1000 + b},0,0,0,,Y"]
        lines = []
        for n in range(12):
            side, who = ("A", a) if n % 2 == 0 else ("B", b)
            words = rng.choices(common, k=8) + [rare[who - 1]]
            rng.shuffle(words)
            text = " ".join(words).capitalize() + "."
            if n == 0:
                text = "I live in Dallas, Texas."
            lines.append(f"{side}|{text}|sd")
        (root / "train" / f"{conv}.txt").write_text("\n".join(lines) + "\n")
    (root / "speakers" / "call_con_tab.csv").write_text("\n".join(rows) + "\n")
    return root


def test_cli_prints_one_json_object_keyed_by_method(tiny, tmp_path, capsys):
    from veil.cli import main

    corpus = switchboard_fixture(tmp_path / "swb")
    out = tmp_path / "out"
    rc = main(["audit", "ppmlm", str(corpus), "--format", "switchboard", "--model", str(tiny),
               "--methods", "mlm,mlma,ppmlm", "--out", str(out), "--json", "--epochs", "1",
               "--batch-size", "4", "--max-length", "24", "--seed", "3"])
    assert rc == 0
    result = json.loads(capsys.readouterr().out)
    assert list(result) == ["mlm", "mlma", "ppmlm"]
    for r in result.values():
        assert set(r) == {"utility", "privacy", "auc", "tpr_at_fpr"}
        assert set(r["tpr_at_fpr"]) == {"0.001", "0.01", "0.1"}
        assert 0 <= r["privacy"] <= 1 and 0 <= r["auc"] <= 1 and 0 <= r["utility"] <= 1
    for f in ("table.csv", "table.md", "results.json", "roc.png", "privacy_utility.png", "regurgitation.png",
              "methods/ppmlm.json", "methods/ppmlm.scores.csv", "methods/ppmlm.regurgitation.csv"):
        assert (out / f).is_file(), f
    assert "| PPMLM |" in (out / "table.md").read_text()
    data = json.loads((out / "results.json").read_text())["data"]
    assert data["members"] == 4 and data["non_members"] == 4
    # a repeated command reuses finished methods
    rc = main(["audit", "ppmlm", str(corpus), "--model", str(tiny), "--methods", "ppmlm", "--out", str(out),
               "--json", "--epochs", "1", "--batch-size", "4", "--max-length", "24", "--seed", "3"])
    assert rc == 0 and json.loads(capsys.readouterr().out)["ppmlm"] == result["ppmlm"]


def test_cli_rejects_unknown_method(tmp_path, capsys):
    from veil.cli import main

    rc = main(["audit", "ppmlm", str(tmp_path), "--methods", "mlm,bogus", "--out", str(tmp_path / "o")])
    assert rc == 2
    assert "unknown method(s) bogus" in capsys.readouterr().err


def test_dp_loss_is_the_mean_of_per_sequence_losses(tiny):
    torch = pytest.importorskip("torch")
    from veil.models.minilm import masked_positions_loss

    model, tok = load(tiny)
    chunks = ppmlm.encode_documents(docs(), tok, 24)
    rows = [ppmlm.masked_example(c, ppmlm.choose_targets(c, 0.4, random.Random(i), False), tok.mask_token_id,
                                 tok.pad_token_id, 24) for i, c in enumerate(chunks)]
    ids, am, lab = (torch.tensor([r[j] for r in rows]) for j in range(3))
    with torch.no_grad():
        batched = ppmlm.per_sample_masked_loss(model, ids, am, lab)
        singles = [masked_positions_loss(model, ids[i:i + 1], am[i:i + 1], lab[i:i + 1]) for i in range(len(rows))]
    assert float(batched) == pytest.approx(float(sum(singles) / len(singles)), rel=1e-5)


def test_importing_the_audit_modules_does_not_import_torch():
    import subprocess
    import sys

    code = ("import sys, veil.cli.audit_ppmlm, veil.audit.ppmlm, veil.audit.membership, veil.audit.metrics, "
            "veil.models.minilm; assert 'torch' not in sys.modules and 'transformers' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_regurgitation_counts_repetitions_in_the_text_each_method_trained_on(tiny):
    """MLMA trains on pseudonymised text: its direct identifiers are repeated 0 times there."""
    import re

    model, tok = load(tiny)
    corpus = [Document(f"{p}:{i}", text, p, f"c{p}") for p in ("p1", "p2", "p3", "p4")
              for i, text in enumerate(["I live in Dallas, Texas.", f"My dog went to Dallas, {p} zorgon."])]

    def spans(ds):
        return [[Span(m.start(), m.end(), "LOCATION", "t") for m in re.finditer(r"Dallas|Texas", d.text)]
                for d in ds]

    cfg = ppmlm.AuditConfig(member_share=0.5, seed=0)
    tcfg = TrainConfig(max_length=24)
    data = ppmlm.prepare(corpus, tok, cfg, tcfg, direct_spans_fn=spans)
    assert {"dallas", "texas"} <= data.direct_train
    assert all("dallas" not in c.words for c in data.pseudonymised_chunks)
    assert any("x" in c.words for c in data.pseudonymised_chunks)
    reps = {m: {r["identifier"]: r["repetitions"] for r in ppmlm.evaluate_method(model, tok, data, cfg, tcfg, m)
                ["_regurgitation"]} for m in ("mlm", "mlma")}
    assert reps["mlm"]["dallas"] == 4 and reps["mlm"]["texas"] == 2  # 2 members x (2 + 1)
    assert reps["mlma"]["dallas"] == 0 and reps["mlma"]["texas"] == 0
