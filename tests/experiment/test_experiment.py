"""Experiment stage: a tiny end-to-end experiment through ``veil experiment run``, and the stage cache."""

from __future__ import annotations

import csv
import math
import random
import re
from pathlib import Path

import pytest

from veil.cli import main as veil
from veil.errors import VeilError
from veil.fill.loop import CandidateFiller
from veil.mask.base import Masker
from veil.registry import fillers, maskers
from veil.types import Span

ANIMALS = ["cat", "dog", "cow", "hen", "fox", "owl"]
VERBS = ["sees", "likes", "feeds", "chases"]
PLACES = ["the barn", "the farm", "the yard", "the field"]


class AnimalMasker(Masker):
    """Masks every animal word (a third of the words of the fixture)."""

    name = "fake_animals"

    def __init__(self, **_: object) -> None:
        pass

    def detect(self, text: str) -> list[Span]:
        return [Span(m.start(), m.end(), "WORD", "fake_animals")
                for m in re.finditer(r"\b(" + "|".join(ANIMALS) + r")\b", text)]

    def detect_batch(self, texts):
        return [self.detect(t) for t in texts]


class AnimalFiller(CandidateFiller):
    """Proposes the animal words (Top-1: always "cat")."""

    name = "fake_animal_filler"

    def __init__(self, model=None, strategy="top1", k=10, seed=0, **options):
        super().__init__(strategy=strategy, k=k, seed=seed, **options)

    def propose_batch(self, texts, targets, k):
        return [[(w, 1.0 - i / 10) for i, w in enumerate(ANIMALS)][:k] for _ in texts]


@pytest.fixture(autouse=True)
def fake_plugins(monkeypatch):
    """The fakes are registered for this module's tests only (the registries are global)."""
    monkeypatch.setitem(maskers._entries, "fake_animals", AnimalMasker)
    monkeypatch.setitem(fillers._entries, "fake_animal_filler", AnimalFiller)


def sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"the {rng.choice(ANIMALS)} {rng.choice(VERBS)} the {rng.choice(ANIMALS)} in {rng.choice(PLACES)} ."
            for _ in range(n)]


LM = {"n_layer": 1, "n_embd": 32, "n_head": 2, "context": 32, "batch_size": 8, "pretrain_epochs": 2,
      "finetune_epochs": 6, "finetune_lr": 3e-3, "pretrain_lr": 3e-3, "warmup_steps": 2, "dropout": 0.0}


def write_experiment(tmp: Path, methods: list[dict]) -> Path:
    import yaml

    (tmp / "train.txt").write_text("\n".join(sentences(60, 1)) + "\n")
    (tmp / "test.txt").write_text("\n".join(sentences(20, 2)) + "\n")
    (tmp / "generic.txt").write_text("\n".join(sentences(40, 3)) + "\n")
    exp = {"name": "tiny", "train": {"path": str(tmp / "train.txt")}, "test": {"path": str(tmp / "test.txt")},
           "pretrain": {"path": str(tmp / "generic.txt")}, "techniques": ["fake_animals"],
           "baselines": ["oracle", "baseline0", "baseline1"], "methods": methods, "lm": LM,
           "cache": str(tmp / "cache")}
    p = tmp / "exp.yaml"
    p.write_text(yaml.safe_dump(exp))
    return p


TOPK = {"name": "fake_topk", "filler": "fake_animal_filler", "strategy": "topk", "k": 6}
TOP1 = {"name": "fake_top1", "filler": "fake_animal_filler", "strategy": "top1"}


def read_rows(out: Path) -> list[dict]:
    with (out / "results.csv").open() as f:
        return list(csv.DictReader(f))


