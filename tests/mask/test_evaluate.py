import json

import pytest

from veil.cli import main
from veil.mask.evaluate import (LABEL_TO_GOLD_TYPE, evaluate, evaluate_tab, evaluate_types, false_positive_words,
                                missed_mentions)
from veil.mask.gold import GoldDocument, GoldSpan
from veil.types import Document, Span

TEXT = "Mr John Smith met Mrs Jane Doe in Oslo on 5 May 2001. Later John Smith left Oslo."
#       0         1         2         3         4         5         6         7         8


def at(text, surface, nth=0):
    i = -1
    for _ in range(nth + 1):
        i = text.index(surface, i + 1)
    return i, i + len(surface)


def gold():
    g = [
        GoldSpan(*at(TEXT, "Mr John Smith"), "PERSON", "DIRECT", "e1"),
        GoldSpan(*at(TEXT, "John Smith", 1), "PERSON", "DIRECT", "e1"),
        GoldSpan(*at(TEXT, "Mrs Jane Doe"), "PERSON", "QUASI", "e2"),
        GoldSpan(*at(TEXT, "Oslo"), "LOC", "QUASI", "e3"),
        GoldSpan(*at(TEXT, "Oslo", 1), "LOC", "QUASI", "e3"),
        GoldSpan(*at(TEXT, "5 May 2001"), "DATETIME", "QUASI", "e4"),
        GoldSpan(*at(TEXT, "Later"), "MISC", "NO_MASK", "e5"),
    ]
    return [GoldDocument(Document("d1", TEXT), g)]


def span(surface, nth=0, label="X"):
    return Span(*at(TEXT, surface, nth), label, "test")


def test_tab_recall_levels():
    detected = [[span("John Smith"),             # first mention: "Mr" is ignored, so masked
                 span("Jane"),                   # "Doe" left: mention missed, 1 of 2 tokens
                 span("Oslo"),                   # second Oslo missed: entity e3 not fully masked
                 span("5 May"), span("2001")]]   # two spans, whole mention covered
    r = evaluate_tab(gold(), detected)
    assert r["DIRECT"]["mention_recall"] == 0.5 and r["DIRECT"]["entity_recall"] == 0.0
    assert r["DIRECT"]["token_recall"] == pytest.approx(3 / 5)  # Mr, John, Smith | (John, Smith)
    assert r["QUASI"]["mentions"] == 4 and r["QUASI"]["mention_recall"] == 0.5
    assert r["QUASI"]["entities"] == 3 and r["QUASI"]["entity_recall"] == pytest.approx(1 / 3)
    assert r["QUASI"]["token_recall"] == pytest.approx(6 / 8)  # Mrs Jane (Doe) Oslo (Oslo) 5 May 2001
    assert r["per_type"]["LOC"]["mention_recall"] == 0.5
    assert r["words"] == 18 and r["masked_words"] == 7
    assert r["masked_token_share"] == pytest.approx(7 / 18)


def test_tab_everything_masked_and_nothing_masked():
    everything = evaluate_tab(gold(), [[Span(0, len(TEXT), "X", "t")]])
    for t in ("DIRECT", "QUASI"):
        assert everything[t]["mention_recall"] == everything[t]["entity_recall"] == 1.0
    assert everything["masked_token_share"] == 1.0
    nothing = evaluate_tab(gold(), [[]])
    assert nothing["DIRECT"]["mention_recall"] == 0.0 and nothing["masked_token_share"] == 0.0


def test_types_and_missed():
    r = evaluate_types(gold(), [[span("Oslo"), span("Oslo", 1)]])
    assert r["per_type"]["LOC"]["mention_recall"] == 1.0
    assert r["overall"]["mentions"] == 7
    missed = missed_mentions(gold(), [[span("Oslo")]], limit=2)
    assert [m["mention"] for m in missed] == ["Mr John Smith", "John Smith"]
    assert "****" in missed_mentions(gold(), [[span("Oslo")]])[-1]["context"]


def _write_tab(tmp_path):
    g = gold()[0]
    rec = {"metadata": {"provenance": {"doc_id": "d1"}}, "text": TEXT,
           "entities": [{"start_offset": s.start, "end_offset": s.end, "entity_type": s.label,
                         "entity_id": s.entity_id, "identifier_type": s.identifier_type} for s in g.spans]}
    p = tmp_path / "tab.jsonl"
    p.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    return p


