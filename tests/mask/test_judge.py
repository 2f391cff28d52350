"""The span judge: its features, a judge trained here on a handful of spans, its folder, the engine's hook, and the
judge shipped with veil."""

from __future__ import annotations

import json

import numpy as np
import pytest

from veil.errors import VeilError
from veil.mask import judge as J
from veil.mask.base import Masker
from veil.mask.engine import MaskingEngine
from veil.types import Document, Span


def _span(text: str, value: str, label: str = "OCCUPATION", score: float = 0.7) -> Span:
    start = text.index(value)
    return Span(start, start + len(value), label, "dlp", score)


PERSONAL = ["my sister is a {} at the hospital", "I work as a {}", "my husband was a {} for years",
            "I used to be a {} myself", "our son is a {} now", "my mother retired as a {}"]
PASSING = ["there is a great incentive to be a {}", "a {} would know that", "you need a good {} for that",
           "any {} can tell you", "they say a {} earns too much", "the {} on television said so"]
JOBS = ["teacher", "nurse", "lawyer", "plumber"]


@pytest.fixture(scope="module")
def tiny_judge(tmp_path_factory):
    """A judge learned from 48 jobs: those of the speaker and their family kept, jobs talked of in general dropped."""
    from sklearn.linear_model import LogisticRegression

    rows, labels = [], []
    for keep, frames in ((True, PERSONAL), (False, PASSING)):
        for frame in frames:
            for job in JOBS:
                text = frame.format(job)
                s = _span(text, job)
                rows.append(J.features(text, s.start, s.end, s.label, "d", s.score))
                labels.append(keep)
    model = LogisticRegression(C=10.0, solver="liblinear").fit(J.vectorise(rows), labels)
    folder = tmp_path_factory.mktemp("judge")
    J.save(folder, model.coef_[0].astype(np.float32), float(model.intercept_[0]), 0.5,
           {"trained": "test", "judged": ["OCCUPATION", "DATE"]})
    return J.SpanJudge.load(folder)


def test_features_name_the_span_its_context_and_its_type():
    text = "I paid forty dollars for my car"
    s = _span(text, "forty dollars")
    f = J.features(text, s.start, s.end, "MONEY", "td", 0.73)
    assert {"s=forty", "s=dollars", "l1=paid", "l2=i", "r1=for", "r12=for_my", "by=td", "score=7", "first=True",
            "lab=MONEY"} <= set(f)
    assert "MONEY|l1=paid" in f and "MONEY|s=dollars" in f  # each feature also with the type in front
    assert J.features(text, s.start, s.end, "MONEY", "td", 0.73) == f  # no randomness
    assert "second=True" in J.features("you can buy one for forty dollars", 20, 33, "MONEY", "d", 0.7)


def test_found_by_says_which_maskers_overlap_the_span():
    s = Span(5, 10, "DATE", "dlp")
    assert J.found_by(s, [Span(7, 12, "DATE", "neural_tagger")], [s]) == "td"
    assert J.found_by(s, [], [s]) == "d"
    assert J.found_by(s, [Span(0, 5, "DATE", "neural_tagger")], []) == ""


def test_a_trained_judge_drops_a_job_talked_of_in_general_and_keeps_the_speakers_own(tiny_judge):
    texts = ["well my sister is a dentist at the hospital", "well there is a great incentive to be a dentist"]
    merged = [[_span(t, "dentist")] for t in texts]
    out = tiny_judge.judge(texts, merged, [[], []], merged, [True, True])
    assert out[0] == merged[0] and out[1] == []


def test_the_judge_never_drops_a_name_or_a_written_documents_span(tiny_judge):
    text = "well there is a great incentive to be a dentist"
    job = _span(text, "dentist")
    name = Span(0, 4, "PERSON_NAME", "neural_tagger", 0.9)  # a type it does not judge, in the same context
    money = Span(text.index("great"), text.index("great") + 5, "MONEY", "dlp", 0.7)
    assert tiny_judge.judge([text], [[name, money, job]], [[name]], [[money, job]], [True]) == [[name, money]]
    assert tiny_judge.judge([text], [[name, money, job]], [[name]], [[money, job]], [False]) == [[name, money, job]]


