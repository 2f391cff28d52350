"""Experiment stage: the grid's rows, each one downstream LM adapted on one corpus variant and measured.

The runner (:mod:`veil.experiment.runner`) owns the stages and their cache; a :class:`Grid` asks it
for them in the order of the experiment file and writes a row per variant: the Oracle on the
original text, the pre-trained LM unadapted, and each technique's masked (Baseline 0 / 1) and filled
variants, with the mean perplexity over ``lm.seeds``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
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


class Grid:
    """The rows of one run: each is one downstream LM adapted on one corpus variant and measured."""

    def __init__(self, runner: Any, train_docs: list[Any], test: list[str], test_h: str,
                 pretrained: TrainedLM, task: Any) -> None:
        self.r, self.test, self.test_h, self.pretrained, self.task = runner, test, test_h, pretrained, task
        self.rows: list[dict[str, Any]] = []
        self.train_docs = train_docs
        self.base = {"train_docs": len(train_docs), "train_words": sum(count_words(d.text) for d in train_docs),
                     "test_words": sum(count_words(t) for t in test), "pretrain_s": pretrained.meta["seconds"]}

    def _add(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        self.r._write(self.rows)

    def lm_row(self, tech: str, v: Variant, texts: list[str], extra: dict[str, Any],
               records: Path | None = None) -> None:
        """Adapt the LM on ``texts`` (once per ``lm.seeds``) and measure its perplexity (the mean over seeds)."""
        r = self.r
        before = len(r.cache.computed)
        label = f"{tech or 'oracle'}/{v.name}"
        ppls, ft_s, ev_s, lm_dir = [], 0.0, 0.0, ""
        for i in range(r.lm.seeds):  # the first run's key is the single-seed key: seeds only add runs
            seed = r.lm.seed + i
            tag = label if i == 0 else f"{label} (seed {seed})"
            trained = r.lm_finetune(self.pretrained.dir, self.pretrained.key, texts, v.mask_loss_weight, tag,
                                    seed=seed)
            # the first seed's model is the WER's: it scores the n-best lists while it is in memory
            ev = r.evaluate(trained, self.test, self.test_h, tag,
                            asr=(f"lm_finetune/{trained.key}", v.data == "original") if i == 0 else None)
            lm_dir = lm_dir or f"lm_finetune/{trained.key}"  # the first seed's model (veil experiment gap)
            ppls.append(ev["info"]["perplexity"])
            ft_s, ev_s = ft_s + trained.meta["seconds"], ev_s + ev["seconds"]
        row = {**self.base, "technique": tech, "method": v.name, "perplexity": sum(ppls) / len(ppls),
               "perplexity_seeds": ppls, "lm_finetune_s": ft_s, "evaluate_s": ev_s, "lm_dir": lm_dir, **extra}
        if self.task is not None:  # the task classifier on the same training text
            row.update(self.task.columns(label, v, texts, records))
        row["computed"] = len(r.cache.computed) - before + extra.get("computed", 0)
        self._add(row)

    def pretrained_row(self, v: Variant) -> None:
        """The pre-trained LM as it is, not adapted: no fine-tuning stage."""
        r, pre = self.r, self.pretrained
        before = len(r.cache.computed)
        ev = r.evaluate(pre, self.test, self.test_h, v.name, asr=(f"pretrain/{pre.key}", False))
        self._add({**self.base, "technique": "", "method": v.name, "perplexity": ev["info"]["perplexity"],
                   "perplexity_seeds": [ev["info"]["perplexity"]], "lm_finetune_s": 0.0,
                   "evaluate_s": ev["seconds"], "masked_share": 0.0, "lm_dir": f"pretrain/{pre.key}",
                   "computed": len(r.cache.computed) - before})

    def technique_rows(self, tech: str, opts: dict[str, Any], train_h: str) -> None:
        """Mask the training corpus with ``tech``, then a row for every masked (baseline) and filled variant."""
        r = self.r
        before = len(r.cache.computed)
        mdir, mmeta = r.mask(tech, opts, self.train_docs, train_h)
        masked = mdir / "masked.jsonl"
        mask_info = {"masked_share": mmeta["info"]["masked_share"], "mask_s": mmeta["seconds"]}
        mask_computed = len(r.cache.computed) - before  # counted once, in the technique's first row
        r._masked_files[tech] = masked
        masked_texts = None
        for v in r.variants:
            if v.data in ("original", "none"):
                continue
            if v.data == "masked":
                if masked_texts is None:
                    masked_texts = [lm_text_of_masked(t) for t in read_texts(masked)]
                self.lm_row(tech, v, masked_texts, {**mask_info, "computed": mask_computed}, masked)
            else:
                b = len(r.cache.computed)
                fdir, fmeta = r.fill(v, tech, mdir, mmeta["key"])
                filled = fdir / "filled.jsonl"
                r._filled_files[(tech, v.name)] = filled
                self.lm_row(tech, v, read_texts(filled),
                            {**mask_info, "fill_s": fmeta["seconds"], "filler_ft_s": fmeta.get("filler_ft_s", 0.0),
                             "computed": mask_computed + len(r.cache.computed) - b}, filled)
            mask_computed = 0