def test_cli_json_tab(tmp_path, capsys):
    p = _write_tab(tmp_path)
    assert main(["eval-detect", str(p), "--format", "tab", "--masker", "dlp", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)  # exactly one JSON object
    assert set(out) >= {"DIRECT", "QUASI", "per_type", "masked_token_share"}
    assert set(out["DIRECT"]) >= {"mention_recall", "token_recall", "entity_recall"}
    assert out["per_type"]["DATETIME"]["mention_recall"] == 1.0  # the DLP date detector
    # the honorific detector finds "Mr John Smith"; the bare second "John Smith" needs the entity tagger
    assert out["DIRECT"]["mention_recall"] == 0.5


def test_cli_table_presidio_and_options(tmp_path, capsys):
    recs = [{"full_text": "Mail bob@x.org or call 4567", "spans": [
        {"entity_type": "EMAIL_ADDRESS", "start_position": 5, "end_position": 14}]}]
    p = tmp_path / "synth.json"
    p.write_text(json.dumps(recs), encoding="utf-8")
    assert main(["eval-detect", str(p), "--format", "presidio", "--masker", "dlp",
                 "--set", "dlp.detectors=email,url"]) == 0
    out = capsys.readouterr().out
    assert "EMAIL_ADDRESS" in out and "masked token share: 0.429" in out  # bob x org of 7 words; not 4567


@pytest.mark.parametrize("argv", [
    ["--masker", "nope"],
    ["--masker", "dlp", "--set", "dlp.detectors"],
    ["--masker", "dlp", "--set", "entity_tagger.labels=PERSON"],
    ["--masker", "dlp", "--set", "dlp.colour=red"],
])
def test_cli_bad_options_exit_2(tmp_path, capsys, argv):
    p = _write_tab(tmp_path)
    assert main(["eval-detect", str(p), "--format", "tab", *argv]) == 2
    assert "error" in capsys.readouterr().err


def test_cli_missing_gold_file(tmp_path, capsys):
    assert main(["eval-detect", str(tmp_path / "none.jsonl"), "--format", "tab", "--masker", "dlp"]) == 2


@pytest.mark.slow
def test_tab_default_set_meets_direct_goal(shared_data, capsys):
    assert main(["eval-detect", str(shared_data / "tab" / "tab_train_dev.jsonl"), "--format", "tab", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["DIRECT"]["mention_recall"] >= 0.99
    assert out["QUASI"]["mention_recall"] >= 0.85  # measured 0.90; the 0.95 goal is not met (README)
    assert 0.1 < out["masked_token_share"] < 0.3


def _presidio_titled(tmp_path):
    text = "Mr Smith wrote to jo@example.com today."
    rec = {"full_text": text, "spans": [
        {"entity_type": "PERSON", "entity_value": "Smith", "start_position": 3, "end_position": 8},
        {"entity_type": "EMAIL_ADDRESS", "entity_value": "jo@example.com", "start_position": 18, "end_position": 32}]}
    p = tmp_path / "synth.json"
    p.write_text(json.dumps([rec]), encoding="utf-8")
    return p


def test_eval_detect_transform_scores_the_text_in_that_form(tmp_path, capsys):
    # the titled-name rule needs a capital letter: it finds "Smith" as written, not lower-cased
    gold = _presidio_titled(tmp_path)
    results = {}
    for form in ("none", "lower"):
        assert main(["eval-detect", str(gold), "--format", "presidio", "--masker", "dlp", "--transform", form,
                     "--json"]) == 0
        results[form] = json.loads(capsys.readouterr().out)
    assert results["none"]["per_type"]["PERSON"]["mention_recall"] == 1.0
    assert results["lower"]["per_type"]["PERSON"]["mention_recall"] == 0.0
    assert results["lower"]["per_type"]["EMAIL_ADDRESS"]["mention_recall"] == 1.0
    assert results["lower"]["transform"] == "lower" and "precision" in results["lower"]
    for key in ("per_type", "masked_token_share", "precision"):
        assert key in results["none"]


CALL = "Well, Bill, uh, my daughter is a nurse in Dallas, she watches the Cowboys."


def _call_gold():
    g = [GoldSpan(*at(CALL, "Bill"), "PERSON", "DIRECT", "c:PERSON:bill"),
         GoldSpan(*at(CALL, "nurse"), "OCCUPATION", "QUASI", "c:OCCUPATION:nurse"),
         GoldSpan(*at(CALL, "Dallas"), "LOCATION", "QUASI", "c:LOCATION:dallas"),
         GoldSpan(*at(CALL, "Cowboys"), "ORGANIZATION", "OPTIONAL", "c:ORGANIZATION:cowboys")]
    return [GoldDocument(Document("c-1", CALL, group="c"), g)]


def _call_span(surface, label):
    return Span(*at(CALL, surface), label, "test")


@pytest.mark.parametrize("spans,direct,quasi,precision,type_acc", [
    # everything right; the OPTIONAL "Cowboys" masked costs no precision
    ([("Bill", "PERSON_NAME"), ("nurse", "OCCUPATION"), ("Dallas", "LOCATION"), ("Cowboys", "ORGANIZATION_NAME")],
     1.0, 1.0, 1.0, 1.0),
    # OPTIONAL left: no miss; "uh" masked: a false positive; Dallas typed as a person: a wrong type
    ([("Bill", "PERSON_NAME"), ("uh", "ORGANIZATION_NAME"), ("nurse", "OCCUPATION"), ("Dallas", "PERSON_NAME")],
     1.0, 1.0, 0.75, 2 / 3),
    # the span takes the greeting with the name: one word outside the gold
    ([("Well, Bill", "PERSON_NAME")], 1.0, 0.0, 0.5, 1.0),
    ([], 0.0, 0.0, None, None),
])
def test_switchboard_pii_scores(spans, direct, quasi, precision, type_acc):
    golds = _call_gold()
    detected = [[_call_span(s, label) for s, label in spans]]
    r = evaluate(golds, detected, "switchboard_pii")
    assert r["DIRECT"]["mention_recall"] == direct and r["QUASI"]["mention_recall"] == quasi
    assert r["QUASI"]["mentions"] == 2  # the OPTIONAL mention is not required
    assert r["precision"] == precision
    assert r["type_accuracy"] == type_acc
    assert set(r["per_type"]) == {"PERSON", "OCCUPATION", "LOCATION"}


def test_false_positive_words_and_label_map():
    golds = _call_gold()
    detected = [[_call_span("uh", "ORGANIZATION_NAME"), _call_span("Bill", "PERSON_NAME"),
                 _call_span("she", "PERSON_NAME"), _call_span("Cowboys", "ORGANIZATION_NAME")]]
    assert false_positive_words(golds, detected) == {"uh": 1, "she": 1}
    # every label a default masker writes has a gold type (or the type accuracy would count it wrong)
    from veil.mask.neural.data import TYPE_TO_LABEL
    from veil.registry import detectors

    assert set(TYPE_TO_LABEL.values()) - {"URL"} <= set(LABEL_TO_GOLD_TYPE)
    for det in (detectors.get(n) for n in detectors.names()):
        if det.label not in ("USERNAME", "URL"):
            assert det.label in LABEL_TO_GOLD_TYPE, det.label


def test_cli_json_switchboard_pii(tmp_path, capsys):
    rec = {"id": "c-1", "text": "Call me at 555 123 4567 in nineteen ninety", "spans": [
        {"start": 11, "end": 23, "type": "NUMBER", "class": "DIRECT", "value": "555 123 4567"},
        {"start": 27, "end": 42, "type": "DATE_TIME", "class": "QUASI", "value": "nineteen ninety"}]}
    p = tmp_path / "gold.jsonl"
    p.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    assert main(["eval-detect", str(p), "--format", "switchboard_pii", "--masker", "dlp", "--transform", "asr",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"DIRECT", "QUASI", "per_type", "masked_token_share", "precision", "type_accuracy",
                        "transform", "maskers", "documents"}
    assert out["DIRECT"]["mention_recall"] == 1.0 and out["type_accuracy"] is not None