def test_a_judge_folder_records_what_produced_it_and_bad_folders_are_errors(tiny_judge, tmp_path):
    assert tiny_judge.meta["trained"] == "test" and tiny_judge.threshold == 0.5
    assert tiny_judge.judged == {"OCCUPATION", "DATE"}
    with pytest.raises(VeilError, match="no span judge"):
        J.SpanJudge.load(tmp_path)
    J.save(tmp_path, np.ones(J.N_FEATURES, dtype=np.float32), 0.0, 0.5, {"judged": ["PERSON_NAME"]})
    with pytest.raises(VeilError, match="never lets it drop: PERSON_NAME"):
        J.SpanJudge.load(tmp_path)
    meta = json.loads((tmp_path / J.META_FILE).read_text())
    (tmp_path / J.META_FILE).write_text(json.dumps(dict(meta, judged=["DATE"], n_features=1024)))
    J._load.cache_clear()
    with pytest.raises(VeilError, match="hashes 1024 features"):
        J.SpanJudge.load(tmp_path)
    (tmp_path / J.META_FILE).write_text(json.dumps({k: v for k, v in meta.items() if k != "threshold"}))
    J._load.cache_clear()
    with pytest.raises(VeilError, match="no threshold"):
        J.SpanJudge.load(tmp_path)
    (tmp_path / J.WEIGHTS_FILE).write_bytes(b"not a zip")
    (tmp_path / J.META_FILE).write_text(json.dumps(dict(meta, judged=["DATE"])))
    J._load.cache_clear()
    with pytest.raises(VeilError, match="cannot be loaded"):
        J.SpanJudge.load(tmp_path)


def test_each_judged_type_has_its_own_threshold(tiny_judge, tmp_path):
    """A folder's ``thresholds`` judge each type at its own: a job at a threshold no span reaches is dropped, a date
    at 0 is never; the types judged are theirs. Thresholds that are not numbers in [0, 1] or name a type the judge
    may never drop are errors."""
    weights, bias = tiny_judge.weights, tiny_judge.bias
    J.save(tmp_path, weights, bias, 0.5, {"thresholds": {"OCCUPATION": 1.0, "DATE": 0.0}})
    judge = J.SpanJudge.load(tmp_path)
    assert judge.judged == {"OCCUPATION", "DATE"} and judge.thresholds == {"OCCUPATION": 1.0, "DATE": 0.0}
    assert json.loads((tmp_path / J.META_FILE).read_text())["judged"] == ["DATE", "OCCUPATION"]
    text = "well my sister is a dentist, she started in nineteen ninety"
    merged = [[_span(text, "dentist"), _span(text, "nineteen ninety", "DATE")]]
    assert judge.judge([text], merged, [[]], merged, [True]) == [[merged[0][1]]]
    meta = json.loads((tmp_path / J.META_FILE).read_text())
    for bad, match in (({"DATE": 2.0}, "not a type -> number"), ({"PERSON_NAME": 0.5}, "never lets it drop")):
        (tmp_path / J.META_FILE).write_text(json.dumps(dict(meta, thresholds=bad, judged=[])))
        J._load.cache_clear()
        with pytest.raises(VeilError, match=match):
            J.SpanJudge.load(tmp_path)
    J._load.cache_clear()


def test_the_taggers_judge_option(tmp_path):
    from veil.mask.neural.tagger import _span_judge

    assert _span_judge("off") is None and _span_judge(False) is None and _span_judge("none") is None
    assert _span_judge("default") is J.SpanJudge.load() and _span_judge(True) is J.SpanJudge.load()
    with pytest.raises(VeilError, match="neither default, off nor a folder"):
        _span_judge("no-such-folder")
    with pytest.raises(VeilError, match="no span judge"):
        _span_judge(str(tmp_path))


class _Fixed(Masker):
    def __init__(self, name: str, spans: list[Span]) -> None:
        self.name, self.spans = name, spans

    def detect(self, text: str) -> list[Span]:
        return list(self.spans)


