"""Task-evaluation stage: one classifier per corpus variant (Oracle, Baseline0, each fill), cached like the LM stages.

The runner calls :meth:`TaskStage.columns` for every row whose variant has training text of its
own: ``oracle`` (the original utterances), ``baseline0`` (markers as the text ``[MASK]``) and every
fill method. ``pretrained`` has no training text and ``baseline1`` differs from ``baseline0`` only
in the downstream LM's loss weight on ``[MASK]`` targets, which a classifier does not have, so their
task cells stay empty. Every classifier is scored on the experiment's untouched test utterances.

Cache: ``task/KEY``, KEY the hash of the training texts, their ids and labels, the test set, the
task settings and the seed; the entry keeps the scores and the test predictions (one tag a line).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Sequence

from veil.errors import VeilError
from veil.numeric import sample_std
from veil.cache import StageCache, stable_hash, texts_hash
from veil.downstream.task.labels import TagSet, labels_by_id, previous_ids, scores
from veil.downstream.task.settings import TaskSettings

log = logging.getLogger(__name__)

#: the results columns this stage fills (results.csv); ``da_`` = dialogue acts
COLUMNS = ["da_macro_f1", "da_accuracy", "da_macro_f1_std", "da_accuracy_std", "da_seeds", "task_s"]


def has_task_text(v: Any) -> bool:
    """Whether a variant gets task cells: it has training text, and its text is not another row's."""
    return v.data == "original" or v.data == "filled" or (v.data == "masked" and v.mask_loss_weight == 1.0)


def read_ids(path: Path) -> list[str]:
    """The ``id`` of every record of a stage's JSONL output, in order."""
    with path.open(encoding="utf-8") as f:
        return [str(json.loads(line)["id"]) for line in f]


def _mean_std(xs: Sequence[float]) -> tuple[float, float | None]:
    return sum(xs) / len(xs), sample_std(xs)


class TaskStage:
    def __init__(self, settings: TaskSettings, cache: StageCache, train_docs: Sequence[Any],
                 test_docs: Sequence[Any], seed: int = 0, progress: bool = True) -> None:
        self.s, self.cache, self.progress = settings, cache, progress
        self.seed = settings.seed if settings.seed is not None else seed
        self.train_ids = [d.id for d in train_docs]
        self.labels = labels_by_id(train_docs, settings.label_field, "training")
        test_labels = labels_by_id(test_docs, settings.label_field, "test")
        self.tags = TagSet(self.labels.values(), settings.min_tag_count)
        self.prev = previous_ids(train_docs)
        test_text = {d.id: d.text for d in test_docs}
        test_prev = previous_ids(test_docs)
        self.test_pairs = [(test_text[test_prev[d.id]] if test_prev[d.id] else "", d.text) for d in test_docs]
        self.test_y = [self.tags.map(test_labels[d.id]) for d in test_docs]
        self.test_key = stable_hash([texts_hash([d.text for d in test_docs]), texts_hash([d.id for d in test_docs]),
                                     texts_hash(self.test_y)])
        unseen = sorted(set(self.test_y) - set(self.tags.names))
        log.info("task %s: %d classes (%d training tags collapsed into other), %d training and %d test utterances%s",
                 settings.name, len(self.tags.names), len(self.tags.collapsed), len(train_docs), len(test_docs),
                 f"; test tags never seen in training: {', '.join(unseen)}" if unseen else "")

    def columns(self, label: str, variant: Any, texts: Sequence[str], records: Path | None = None) -> dict[str, Any]:
        """The task cells of one row: train on ``texts`` (ids from ``records``, else the training
        corpus's own), score on the test set, mean ± spread over ``task.seeds`` seeds; no cells for
        a variant without task text of its own (:func:`has_task_text`)."""
        if not has_task_text(variant):
            return {}
        ids = read_ids(records) if records is not None else list(self.train_ids)
        if len(ids) != len(texts):
            raise VeilError(f"task {label}: {len(texts)} texts but {len(ids)} ids in {records}")
        if sorted(ids) != sorted(self.train_ids):
            raise VeilError(f"task {label}: the variant's document ids are not those of the training corpus "
                            f"({len(set(ids) - set(self.labels))} unknown); labels are matched by id")
        text_of = dict(zip(ids, texts))
        pairs = [(text_of[self.prev[i]] if self.prev[i] else "", text_of[i]) for i in ids]
        y_tags = [self.labels[i] for i in ids]
        base = {"task": self.s.training_settings(), "texts": texts_hash(list(texts)), "ids": texts_hash(ids),
                "labels": texts_hash(y_tags), "test": self.test_key}
        f1s, accs, secs = [], [], 0.0
        for i in range(self.s.seeds):  # the first seed's key is the one-seed key: more seeds only add runs
            seed = self.seed + i
            settings = {**base, "seed": seed}
            tag = label if i == 0 else f"{label} (seed {seed})"

            def work(tmp: Path, seed: int = seed, tag: str = tag) -> dict[str, Any]:
                from veil.downstream.task.classifier import fit_predict

                pred, info = fit_predict(self.s, pairs, self.tags.encode(y_tags), self.test_pairs,
                                         len(self.tags.names), seed, progress=self.progress, desc=tag)
                names = [self.tags.names[p] for p in pred]
                (tmp / "predictions.txt").write_text("\n".join(names) + "\n", encoding="utf-8")
                r = scores(self.test_y, names)
                log.info("task %s: macro-F1 %.2f, accuracy %.2f", tag, 100 * r["macro_f1"], 100 * r["accuracy"])
                return {**r, **info, "classes": len(self.tags.names), "train": len(pairs), "test": len(names)}

            _, meta = self.cache.run("task", stable_hash(settings), settings, work)
            f1s.append(meta["info"]["macro_f1"])
            accs.append(meta["info"]["accuracy"])
            secs += meta["seconds"]
        f1, f1_std = _mean_std(f1s)
        acc, acc_std = _mean_std(accs)
        return {"da_macro_f1": f1, "da_accuracy": acc, "da_macro_f1_std": f1_std, "da_accuracy_std": acc_std,
                "da_seeds": len(f1s), "task_s": secs}


