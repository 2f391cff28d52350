"""Audit stage: the identifier-count membership inference attack of PPMLM §5.4 (ROC, AUC, TPR at low FPR).

The attacker (an auditor who holds the fine-tuning data, as in the paper) scores each person by the
number of their distinct *indirect* identifiers that the model predicts when their text is probed
with masks. Members are the persons whose text was in the fine-tuning set, non-members held-out
persons probed the same way. A higher score means "more likely a member".

TPR at a given FPR is read off the ROC curve by linear interpolation between its vertices: a point
between two vertices is achieved by a randomised threshold, so it is an attainable operating point
(and a score that carries no signal gives TPR = FPR, the diagonal). Persons with tied scores form
one vertex (they cannot be told apart), so ties never make the attack look better than it is. The
summary also gives the deterministic-threshold TPR (``tpr_at_fpr_strict``: the best vertex at or left
of the FPR, no randomisation) and says how many persons scored above zero, so that "no identifier
was predicted for any person" (every score 0, ROC = diagonal by construction) is stated as such
rather than read as a measured chance-level attack. With ``n`` non-members the smallest non-zero FPR
an attack can realise is ``1/n``; lower FPRs are interpolated from the vertex at FPR 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from veil.audit.metrics import Prediction
from veil.errors import VeilError

#: the false-positive rates of PPMLM's Table 2
TABLE2_FPRS: tuple[float, ...] = (0.001, 0.01, 0.1)


def identifier_scores(predictions_by_person: Mapping[str, Iterable[Prediction]],
                      indirect_by_person: Mapping[str, set[str]]) -> dict[str, int]:
    """Per person: how many of their distinct indirect identifiers were predicted in their text."""
    scores = {}
    for person, ids in indirect_by_person.items():
        predicted = {p.predicted for p in predictions_by_person.get(person, ())}
        scores[person] = len(predicted & ids)
    return scores


def roc(scores: Mapping[str, float], members: Iterable[str]) -> dict[str, Any]:
    """ROC of "score ranks members above non-members": ``fpr``, ``tpr``, ``thresholds`` (lists), ``auc``."""
    from sklearn.metrics import roc_auc_score, roc_curve

    members = set(members)
    persons = sorted(scores)
    y = [1 if p in members else 0 for p in persons]
    s = [float(scores[p]) for p in persons]
    n_pos = sum(y)
    if n_pos == 0 or n_pos == len(y):
        raise VeilError(f"membership inference needs both members and non-members; got {n_pos} members "
                        f"among {len(y)} scored persons")
    fpr, tpr, thr = roc_curve(y, s, drop_intermediate=False)
    return {"fpr": [float(x) for x in fpr], "tpr": [float(x) for x in tpr],
            "thresholds": [float(x) if math.isfinite(x) else None for x in thr],
            "auc": float(roc_auc_score(y, s)), "members": n_pos, "non_members": len(y) - n_pos}


def tpr_at_fpr(fpr: list[float], tpr: list[float], target: float) -> float:
    """TPR at ``target`` FPR, linearly interpolated between ROC vertices (see the module docstring).

    Where the curve has a vertical segment at ``target`` the highest TPR on it is returned.
    """
    if not 0.0 <= target <= 1.0:
        raise VeilError(f"FPR must lie in [0, 1], got {target}")
    best = 0.0
    for i in range(len(fpr)):
        if fpr[i] <= target:
            best = max(best, tpr[i])  # vertices at or left of target (vertical segments included)
        if i and fpr[i - 1] < target < fpr[i]:
            w = (target - fpr[i - 1]) / (fpr[i] - fpr[i - 1])
            best = max(best, tpr[i - 1] + w * (tpr[i] - tpr[i - 1]))
    return float(best)


def tpr_at_fpr_strict(fpr: list[float], tpr: list[float], target: float) -> float:
    """TPR of the best *deterministic* threshold whose FPR is at most ``target`` (no interpolation)."""
    if not 0.0 <= target <= 1.0:
        raise VeilError(f"FPR must lie in [0, 1], got {target}")
    return float(max((t for f, t in zip(fpr, tpr) if f <= target), default=0.0))


def membership_summary(scores: Mapping[str, float], members: Iterable[str],
                       fprs: Iterable[float] = TABLE2_FPRS) -> dict[str, Any]:
    """``{"auc", "tpr_at_fpr", "tpr_at_fpr_strict", "signal", "roc"}`` for the scores.

    ``signal``: ``members_scored`` / ``non_members_scored`` (persons with a score above 0),
    ``distinct_scores``, ``min_fpr`` (1 / non-members) and ``degenerate`` (every person has the same
    score: the attack has nothing to rank, its ROC is the diagonal whatever the model did).
    """
    members = set(members)
    curve = roc(scores, members)
    fprs = tuple(fprs)
    values = {float(v) for v in scores.values()}
    signal = {"members_scored": sum(1 for p, v in scores.items() if p in members and v > 0),
              "non_members_scored": sum(1 for p, v in scores.items() if p not in members and v > 0),
              "distinct_scores": len(values), "min_fpr": 1.0 / curve["non_members"],
              "degenerate": len(values) <= 1}
    return {"auc": curve["auc"],
            "tpr_at_fpr": {str(f): tpr_at_fpr(curve["fpr"], curve["tpr"], f) for f in fprs},
            "tpr_at_fpr_strict": {str(f): tpr_at_fpr_strict(curve["fpr"], curve["tpr"], f) for f in fprs},
            "signal": signal, "roc": curve}


def no_signal_note(signal: Mapping[str, Any]) -> str | None:
    """A sentence for a table footnote when the scores cannot rank anyone, else None."""
    if not signal.get("degenerate"):
        return None
    if signal.get("members_scored", 0) == 0 and signal.get("non_members_scored", 0) == 0:
        return "no indirect identifier was predicted for any person (every score 0)"
    return "every person has the same score"
