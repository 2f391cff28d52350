"""The identifier-count membership inference attack: scores, ROC, AUC, TPR at low FPR (veil.audit.membership)."""

import pytest

from veil.audit.membership import identifier_scores, membership_summary, roc, tpr_at_fpr
from veil.audit.metrics import Prediction
from veil.errors import VeilError


def P(predicted):
    return Prediction(0, 0, "x", predicted, False, "identifier")


def test_identifier_scores_count_distinct_own_indirect_identifiers():
    preds = {"a": [P("zorgon"), P("zorgon"), P("plano"), P("the")], "b": [P("zorgon")]}
    ids = {"a": {"zorgon", "plano", "quux"}, "b": {"vertebra"}, "c": {"x"}}
    assert identifier_scores(preds, ids) == {"a": 2, "b": 0, "c": 0}


def test_perfect_and_random_scores():
    perfect = membership_summary({"m1": 3, "m2": 2, "n1": 0, "n2": 1}, ["m1", "m2"])
    assert perfect["auc"] == 1.0
    assert perfect["tpr_at_fpr"]["0.001"] == 1.0
    tied = membership_summary({"m1": 0, "m2": 0, "n1": 0, "n2": 0}, ["m1", "m2"])
    assert tied["auc"] == 0.5
    # no signal: the ROC is the diagonal, so TPR equals FPR
    assert tied["tpr_at_fpr"] == pytest.approx({"0.001": 0.001, "0.01": 0.01, "0.1": 0.1})


def test_tpr_interpolates_between_roc_vertices():
    fpr, tpr = [0.0, 0.0, 0.5, 1.0], [0.0, 0.2, 0.8, 1.0]
    assert tpr_at_fpr(fpr, tpr, 0.0) == 0.2  # top of the vertical segment at FPR 0
    assert tpr_at_fpr(fpr, tpr, 0.25) == pytest.approx(0.5)
    assert tpr_at_fpr(fpr, tpr, 0.5) == pytest.approx(0.8)
    assert tpr_at_fpr(fpr, tpr, 1.0) == 1.0
    with pytest.raises(VeilError):
        tpr_at_fpr(fpr, tpr, 1.5)


def test_roc_from_scores_matches_hand_computation():
    # members 4, 2; non-members 3, 0: ranking m, n, m, n
    curve = roc({"m1": 4, "m2": 2, "n1": 3, "n2": 0}, ["m1", "m2"])
    assert curve["auc"] == pytest.approx(0.75)
    pts = list(zip(curve["fpr"], curve["tpr"]))
    assert (0.0, 0.5) in pts and (0.5, 0.5) in pts and (0.5, 1.0) in pts
    s = membership_summary({"m1": 4, "m2": 2, "n1": 3, "n2": 0}, ["m1", "m2"])
    assert s["tpr_at_fpr"]["0.1"] == pytest.approx(0.5)


def test_needs_members_and_non_members():
    with pytest.raises(VeilError, match="both members and non-members"):
        roc({"a": 1, "b": 2}, ["a", "b"])


def test_all_zero_scores_are_reported_as_no_signal_not_as_a_chance_attack():
    from veil.audit.membership import no_signal_note

    s = membership_summary({"m1": 0, "m2": 0, "n1": 0, "n2": 0}, ["m1", "m2"])
    assert s["signal"] == {"members_scored": 0, "non_members_scored": 0, "distinct_scores": 1, "min_fpr": 0.5,
                           "degenerate": True}
    assert s["tpr_at_fpr_strict"] == {"0.001": 0.0, "0.01": 0.0, "0.1": 0.0}  # no deterministic threshold works
    assert "no indirect identifier was predicted for any person" in no_signal_note(s["signal"])
    live = membership_summary({"m1": 2, "m2": 0, "n1": 1, "n2": 0}, ["m1", "m2"])
    assert live["signal"]["members_scored"] == 1 and live["signal"]["non_members_scored"] == 1
    assert not live["signal"]["degenerate"] and no_signal_note(live["signal"]) is None


def test_ties_between_members_and_non_members_do_not_inflate_tpr():
    # m1 and n1 tie at the top: no deterministic threshold separates them
    s = membership_summary({"m1": 3, "m2": 0, "n1": 3, "n2": 0}, ["m1", "m2"])
    assert s["tpr_at_fpr_strict"]["0.1"] == 0.0
    assert s["tpr_at_fpr"]["0.1"] == pytest.approx(0.1)  # the randomised threshold: on the diagonal
    assert s["auc"] == pytest.approx(0.5)


def test_table_markdown_footnotes_a_row_without_signal():
    from veil.cli.audit_ppmlm import table_markdown

    def result(scores):
        s = membership_summary(scores, ["m1", "m2"])
        return {"utility": 0.3, "privacy": 0.99, "auc": s["auc"], "tpr_at_fpr": s["tpr_at_fpr"],
                "tpr_at_fpr_strict": s["tpr_at_fpr_strict"], "mia_signal": s["signal"]}

    md = table_markdown({"mlm": result({"m1": 2, "m2": 1, "n1": 0, "n2": 0}),
                         "ppmlm": result({"m1": 0, "m2": 0, "n1": 0, "n2": 0})}, "tiny",
                        {"members": 2, "non_members": 2, "identifiers": 10})
    assert "| MLM | 100.00% |" in md and "| 2 / 0 |" in md
    assert "| 0 / 0 [1] |" in md
    assert "[1] PPMLM: no indirect identifier was predicted for any person" in md
    assert "1/2 = 50.00%" in md


def test_warmup_options_build_a_warmup_config_only_when_given():
    import argparse

    from veil.cli.audit_ppmlm import _model_label, _warmup_config

    ns = lambda **kw: argparse.Namespace(**{"warmup_steps": None, "warmup_lr": None, "warmup_layers": None, **kw})  # noqa: E731
    assert _warmup_config(ns()) is None
    cfg = _warmup_config(ns(warmup_steps=400, warmup_layers=0))
    assert cfg.steps == 400 and cfg.trainable_layers is None
    assert "400 steps" in _model_label(None, cfg) and _model_label("roberta-base", cfg) == "roberta-base"
    with pytest.raises(VeilError):
        _warmup_config(ns(warmup_steps=0))


def test_json_view_has_the_documented_keys_and_no_nan():
    import json

    from veil.cli.audit_ppmlm import public

    s = membership_summary({"m1": 1, "m2": 0, "n1": 0, "n2": 0}, ["m1", "m2"])
    r = {"utility": float("nan"), "privacy": 0.9, "auc": s["auc"], "tpr_at_fpr": s["tpr_at_fpr"], "extra": 1}
    out = json.loads(json.dumps(public(r), allow_nan=False))  # strict JSON: no NaN token
    assert list(out) == ["utility", "privacy", "auc", "tpr_at_fpr"] and out["utility"] is None
    assert list(out["tpr_at_fpr"]) == ["0.001", "0.01", "0.1"]