def test_end_to_end_and_cache(tmp_path, capsys):
    exp = write_experiment(tmp_path, [TOPK])
    out = tmp_path / "out"
    assert veil(["experiment", "run", str(exp), "--out", str(out), "--no-progress"]) == 0
    for f in ("results.csv", "results.md", "report.html"):
        assert (out / f).is_file() and (out / f).stat().st_size > 0
    rows = read_rows(out)
    cells = {(r["technique"], r["method"]): r for r in rows}
    assert set(cells) == {("", "oracle"), ("fake_animals", "baseline0"), ("fake_animals", "baseline1"),
                          ("fake_animals", "fake_topk")}
    ppl = {k[1]: float(v["perplexity"]) for k, v in cells.items()}
    assert math.isfinite(ppl["oracle"]) and ppl["oracle"] < ppl["baseline0"]
    assert ppl["fake_topk"] < ppl["baseline0"]  # filled with real animal words
    share = float(cells[("fake_animals", "baseline0")]["masked_share"])
    assert 0.2 < share < 0.4  # 2 of 8 words (the full stop is not a word)
    md = (out / "results.md").read_text()
    assert "| fake_topk |" in md and "share of masked tokens" in md and "%" in md
    table = [l for l in md.splitlines() if l.startswith("| ") and "method" not in l][:4]
    assert all(not re.search(r"\|\s*\|", l) for l in table)  # every cell filled
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "<table>" in html
    capsys.readouterr()

    # second run: nothing recomputed
    assert veil(["experiment", "run", str(exp), "--out", str(out), "--no-progress"]) == 0
    assert "stages computed: 0," in capsys.readouterr().out
    assert read_rows(out) == [{**r, "computed": "0"} for r in rows]

    # adding a method computes only its fill, LM fine-tuning and evaluation
    exp = write_experiment(tmp_path, [TOPK, TOP1])
    assert veil(["experiment", "run", str(exp), "--out", str(out), "--no-progress"]) == 0
    assert "stages computed: 3," in capsys.readouterr().out
    rows2 = {r["method"]: r for r in read_rows(out)}
    assert rows2["fake_top1"]["computed"] == "3" and rows2["baseline0"]["computed"] == "0"


def test_interrupted_stage_leaves_no_entry(tmp_path):
    from veil.cache import StageCache

    cache = StageCache(tmp_path)

    def boom(tmp):
        (tmp / "half").write_text("x")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cache.run("s", "k", {}, boom)
    assert cache.meta("s", "k") is None
    d, meta = cache.run("s", "k", {"a": 1}, lambda tmp: (tmp / "ok").write_text("y") and {"n": 1})
    assert (d / "ok").is_file() and not (d / "half").exists() and meta["info"] == {"n": 1}
    assert cache.computed == ["s/k"]
    # work that resumes what interrupted runs began (a fill) reports the time they spent as well
    _, meta = cache.run("s", "k2", {}, lambda tmp: {"seconds_earlier": 1000.0})
    assert 1000.0 <= meta["seconds"] < 1010.0


def test_folders_of_killed_runs_are_removed_but_not_those_of_live_ones(tmp_path):
    import os
    import subprocess
    import sys

    from veil.cache import StageCache

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    (tmp_path / "s" / f"k.tmp-{dead_pid}").mkdir(parents=True)
    live = tmp_path / "s" / f"k.tmp-{os.getppid()}"  # a running process: maybe a concurrent run
    live.mkdir()
    StageCache(tmp_path).run("s", "k", {}, lambda tmp: {})
    assert not (tmp_path / "s" / f"k.tmp-{dead_pid}").exists() and live.is_dir()


def test_bad_experiment_files(tmp_path):
    from veil.experiment.spec import load_spec

    exp = write_experiment(tmp_path, [TOPK])
    bad = tmp_path / "bad.yaml"
    bad.write_text(exp.read_text().replace("fake_animals", "no_such_masker"))
    with pytest.raises(VeilError, match="unknown masker"):
        load_spec(bad)
    bad.write_text(exp.read_text().replace("fake_animal_filler", "nope"))
    with pytest.raises(VeilError, match="unknown filler"):
        load_spec(bad)
    bad.write_text("train: [unclosed")
    with pytest.raises(VeilError, match="YAML"):
        load_spec(bad)
    assert veil(["experiment", "run", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "o")]) == 2


