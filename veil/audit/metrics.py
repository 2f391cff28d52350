"""Audit stage: utility, privacy and regurgitation metrics of a fine-tuned masked LM (PPMLM §5.1, §5.3).

All functions here are pure: they take the predictions a model made at masked positions (see
``veil.audit.ppmlm.probe``) and return numbers or tables. Definitions:

- **utility**: masked-word prediction accuracy on held-out text. Words are chosen for masking only
  among non-identifier words (15% of them per sequence, whole-word masking: every sub-word token
  of a chosen word is replaced by the mask token); a word counts as correct when the top-1
  prediction at every one of its sub-word positions is the original token.
- **privacy** (PPMLM §5.1): ``1 - |L| / |I|`` where ``I`` is the set of distinct identifiers of the
  training corpus (direct and indirect) and ``L`` those that the model predicted (top-1) at least
  once at any masked position of the training text, "whether in the correct place in the original
  text or elsewhere". 1 means no identifier leaked, 0 means all leaked.
- **regurgitation** (PPMLM Fig. 5): per identifier, how often it occurs in the training text and how
  often the model predicted it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping


@dataclass(frozen=True, slots=True)
class Prediction:
    """The model's top-1 guess for one masked word."""

    seq: int  # index of the sequence the word is in
    word: int  # index of the word within that sequence
    truth: str  # the original word (lower-cased)
    predicted: str  # the predicted word (lower-cased, sub-words joined)
    correct: bool  # every sub-word token predicted exactly
    purpose: str  # "identifier" (an identifier position probed) or "utility" (a random non-identifier word)


def utility(predictions: Iterable[Prediction]) -> float:
    """Accuracy over the predictions made for ``utility`` positions; NaN when there are none."""
    n = hits = 0
    for p in predictions:
        if p.purpose == "utility":
            n += 1
            hits += p.correct
    return hits / n if n else float("nan")


def leaked_identifiers(predictions: Iterable[Prediction], identifiers: Iterable[str]) -> set[str]:
    """Identifiers predicted at least once, at any masked position."""
    ids = set(identifiers)
    return {p.predicted for p in predictions if p.predicted in ids}


def privacy(predictions: Iterable[Prediction], identifiers: Iterable[str]) -> float:
    """``1 - leaked / all`` over distinct identifiers; 1.0 when there are no identifiers."""
    ids = set(identifiers)
    if not ids:
        return 1.0
    return 1.0 - len(leaked_identifiers(predictions, ids)) / len(ids)


def regurgitation(predictions: Iterable[Prediction], identifiers: Mapping[str, str],
                  training_counts: Mapping[str, int]) -> list[dict]:
    """One row per identifier: ``identifier, kind, repetitions`` (occurrences in the training text),
    ``predicted`` (top-1 predictions of it anywhere), ``predicted_in_place`` (at its own positions).

    ``identifiers`` maps identifier -> kind ("direct", "indirect" or "both"). Rows are sorted by
    repetitions, then predictions, descending.
    """
    anywhere: Counter[str] = Counter()
    in_place: Counter[str] = Counter()
    for p in predictions:
        if p.predicted in identifiers:
            anywhere[p.predicted] += 1
            if p.predicted == p.truth:
                in_place[p.predicted] += 1
    rows = [{"identifier": w, "kind": kind, "repetitions": int(training_counts.get(w, 0)),
             "predicted": anywhere[w], "predicted_in_place": in_place[w]} for w, kind in identifiers.items()]
    rows.sort(key=lambda r: (-r["repetitions"], -r["predicted"], r["identifier"]))
    return rows


def regurgitation_by_repetition(rows: Iterable[Mapping]) -> list[dict]:
    """Fig. 5's curve as a table: for each repetition count r, identifiers with r repetitions,
    their total predictions, and the cumulative predictions over identifiers repeated <= r times."""
    by_r: dict[int, list[int]] = {}
    for r in rows:
        by_r.setdefault(int(r["repetitions"]), []).append(int(r["predicted"]))
    out, cum = [], 0
    for rep in sorted(by_r):
        preds = by_r[rep]
        cum += sum(preds)
        out.append({"repetitions": rep, "identifiers": len(preds), "leaked": sum(1 for x in preds if x),
                    "predicted": sum(preds), "cumulative_predicted": cum})
    return out
