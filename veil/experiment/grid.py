"""Experiment stage: the values the grid's stages hand on (a trained LM, a stage's texts, what every row shares).

The runner (:mod:`veil.experiment.runner`) calls the stages (:mod:`veil.experiment.stages`) and
builds a row per variant from what they return: the Oracle on the original text, the pre-trained LM
unadapted, and each technique's masked (Baseline 0 / 1) and filled variants.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veil.experiment.spec import Variant
from veil.textutil import count_words


@dataclass
class TrainedLM:
    """A fine-tuned downstream LM: its stage folder and key, and the model itself while this process holds it.

    The ``lm_finetune`` stage hands the model it has just trained to the ``evaluate`` stage through
    this value (adapters merged, as :func:`veil.downstream.lm.load` would give it back), so a new LM
    is not written and read back before its perplexity; from the cache, only the folder is known.
    """

    dir: Path
    meta: dict[str, Any]
    model: Any = None
    vocab: Any = None

    @property
    def key(self) -> str:
        return self.meta["key"]

    def take(self) -> tuple[Any, Any]:
        """(model, vocab), from memory once (then released), else loaded from the folder."""
        from veil.downstream import lm

        model, vocab, self.model, self.vocab = self.model, self.vocab, None, None
        if model is None:
            return lm.load(self.dir)
        return (model.merge_and_unload() if hasattr(model, "merge_and_unload") else model), vocab


def read_texts(path: Path) -> list[str]:
    """The ``text`` of every record of a stage's JSONL output (``masked.jsonl``, ``filled.jsonl``), in order."""
    with path.open(encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def lm_text_of_masked(text: str) -> str:
    """Baseline text: every marker (``[MASK]``, ``[PERSON_NAME_1]``, ...) becomes the LM's ``[MASK]`` token."""
    from veil.markers import MARKER_RE, unescape

    return unescape(MARKER_RE.sub("[MASK]", text)) if "[" in text else text


@dataclass
class Grid:
    """What every row of one run shares, handed to each row's stages: the training documents, the test set,
    the pre-trained LM, the task and ASR evaluations (None without a ``task:`` / ``asr:`` section), and the rows so far."""

    train_docs: list[Any]
    test: list[str]
    test_h: str
    pretrained: TrainedLM
    task: Any = None
    asr: Any = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    masked_files: dict[str, Path] = field(default_factory=dict)  # technique -> masked corpus (the report's examples)
    filled_files: dict[tuple[str, str], Path] = field(default_factory=dict)  # (technique, method) -> filled corpus

    base: dict[str, Any] = field(init=False)  # the columns every row starts with

    def __post_init__(self) -> None:
        self.base = {"train_docs": len(self.train_docs), "train_words": sum(count_words(d.text) for d in self.train_docs),
                     "test_words": sum(count_words(t) for t in self.test), "pretrain_s": self.pretrained.meta["seconds"]}