@pytest.mark.parametrize("name", ["switchboard", "ptb", "demo", "demo_gpt2", "switchboard_smollm2", "ptb_smollm2"])
def test_shipped_experiment_files_parse(name):
    from veil.experiment.spec import load_spec
    from veil.io.paths import ROOT

    path = ROOT / "experiments" / f"{name}.yaml"
    if not path.is_file():
        pytest.skip(f"{path} not written")
    try:
        spec = load_spec(path)
    except VeilError as e:
        if "does not exist" in str(e):
            pytest.skip(str(e))
        raise
    assert {"oracle", "baseline0", "baseline1"} <= set(spec.methods)
    assert set(spec.techniques) == {"allow_list", "vocab_threshold", "entity_tagger"}
    from veil.downstream.lm import LMSettings

    LMSettings.from_dict(spec.lm)  # the LM settings are valid too


def test_shared_rankings_are_exact_and_save_model_calls():
    from veil.experiment.rankings import share_rankings

    calls = []

    class Counting(AnimalFiller):
        def propose_batch(self, texts, targets, k):
            calls.append(len(texts))
            return [[(w, -i) for i, w in enumerate(ANIMALS[:max(1, len(t) % 5)])][:k] for t in texts]

    memo: dict = {}
    a, b = Counting(strategy="top1"), Counting(strategy="topk", k=6)
    share_rankings(a, memo)
    share_rankings(b, memo)
    texts, targets = ["x [MASK]", "yy [MASK] z", "a b [MASK]"], [(2, 8), (3, 9), (4, 10)]
    direct = Counting().propose_batch(texts, targets, 6)
    calls.clear()
    assert a.rankings.propose(a.propose_batch, texts, targets, 1) == [r[:1] for r in direct]
    assert b.rankings.propose(b.propose_batch, texts, targets, 6) == direct  # more candidates than stored: asked again
    assert a.rankings.propose(a.propose_batch, texts, targets, 3) == [r[:3] for r in direct]  # served from the memo
    assert b.rankings.propose(b.propose_batch, texts[:1], targets[:1], 6) == direct[:1]
    assert calls == [3, 3]
    calls.clear()
    memo2: dict = {}
    c, d = Counting(strategy="top1"), Counting(strategy="topk", k=6)
    share_rankings(c, memo2, request=6)
    share_rankings(d, memo2, request=6)
    assert c.rankings.propose(c.propose_batch, texts, targets, 1) == [r[:1] for r in direct]  # asks for 6, returns 1
    assert d.rankings.propose(d.propose_batch, texts, targets, 6) == direct and calls == [3]


def test_topk_after_top1_needs_no_model_call_through_the_fill_loop():
    from veil.experiment.rankings import ranking_request, share_rankings
    from veil.types import MaskedDocument, Placeholder

    calls = []

    class Counting(AnimalFiller):
        def propose_batch(self, texts, targets, k):
            calls.append(k)
            return super().propose_batch(texts, targets, k)

    docs = [MaskedDocument(f"d{i}", f"the {w} [MASK] here", (Placeholder(4 + len(w) + 1, 4 + len(w) + 7, "WORD",
                                                                       "MASK#0", "fake_animals"),), "mask")
            for i, w in enumerate(VERBS)]
    memo: dict = {}
    top1, topk = Counting(strategy="top1"), Counting(strategy="topk", k=6)
    for f in (top1, topk):
        share_rankings(f, memo, request=ranking_request(f, 6))
    a = [f.text for f in top1.fill(docs)]
    n = len(calls)
    b = [f.text for f in topk.fill(docs)]
    assert n >= 1 and len(calls) == n  # Top-K reused every ranking
    assert all("[MASK]" not in t for t in a + b) and a == [d.text.replace("[MASK]", "cat") for d in docs]


