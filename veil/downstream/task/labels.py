"""Task-evaluation stage: labels by document id, the tag set, conversation context, and the scores.

Labels always come from the *original* documents by id (a variant's text never carries them: the
mask stage drops every field but the text, id, person and group), so Oracle, Baseline0 and every
fill train on the same labels for the same utterances.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Sequence

from veil.errors import VeilError

OTHER = "other"  # the tag rare tags collapse into (task.min_tag_count)


def labels_by_id(docs: Iterable[Any], field: str, what: str) -> dict[str, str]:
    """``{doc.id: doc.meta[field]}``; a document without the label, or an id seen twice, is an error."""
    out: dict[str, str] = {}
    for d in docs:
        tag = (d.meta or {}).get(field)
        if tag is None or str(tag).strip() == "":
            raise VeilError(f"task: {what} document {d.id!r} has no {field!r} label (the task needs a corpus "
                            "that carries it, e.g. Switchboard's DA tags: format switchboard)")
        if d.id in out:
            raise VeilError(f"task: {what} document id {d.id!r} occurs twice; labels are matched by id")
        out[d.id] = str(tag).strip()
    return out


class TagSet:
    """The classifier's classes: the training tags, those rarer than ``min_count`` merged into ``other``."""

    def __init__(self, train_tags: Iterable[str], min_count: int = 0) -> None:
        counts = Counter(train_tags)
        self.min_count = min_count
        kept = sorted(t for t, n in counts.items() if n >= min_count)
        self.collapsed = sorted(t for t in counts if t not in kept)
        # ``other`` is a class only when something collapses into it (a test tag unseen in training
        # collapses too when min_count > 0; with min_count 0 it stays itself and is never predicted)
        self.names = kept + ([OTHER] if self.collapsed or min_count > 0 else [])
        if OTHER in kept:
            raise VeilError(f"task: the corpus has a tag named {OTHER!r}, which min_tag_count uses")
        self.index = {t: i for i, t in enumerate(self.names)}

    def map(self, tag: str) -> str:
        if tag in self.index:
            return tag
        return OTHER if self.min_count > 0 else tag

    def encode(self, tags: Sequence[str]) -> list[int]:
        """Class numbers of training tags (every one is a class by construction)."""
        return [self.index[self.map(t)] for t in tags]


def previous_ids(docs: Sequence[Any]) -> dict[str, str | None]:
    """``{id: id of the previous document of the same group (conversation)}``, None for a group's first.

    Documents are in corpus order (a Switchboard reader yields each conversation's utterances in
    order); a document without a group has no previous one.
    """
    last: dict[str, str] = {}
    out: dict[str, str | None] = {}
    for d in docs:
        g = d.group
        out[d.id] = last.get(g) if g is not None else None
        if g is not None:
            last[g] = d.id
    return out


def scores(y_true: Sequence[str], y_pred: Sequence[str]) -> dict[str, Any]:
    """Accuracy and macro-F1 over the tags that occur in the test labels (sklearn's definitions).

    Macro-F1 averages the per-tag F1 of every tag present in ``y_true``; a prediction of any other
    tag counts against precision of nothing and recall of the true tag, so tags the classifier never
    predicts score 0 and pull the average down (the usual SwDA practice weighs rare acts equally).
    """
    from sklearn.metrics import accuracy_score, f1_score

    if len(y_true) != len(y_pred) or not y_true:
        raise VeilError("task: scores need as many predictions as test labels (and at least one)")
    labels = sorted(set(y_true))
    per = f1_score(y_true, y_pred, labels=labels, average=None, zero_division=0)
    return {"macro_f1": float(per.mean()), "accuracy": float(accuracy_score(y_true, y_pred)),
            "per_tag_f1": {t: round(float(f), 4) for t, f in zip(labels, per)}, "test_tags": len(labels)}