class _Judging(_Fixed):
    judges_merged = True

    def judge_merged(self, texts, merged, found, groups=None):
        self.seen = {k: [list(v) for v in vs] for k, vs in found.items()}
        self.groups = groups
        return [[s for s in spans if s.label != "MONEY"] for spans in merged]


def test_the_engine_hands_every_maskers_spans_to_a_judging_masker_and_masks_what_it_keeps():
    money, name = Span(0, 5, "MONEY", "dlp"), Span(6, 10, "PERSON_NAME", "neural_tagger")
    judging = _Judging("neural_tagger", [name])
    engine = MaskingEngine([judging, _Fixed("dlp", [money])])
    assert engine.detect([Document("d", "fifty Anna paid")]) == [[name]]
    assert judging.seen == {"neural_tagger": [[name]], "dlp": [[money]]} and judging.groups is None
    engine.detect([Document("d", "fifty Anna paid", group="call-1")])
    assert judging.groups == ["call-1"]


def test_a_value_kept_in_one_utterance_of_a_call_is_kept_in_all_of_them(tiny_judge):
    """The judge reads each utterance alone, but a call is one document for what it masks: a job kept where the
    speaker says it is theirs stays masked where it is said in passing, or "dentist" would survive in the call
    (what `veil verify` checks). Another call is judged on its own."""
    texts = ["well my sister is a dentist at the hospital", "well there is a great incentive to be a dentist",
             "well there is a great incentive to be a dentist"]
    merged = [[_span(t, "dentist")] for t in texts]
    args = (texts, merged, [[], [], []], merged, [True, True, True])
    assert tiny_judge.judge(*args) == [merged[0], [], []]
    assert tiny_judge.judge(*args, groups=["c1", "c1", "c2"]) == [merged[0], merged[1], []]
    assert tiny_judge.judge(*args, groups=["c1", None, None]) == [merged[0], [], []]


def test_the_shipped_judge_reads_whose_job_it_is():
    """The shipped model tells a job of the speaker's family from a job talked of (whether jobs are judged at its
    threshold is the dev sets' choice, recorded in its folder)."""
    shipped = J.SpanJudge.load()
    assert 0.0 < shipped.threshold < 1.0 and shipped.judged <= J.JUDGED
    assert not {"NUMBER", "PERSON_NAME"} & shipped.judged and shipped.judged
    assert shipped.meta["command"].startswith("python bench/train_judge.py")

    def p(text: str, value: str) -> float:
        s = _span(text, value, "OCCUPATION")
        return float(shipped.probabilities([J.features(text, s.start, s.end, s.label, "td", 0.7)])[0])

    assert p("there is a great incentive to be a doctor because of the money", "doctor") < shipped.threshold
    assert p("my sister is a nurse at the hospital", "nurse") > shipped.threshold
    assert p("I work as a nurse", "nurse") > shipped.threshold


def test_judging_a_long_conversation_is_linear_in_its_spans(tiny_judge):
    """Context is read from a window around each span and overlaps by binary search: a call of 4,000 jobs is
    judged as one of 400, ten times over (no span's features read the whole text)."""
    import time

    def run(n: int) -> float:
        text = " ".join(["well you know my sister is a dentist"] * n)
        spans = [Span(m, m + 7, "OCCUPATION", "dlp", 0.7) for m in
                 [i * 37 + text[i * 37:].index("dentist") for i in range(n)]]
        began = time.perf_counter()
        out = tiny_judge.judge([text], [spans], [spans[::2]], [spans], [True])
        assert len(out[0]) == n  # the speaker's own sister's job: kept
        return time.perf_counter() - began

    run(50)
    assert run(4000) < 25 * max(run(400), 1e-3)


def test_found_by_agrees_with_a_plain_scan():
    import random

    rng = random.Random(0)
    spans = [Span(a, a + rng.randint(1, 30), "DATE", "dlp") for a in (rng.randint(0, 500) for _ in range(60))]
    for _ in range(300):
        a = rng.randint(0, 520)
        probe = Span(a, a + rng.randint(1, 20), "DATE", "dlp")
        plain = any(s.start < probe.end and probe.start < s.end for s in spans)
        assert (J.found_by(probe, spans, []) == "t") == plain