def test_keep_reaches_the_mask_stage(tmp_path):
    """``keep: [...]`` in the experiment file: those tokens stay in every masked corpus."""
    import yaml

    from veil.experiment.spec import load_spec

    exp = write_experiment(tmp_path, [TOP1])
    raw = yaml.safe_load(exp.read_text())
    raw["keep"] = ["cat"]
    exp.write_text(yaml.safe_dump(raw))
    assert load_spec(exp).keep == ["cat"]
    out = tmp_path / "out"
    assert veil(["experiment", "run", str(exp), "--out", str(out), "--no-progress", "--method", "baseline0"]) == 0
    masked = list((tmp_path / "cache" / "mask").glob("*/masked.jsonl"))
    assert masked and all("[MASK]" in m.read_text() and " cat " in m.read_text() for m in masked)
    raw["keep"] = [""]
    exp.write_text(yaml.safe_dump(raw))
    with pytest.raises(VeilError, match="keep"):
        load_spec(exp)


def test_rankings_persist_so_a_method_added_later_reuses_them(tmp_path, monkeypatch):
    """Top-1 in one run, Top-K and sample added in a later run (a new process): every ranking stored
    by the first run (the first marker of every masked text) is served from disk, not asked again."""
    shown: list[str] = []

    class Counting(AnimalFiller):
        def propose_batch(self, texts, targets, k):
            shown.extend(texts)
            return super().propose_batch(texts, targets, k)

    monkeypatch.setitem(fillers._entries, "fake_animal_filler", Counting)
    exp = write_experiment(tmp_path, [TOP1])
    assert veil(["experiment", "run", str(exp), "--out", str(tmp_path / "a"), "--no-progress"]) == 0
    assert list((tmp_path / "cache" / "rankings").glob("*.jsonl.gz"))
    first_run = set(shown)
    masked_texts = {t for t in first_run if t.count("[MASK]") == 2}
    assert len(masked_texts) > 10
    shown.clear()
    sample = {"name": "fake_sample", "filler": "fake_animal_filler", "strategy": "sample", "k": 6}
    exp = write_experiment(tmp_path, [TOP1, TOPK, sample])
    assert veil(["experiment", "run", str(exp), "--out", str(tmp_path / "b"), "--no-progress"]) == 0
    assert shown  # later markers follow other fills, so some texts are new
    assert not set(shown) & first_run  # but nothing the first run ranked was asked again
    rows = {r["method"]: r for r in read_rows(tmp_path / "b")}
    assert {"fake_top1", "fake_topk", "fake_sample"} <= set(rows)


def test_stored_ranking_lines_round_trip_and_old_lines_still_load():
    """A ``rankings/*.jsonl.gz`` line gives back the memo entry it was written from (through JSON),
    and a line from before exclude lists (no last field) loads under the empty exclude digest."""
    import json

    from veil.experiment.rankings import ranking_entry, ranking_key, ranking_record

    key, value = ranking_key("a [MASK] cat", 2, 8, "d1g3st"), (12, [("black", -0.5), ("fat", -1.25)])
    assert ranking_entry(json.loads(json.dumps(ranking_record(key, value)))) == (key, value)
    old = ["a [MASK] cat", 2, 8, 12, [["black", -0.5]]]
    assert ranking_entry(old) == (ranking_key("a [MASK] cat", 2, 8), (12, [("black", -0.5)]))


def test_several_lm_seeds_give_mean_and_spread(tmp_path):
    """``lm.seeds: 2``: every variant is fine-tuned twice; the table shows the mean ± the spread, and the
    first seed's runs are the single-seed runs (reused from the cache, not recomputed)."""
    exp = write_experiment(tmp_path, [TOP1])
    assert veil(["experiment", "run", str(exp), "--out", str(tmp_path / "one"), "--no-progress"]) == 0
    one = {r["method"]: r for r in read_rows(tmp_path / "one")}
    assert veil(["experiment", "run", str(exp), "--out", str(tmp_path / "two"), "--no-progress",
                 "--set", "lm.seeds=2"]) == 0
    two = {r["method"]: r for r in read_rows(tmp_path / "two")}
    for m, r in two.items():
        seeds = [float(x) for x in r["perplexity_seeds"].split()]
        assert r["seeds"] == "2" and len(seeds) == 2 and seeds[0] != seeds[1]
        assert abs(float(one[m]["perplexity"]) - seeds[0]) < 1e-3  # seed 0 = the single-seed run
        assert math.isclose(float(r["perplexity"]), sum(seeds) / 2, rel_tol=1e-6)
        assert float(r["perplexity_std"]) > 0
    assert two["fake_top1"]["gap_recovered_std"] != "" and two["baseline0"]["gap_recovered_std"] == ""
    md = (tmp_path / "two" / "results.md").read_text()
    assert "±" in md and "mean over 2 LM fine-tuning seeds" in md
    with pytest.raises(VeilError, match="positive"):
        from veil.downstream.lm import LMSettings

        LMSettings.from_dict({"seeds": 0})


