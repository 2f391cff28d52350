"""Adapting the detector to reviewed documents: labels from a review, term lists, the split, a tiny end-to-end run."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from veil.errors import VeilError
from veil.mask.gold import GoldDocument, GoldSpan, read_sgd
from veil.mask.neural.adapt import AdaptConfig, adapt, apply_terms, auto_steps, reviewed_examples, split_reviewed
from veil.types import Document

TINY = {"vocab_size": 30522, "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2,
        "max_position_embeddings": 130}


def _gold(text: str, *spans: tuple[str, str, str], doc_id: str = "d", group: str | None = None) -> GoldDocument:
    out = []
    for surface, label, cls in spans:
        s = text.index(surface)
        out.append(GoldSpan(s, s + len(surface), label, cls))
    return GoldDocument(Document(id=doc_id, text=text, group=group), out)


def test_reviewed_examples_label_kept_spans_and_leave_optional_ones_without_loss():
    gd = _gold("I'm Dana, a Margherita from Luigi's and a Coke", ("Dana", "PERSON_NAME", "DIRECT"),
               ("Luigi's", "ORGANIZATION", "OPTIONAL"), ("Coke", "NUMBER", "QUASI"))
    (ex,) = reviewed_examples([gd])
    assert [(ex.text[s:e], k) for s, e, k in ex.spans] == [("Dana", "PER")]  # review labels are veil's
    # OPTIONAL: may be masked or not; NUMBER: the detector has three types for it: no loss either way
    assert sorted(ex.text[s:e] for s, e in ex.ignore) == ["Coke", "Luigi's"]
    assert ex.source == "reviewed" and "PER" in ex.known


@pytest.mark.parametrize("text, spans, add, exclude, expected", [
    # an excluded term masked alone becomes O; a longer span holding it stays
    ("a Margherita and Margherita Rossi", [(2, 12, "PER"), (17, 33, "PER")], {}, ["margherita"],
     [("Margherita Rossi", "PER")]),
    # an added term is labelled wherever it occurs, whole words only, any case
    ("ask Ruthie, not ruthiex; RUTHIE said", [], {"Ruthie": "PERSON_NAME"}, [], [("Ruthie", "PER"), ("RUTHIE", "PER")]),
    # an added term never overrides a span already there
    ("Ruthie Ng called", [(0, 9, "PER")], {"Ng called": "ORGANIZATION_NAME"}, [], [("Ruthie Ng", "PER")]),
    # a type the detector has no label for is not taught
    ("code 1234", [], {"1234": "NUMBER"}, [], []),
])
def test_apply_terms(text, spans, add, exclude, expected):
    out, _ = apply_terms(text, spans, [], add, exclude)
    assert [(text[s:e], k) for s, e, k in out] == expected


def test_excluded_term_is_taught_even_where_it_was_unsure():
    text = "one Diavola please"
    _, ignore = apply_terms(text, [], [(4, 11)], {}, ["Diavola"])
    assert ignore == []


def test_split_holds_out_whole_groups_only_where_they_can_choose_a_threshold():
    few = [_gold(f"my name is Ann {i}", ("Ann", "PERSON", "DIRECT"), doc_id=str(i)) for i in range(49)]
    assert split_reviewed(few, 0.2, 0) == (few, [])  # under 50 documents: every one is trained on
    many = [_gold(f"my name is Ann {i}", ("Ann", "PERSON", "DIRECT"), doc_id=str(i), group=f"call{i // 3}")
            for i in range(150)]
    train, held = split_reviewed(many, 0.2, 0)
    assert len(train) + len(held) == 150 and 27 <= len(held) <= 33
    assert not {g.doc.group for g in train} & {g.doc.group for g in held}
    assert split_reviewed(many, 0.2, 0) == (train, held)  # seeded
    # the held-out part would hold under 20 personal mentions: no threshold is chosen on it
    sparse = [_gold(f"text {i}", *([("text", "PERSON", "DIRECT")] if i % 10 == 0 else []), doc_id=str(i))
              for i in range(100)]
    assert split_reviewed(sparse, 0.2, 0) == (sparse, [])


def test_auto_steps_scale_with_the_review_within_bounds():
    config = AdaptConfig()
    assert auto_steps(1, config) == 60 and auto_steps(10_000, config) == 300
    assert 60 < auto_steps(30, config) < 300


def test_read_sgd_types_slots_by_the_table_and_filters_families(tmp_path: Path):
    (tmp_path / "slot_classes.json").write_text(json.dumps({"recipient": ["PERSON", "DIRECT"], "rating": None}))
    rows = [{"id": "1_0-0", "dialogue": "1_0", "services": ["Banks_1"], "speaker": "USER",
             "text": "Send it to Ana, rated 4", "slots": [{"start": 11, "end": 14, "slot": "recipient"},
                                                       {"start": 22, "end": 23, "slot": "rating"}]},
            {"id": "1_1-0", "dialogue": "1_1", "services": ["Music_2"], "speaker": "USER", "text": "play it",
             "slots": []}]
    path = tmp_path / "dev.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    docs = read_sgd(path)
    assert [(g.doc.text[s.start:s.end], s.label, s.identifier_type) for g in docs for s in g.spans] == \
        [("Ana", "PERSON", "DIRECT")]
    assert docs[0].doc.group == "1_0"
    assert [g.doc.id for g in read_sgd(path, services="Banks")] == ["1_0-0"]


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory) -> Path:
    """A 2-layer config-built detector, trained for a few steps (its weights saved with their embeddings)."""
    import torch

    from veil.mask.neural.data import TYPES, Example
    from veil.mask.neural.train import DetectorTrainConfig, build_model, train

    folder = tmp_path_factory.mktemp("base") / "det"
    torch.manual_seed(0)
    examples = [Example(f"my name is {n}", ((11, 11 + len(n), "PER"),), frozenset(TYPES), "toy")
                for n in ("john", "mary")]
    train(DetectorTrainConfig(layers=2, steps=2, batch_size=2, dialogues=2, things=0, max_length=32, threads=1,
                              calibrate=False),
          folder, None, model=build_model(2, config_overrides=TINY), extra=examples)
    return folder


def _orders(times: int = 3) -> list[GoldDocument]:
    docs = []
    for i, (name, dish) in enumerate([("Tamsin", "Margherita"), ("Declan", "Diavola"), ("Priya", "Capricciosa"),
                                      ("Oskar", "Vesuvio")] * times):
        docs.append(_gold(f"A {dish} for {name}, please.", (name, "PERSON", "DIRECT"), doc_id=f"o{i}",
                          group=f"c{i}"))
    return docs


def test_tiny_adapt_writes_a_detector_that_records_its_review_and_masks(tiny_base: Path, tmp_path: Path, caplog):
    from veil.mask.neural.tagger import NeuralTaggerMasker, load_detector

    config = AdaptConfig(steps=6, batch_size=4, dialogues=3, threads=1, lr=1e-3, seed=3, holdout=0.5)
    record = adapt(_orders(15), tmp_path / "adapted", base=tiny_base, config=config,
                   add_terms={"Ruthie": "PERSON_NAME"}, exclude=["Vesuvio"],
                   source={"path": "gold.jsonl", "sha256": "ab" * 32}, progress=False)
    meta = json.loads((tmp_path / "adapted" / "detector.json").read_text())
    assert meta["adapted"] == record
    assert record["file"]["sha256"] == "ab" * 32 and record["documents"] == 60
    assert record["trained_on"] + record["held_out"] == 60 and record["held_out"] >= 20
    assert record["calibration"]["documents"] == record["held_out"]
    assert record["steps"] == 6 and record["config"]["seed"] == 3
    assert record["added_terms"] == 1 and record["excluded_terms"] == 1
    assert len(record["base"]["weights_sha256"]) == 64 and record["base"]["path"] == str(tiny_base)
    assert record["loss_last"] < record["loss_first"]
    assert set(meta["thresholds"]) == set(record["calibration"]["thresholds"])
    load_detector.cache_clear()
    with caplog.at_level(logging.INFO, logger="veil.mask.neural.tagger"):
        masker = NeuralTaggerMasker(model=str(tmp_path / "adapted"), precision="int8", threads=1)
    assert any("adapted on 60 reviewed documents of gold.jsonl" in r.getMessage() for r in caplog.records)
    assert isinstance(masker.detect("A Margherita for Tamsin."), list)
    load_detector.cache_clear()


def test_adapt_is_seeded(tiny_base: Path, tmp_path: Path):
    from safetensors.numpy import load_file

    config = AdaptConfig(steps=3, batch_size=4, dialogues=2, threads=1, holdout=0.0)
    docs = _orders()[:4]
    for out in ("a", "b"):
        adapt(docs, tmp_path / out, base=tiny_base, config=config, progress=False)
    a, b = (load_file(str(tmp_path / o / "detector.safetensors")) for o in ("a", "b"))
    assert all((a[k] == b[k]).all() for k in a)


def test_interpolate_saves_the_weights_part_way_from_the_base(tiny_base: Path, tmp_path: Path):
    """``interpolate=0.5`` (WiSE-FT) keeps half of what adapting moved: the same run's weights at 1.0, halved
    towards the base (fp16 as saved)."""
    import numpy as np
    from safetensors.numpy import load_file

    docs = _orders()[:4]
    for out, share in (("full", 1.0), ("half", 0.5)):
        config = AdaptConfig(steps=3, batch_size=4, dialogues=2, threads=1, holdout=0.0, lr=1e-2, interpolate=share)
        adapt(docs, tmp_path / out, base=tiny_base, config=config, progress=False)
    base, full, half = (load_file(str(folder / "detector.safetensors")) for folder in (tiny_base, tmp_path / "full",
                                                                                       tmp_path / "half"))
    moved = [k for k in full if k in base and not np.array_equal(full[k], base[k])]
    assert moved
    for k in moved:
        b, f, h = (x[k].astype(np.float32) for x in (base, full, half))
        assert np.allclose(h, b + 0.5 * (f - b), atol=2e-3, rtol=1e-2), k
    with pytest.raises(VeilError, match="interpolate must be in"):
        adapt(docs, tmp_path / "bad", base=tiny_base, config=AdaptConfig(interpolate=0.0), progress=False)


def test_cli_adapt_refuses_a_folder_in_use_and_reads_the_review(tiny_base: Path, tmp_path: Path, capsys):
    from veil.cli import main

    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps({"id": f"c{i}-1", "text": f"A Margherita for {n}.", "spans": [
        {"start": 17, "end": 17 + len(n), "label": "PERSON_NAME", "identifier_type": "DIRECT"}]}) + "\n"
        for i, n in enumerate(["Tamsin", "Declan", "Priya"])))
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("keep me")
    assert main(["adapt", str(gold), "-o", str(busy), "-q"]) == 2
    assert (busy / "x").read_text() == "keep me" and "not empty" in capsys.readouterr().err
    out = tmp_path / "det"
    assert main(["adapt", str(gold), "-o", str(out), "--base", str(tiny_base), "--steps", "2", "--dialogues", "2",
                 "--threads", "1", "--seed", "5", "-q"]) == 0
    meta = json.loads((out / "detector.json").read_text())["adapted"]
    import hashlib

    assert meta["file"] == {"path": "gold.jsonl", "sha256": hashlib.sha256(gold.read_bytes()).hexdigest(),
                            "format": "review"}
    assert meta["config"]["seed"] == 5 and meta["spans"] == 3
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".det.")]  # no temporary folder left