def _cell(r: dict[str, Any] | None) -> str:
    if r is None or r.get("da_macro_f1") in (None, ""):
        return ""

    def pct(key: str) -> str:
        std = r.get(key + "_std")
        return f"{100 * float(r[key]):.1f}" + ("" if std in (None, "") else f" ±{100 * float(std):.1f}")

    return f"{pct('da_macro_f1')} / {pct('da_accuracy')}"


def task_markdown(rows: Sequence[dict[str, Any]], methods: Sequence[str], techniques: Sequence[str],
                  settings: TaskSettings | None = None) -> str:
    """Macro-F1 / accuracy (%) per method x technique; empty when no row has task cells."""
    if not any(r.get("da_macro_f1") not in (None, "") for r in rows):
        return ""
    cell = {(r["technique"], r["method"]): r for r in rows}
    n = max(int(r.get("da_seeds") or 1) for r in rows if r.get("da_macro_f1") not in (None, ""))
    how = ""
    if settings is not None:
        how = (f" Classifier: {settings.classifier}" + (" fine-tuned" if settings.classifier == "minilm" else "")
               + (", previous utterance as context" if settings.context == "previous" else "")
               + (f", tags rarer than {settings.min_tag_count} training utterances merged into 'other'"
                  if settings.min_tag_count else "") + ".")
    lines = ["### Task: dialogue-act classification", "",
             "Macro-F1 / accuracy (%) on the untouched test utterances of a classifier fine-tuned on each "
             "method's training text (labels from the original utterances by id)." + how
             + (f" Mean ± standard deviation over {n} seeds." if n > 1 else ""), "",
             "| method | " + " | ".join(techniques) + " |", "|---|" + "---:|" * len(techniques)]
    for m in methods:
        if ("", m) in cell:
            if cell[("", m)].get("da_macro_f1") in (None, ""):
                continue
            lines.append(f"| {m} | " + " | ".join(_cell(cell[("", m)]) for _ in techniques) + " |")
            continue
        vals = [_cell(cell.get((t, m))) for t in techniques]
        if any(vals):
            lines.append(f"| {m} | " + " | ".join(vals) + " |")
    return "\n".join(lines) + "\n"