def test_pretrained_baseline_is_the_unadapted_lm(tmp_path):
    """``pretrained``: the pre-trained LM evaluated without fine-tuning, one value for every technique;
    adapting on the in-domain text (Oracle) must beat it on this fixture."""
    import yaml

    exp = write_experiment(tmp_path, [TOP1])
    raw = yaml.safe_load(exp.read_text())
    raw["baselines"] = ["pretrained"] + raw["baselines"]
    exp.write_text(yaml.safe_dump(raw))
    out = tmp_path / "out"
    assert veil(["experiment", "run", str(exp), "--out", str(out), "--no-progress"]) == 0
    rows = {(r["technique"], r["method"]): r for r in read_rows(out)}
    pre = rows[("", "pretrained")]
    assert pre["gap_recovered"] == "" and pre["lm_finetune_s"] in ("0.0", "0")
    assert float(rows[("", "oracle")]["perplexity"]) < float(pre["perplexity"])
    line = next(l for l in (out / "results.md").read_text().splitlines() if l.startswith("| pretrained |"))
    assert re.fullmatch(r"\| pretrained \| [\d.]+ \|", line)


def test_gap_by_word_class(tmp_path, capsys):
    """``veil experiment gap``: the per-class NLLs add up to the run's perplexity (checked inside), and on
    this fixture, where Baseline0 never sees an animal, most of its gap lies on the animal words. The
    training text here never has an owl, so the owls of the test set are the masked words not seen in
    training; with a one-word vocabulary ("the") every other word is outside it."""
    exp = write_experiment(tmp_path, [TOPK])
    train = tmp_path / "train.txt"
    train.write_text("".join(line for line in train.read_text().splitlines(keepends=True) if "owl" not in line))
    test_words = (tmp_path / "test.txt").read_text().split()
    out = tmp_path / "out"
    assert veil(["experiment", "run", str(exp), "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    assert veil(["experiment", "gap", str(exp), "--out", str(out), "--word-vocab", "1"]) == 0
    printed = capsys.readouterr().out
    assert "Where the Baseline0 - Oracle gap lies: fake_animals" in printed
    assert "occur in the original training text" in printed and "gap without words outside vocabulary" in printed
    import json

    r = json.loads((out / "gap_by_word_fake_animals.json").read_text())
    w = r["words"]
    assert w["masked-type"] == 40 and w["other"] == 20  # 2 animals per sentence, 20 sentences
    seen, unseen = w["masked-type, seen in train"], w["masked-type, not seen in train"]
    assert unseen == test_words.count("owl") > 0 and seen + unseen == 40
    n_words = sum(1 for t in test_words if t != ".")
    assert w["outside vocabulary"] == n_words - test_words.count("the") and r["word_vocab"] == 1
    rows = {x["method"]: x for x in r["rows"]}
    assert set(rows) == {"oracle", "baseline0", "baseline1", "fake_topk"}
    for x in rows.values():  # the split adds up to its class
        split = x["nll_masked-type, seen in train"] * seen + x["nll_masked-type, not seen in train"] * unseen
        assert math.isclose(split, x["nll_masked-type"] * 40, rel_tol=1e-9)
    assert math.isclose(rows["oracle"]["gap"], 1.0) and math.isclose(rows["baseline0"]["gap"], 0.0, abs_tol=1e-9)
    assert math.isclose(rows["oracle"]["gap_in vocabulary"], 1.0)
    assert r["gap_share"]["masked-type"] > 0.5
    assert math.isclose(r["gap_share"]["masked-type, seen in train"] + r["gap_share"]["masked-type, not seen in train"],
                        r["gap_share"]["masked-type"], rel_tol=1e-9)
    assert rows["fake_topk"]["gap_masked-type"] > 0.5  # filled with real animal words
    assert veil(["experiment", "gap", str(exp), "--out", str(out), "--technique", "allow_list"]) != 0
    assert "'allow_list' is not in" in capsys.readouterr().err
    assert veil(["experiment", "gap", str(exp), "--out", str(out), "--word-vocab", "0"]) != 0
    assert "--word-vocab must be a positive number" in capsys.readouterr().err


def test_no_stage_reaches_back_into_the_runner():
    """The runner hands every stage the values it needs (the corpora, the Oracle LM, the next stage's input):
    no module of the experiment's stages imports the runner."""
    import ast

    import veil

    root = Path(veil.__file__).parent / "experiment"
    for f in sorted(root.glob("*.py")):
        if f.name in ("runner.py", "__init__.py"):
            continue
        imported = {n.module for n in ast.walk(ast.parse(f.read_text(encoding="utf-8")))
                    if isinstance(n, ast.ImportFrom) and n.module}
        assert "veil.experiment.runner" not in imported, f.name


def test_method_restricted_to_some_techniques(tmp_path, monkeypatch, capsys):
    """``techniques: [T]`` on a method: rows in T's column only, a blank cell elsewhere, and the same fill
    cache entry as the unrestricted method with the same settings (the restriction is not in the key)."""
    import yaml

    from veil.experiment.spec import load_spec

    monkeypatch.setitem(maskers._entries, "fake_animals_too", AnimalMasker)

    def experiment(methods: list[dict]) -> Path:
        p = write_experiment(tmp_path, methods)
        raw = yaml.safe_load(p.read_text())
        raw["techniques"] = ["fake_animals", "fake_animals_too"]
        raw["baselines"] = ["oracle", "baseline0"]
        p.write_text(yaml.safe_dump(raw))
        return p

    exp = experiment([{**TOP1, "techniques": ["fake_animals_too"]}])
    out = tmp_path / "out"
    assert veil(["experiment", "run", str(exp), "--out", str(out), "--no-progress"]) == 0
    cells = {(r["technique"], r["method"]) for r in read_rows(out)}
    assert ("fake_animals_too", "fake_top1") in cells and ("fake_animals", "fake_top1") not in cells
    assert ("fake_animals", "baseline0") in cells
    row = next(l for l in (out / "results.md").read_text().splitlines() if l.startswith("| fake_top1 |"))
    assert re.match(r"\| fake_top1 \| +\| \S", row)  # blank under fake_animals, a value under fake_animals_too
    capsys.readouterr()
    # unrestricted: only the fake_animals column's fill is new (the fake_animals_too fill is reused; the two
    # maskers mask alike, so the fake_animals fill's text, LM and evaluation are those of fake_animals_too)
    assert veil(["experiment", "run", str(experiment([TOP1])), "--out", str(out), "--no-progress"]) == 0
    assert "stages computed: 1," in capsys.readouterr().out
    assert ("fake_animals", "fake_top1") in {(r["technique"], r["method"]) for r in read_rows(out)}

    for bad, match in (("no_such", "not in the file's techniques"), ([], "non-empty list")):
        p = experiment([{**TOP1, "techniques": bad}])
        with pytest.raises(VeilError, match=match):
            load_spec(p)
    p = experiment([TOP1])
    raw = yaml.safe_load(p.read_text())
    raw["baselines"] = [{"name": "oracle", "techniques": ["fake_animals"]}]
    p.write_text(yaml.safe_dump(raw))
    with pytest.raises(VeilError, match="masked or filled variants only"):
        load_spec(p)
