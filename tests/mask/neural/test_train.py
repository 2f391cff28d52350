"""The neural detector's training: labels per word piece, per-source loss, packing, a tiny end-to-end run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from veil.mask.neural.saved import load
from veil.mask.neural.train import (LABELS, DetectorTrainConfig, Window, build_model, label_pieces, masked_loss, pack,
                                    train)
from veil.mask.neural.data import TYPES, Example, tab_heldout
from veil.mask.gold import GoldDocument
from veil.types import Document

TINY = {"vocab_size": 30522, "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2,
        "max_position_embeddings": 130}


@pytest.mark.parametrize("offsets, spans, expected", [
    # "john smith called": pieces john | smith | called
    ([(0, 4), (5, 10), (11, 17)], [(0, 10, "PER")], ["B-PER", "I-PER", "O"]),
    # "gonzalez" as gon ##zal ##ez: every piece of the span is labelled
    ([(0, 3), (3, 6), (6, 8), (9, 11)], [(0, 8, "PER"), (9, 11, "LOC")], ["B-PER", "I-PER", "I-PER", "B-LOC"]),
    # two adjacent spans of one type stay two mentions
    ([(0, 1), (2, 3)], [(0, 1, "ID"), (2, 3, "ID")], ["B-ID", "B-ID"]),
    ([(0, 2)], [], ["O"]),
])
def test_label_pieces(offsets, spans, expected):
    assert [LABELS[i] for i in label_pieces(offsets, spans)] == expected


def test_masked_loss_ignores_types_the_source_does_not_annotate():
    import torch

    logits = torch.full((1, 1, len(LABELS)), -10.0)
    logits[0, 0, 0] = 0.0
    date = LABELS.index("B-DATE")
    logits[0, 0, date] = 10.0  # the model says "date" where the source says O
    labels = torch.tensor([[0]])
    knows_dates = torch.ones(1, len(LABELS), dtype=torch.bool)
    no_dates = knows_dates.clone()
    no_dates[0, [date, LABELS.index("I-DATE")]] = False
    assert masked_loss(logits, labels, knows_dates) > 5
    assert masked_loss(logits, labels, no_dates) < 0.01


def test_pack_joins_short_windows_of_one_source_only():
    a = Window([101, 1, 102], [-100, 0, -100], (0, 1))
    b = Window([101, 2, 3, 102], [-100, 1, 2, -100], (0, 1))
    c = Window([101, 4, 102], [-100, 0, -100], (0,))
    packed = pack([a, b, c], max_length=8)
    assert [w.ids for w in packed] == [[101, 1, 102, 2, 3, 102], [101, 4, 102]]
    assert packed[0].labels == [-100, 0, -100, 1, 2, -100]
    assert pack([a, b], max_length=5) == [a, b]


def test_held_out_splits():
    assert tab_heldout(GoldDocument(Document("a", "x", meta={"dataset_type": "dev"})))
    assert not tab_heldout(GoldDocument(Document("a", "x", meta={"dataset_type": "train"})))


def test_tiny_training_run_saves_a_detector_that_loads(tmp_path: Path):
    """A 2-layer config-built model learns "PER" on a toy set in a few steps, saves and loads back."""
    examples = [Example(f"my name is {n} and i called", ((11, 11 + len(n), "PER"),), frozenset(TYPES), "toy")
                for n in ("john", "mary", "peter", "anna")] * 4
    config = DetectorTrainConfig(layers=2, steps=30, batch_size=4, lr=3e-3, warmup=2, dialogues=4, things=0,
                                 log_every=10, max_length=32, threads=1)
    progress = tmp_path / "progress.log"
    import torch

    torch.manual_seed(0)  # the model's initial weights, whatever the process's random seed
    summary = train(config, tmp_path / "det", None, model=build_model(2, config_overrides=TINY), extra=examples,
                    progress=progress)
    assert summary["examples"] == {"toy": 16, "dialogue": 4}
    lines = progress.read_text().splitlines()
    assert len(lines) == 3 and lines[-1].startswith("step 30/30")
    first, last = (float(line.split("loss ")[1].split()[0]) for line in (lines[0], lines[-1]))
    assert last < first
    meta = json.loads((tmp_path / "det" / "detector.json").read_text())
    assert meta["labels"] == list(LABELS) and meta["config"]["steps"] == 30
    model, meta2 = load(tmp_path / "det")
    assert model.config.num_hidden_layers == 2 and meta2 == meta
    # the ONNX copy the masker runs is the same network: same logits, padding included
    import numpy as np
    import torch

    from veil.mask.neural.tagger import NeuralTaggerMasker

    masker = NeuralTaggerMasker(model=str(tmp_path / "det"), precision="fp32")
    ids = np.array([[101, 2026, 2171, 2003, 2198, 102], [101, 2026, 2171, 102, 0, 0]])
    mask = (np.arange(6) < np.array([[6], [4]])).astype(np.int64)
    with torch.inference_mode():
        expected = model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask)).logits.numpy()
    got = masker.logits(ids, mask)
    assert np.allclose(got[0], expected[0], atol=1e-4) and np.allclose(got[1, :4], expected[1, :4], atol=1e-4)
    # and its int8 copy stays near it
    int8 = NeuralTaggerMasker(model=str(tmp_path / "det"), precision="int8").logits(ids, mask)
    assert np.abs(int8[0] - expected[0]).max() < 0.1


def test_load_refuses_a_folder_without_a_detector(tmp_path: Path):
    from veil.errors import VeilError

    with pytest.raises(VeilError, match="no trained detector"):
        load(tmp_path)


def test_the_shipped_detector_is_what_the_defaults_train():
    """`veil train-detector --data DATA -o DIR` with no other flag rebuilds the shipped weights: their recorded
    settings are DetectorTrainConfig's defaults (but the machine's thread count and log interval), and their
    thresholds were calibrated with the F-beta the calibration uses now."""
    from dataclasses import asdict

    from veil.mask.neural.saved import PACKAGED_DIR
    from veil.mask.neural.train import CALIBRATION_BETA

    meta = json.loads((PACKAGED_DIR / "detector.json").read_text(encoding="utf-8"))
    machine = {"threads", "log_every"}
    defaults = {k: v for k, v in asdict(DetectorTrainConfig()).items() if k not in machine}
    assert {k: v for k, v in meta["config"].items() if k not in machine} == defaults
    assert meta["calibration"]["beta"] == CALIBRATION_BETA and meta["thresholds"] == meta["calibration"]["thresholds"]
