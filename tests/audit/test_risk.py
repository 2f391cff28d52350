import json
import math

import pytest

from veil.audit import risk
from veil.audit.risk import MissedPI, ScoreTable, default_table, describe, score_document
from veil.errors import InputError, VeilError
from veil.mask.gold import GoldDocument, GoldSpan
from veil.types import Document, Span


# --- the score table ----------------------------------------------------------------------------------

@pytest.mark.parametrize("tag, score", [
    ("MISSED_PERSON_NAME", 5), ("PERSON_NAME", 5), ("MISSED_EMAIL", 4), ("EMAIL_ADDRESS", 4),
    ("MISSED_ORGANIZATION_NAME", 0), ("MISSED_ORGANIZATION_NAME_SPEAKER", 2), ("ORG_NAME_SPEAKER", 2),
    ("MISSED_PRODUCT", 0), ("MISSED_PRODUCT_SPEAKER", 2), ("MISSED_LOCATION", 2), ("MISSED_US_STATE", 1),
    ("MISSED_SSN", 5), ("MISSED_PHONE", 4), ("PHONE_NUMBER", 4), ("MISSED_ADDRESS", 4), ("STREET_ADDRESS", 4),
    ("MISSED_URL", 2), ("MISSED_AGE", 1), ("MISSED_DATE_OF_BIRTH", 3), ("MISSED_SWIFT_CODE", 1),
    ("MISSED_ROUTING_NUMBER", 3), ("MISSED_VAT_NUMBER", 2), ("MISSED_GENERIC_ID", 4),
])
def test_table6_scores(tag, score):
    assert default_table().score(tag) == score


# The paper's Table 6 (Appendix A), transcribed row by row: missed-PI tag -> score.
TABLE6 = {
    "EMAIL": 4, "LOCATION": 2, "LOCATION_COORD": 4, "US_STATE": 1, "PERSON_NAME": 5, "PHONE": 4, "ADDRESS": 4,
    "USER_NAME": 3, "DOMAIN": 1, "HTTP_COOKIE": 1, "ORGANIZATION_NAME": 0, "ORGANIZATION_NAME_SPEAKER": 2,
    "PRODUCT": 0, "PRODUCT_SPEAKER": 2, "STORAGE_SIGNED_POLICY": 2, "STORAGE_SIGNED_URL": 3, "URL": 2, "AGE": 1,
    "DATE_OF_BIRTH": 3, "ICD9_CODE": 2, "ICD10_CODE": 2, "MEDICAL_RECORD_NUMBER": 5, "MEDICAL_TERM": 1,
    "ADVERTISING_ID": 3, "GENERIC_ID": 4, "ICCID_NUMBER": 4, "IMEI_HARDWARE_ID": 4, "IMSI_ID": 4, "IP_ADDRESS": 3,
    "MAC_ADDRESS": 3, "MAC_ADDRESS_LOCAL": 3, "PASSPORT": 5, "VAT_NUMBER": 2, "VEHICLE_IDENTIFICATION_NUMBER": 5,
    "CREDIT_CARD_NUMBER": 5, "CREDIT_CARD_TRACK_NUMBER": 5, "IBAN_CODE": 5, "SWIFT_CODE": 1, "ROUTING_NUMBER": 3,
    "SSN": 5,
}


def test_the_data_file_is_table6_exactly():
    t = default_table()
    assert {tag: row.score for tag, row in t.rows.items()} == TABLE6
    assert all(t.score("MISSED_" + tag) == score for tag, score in TABLE6.items())


@pytest.mark.parametrize("tag, partial", [
    ("MISSED_PERSON_NAME_PARTIAL", 3),  # rounds up: ceil(5/2)
    ("MISSED_EMAIL_PARTIAL", 1),  # the paper's worked example: floor(3/2) = 1
    ("MISSED_LOCATION_PARTIAL", 1),  # 2 -> 1
    ("MISSED_USER_NAME_PARTIAL", 1),  # floor(3/2)
    ("MISSED_PHONE_PARTIAL", 2),  # floor(4/2)
    ("MISSED_US_STATE_PARTIAL", 0),  # floor(1/2)
    ("MISSED_SSN_PARTIAL", 3),  # direct identifiers of score 5 round up
    ("MISSED_ORGANIZATION_NAME_SPEAKER_PARTIAL", 1),
])
def test_partial_halves_and_rounds_as_the_paper(tag, partial):
    t = default_table()
    assert t.score(tag) == partial
    base = tag.removesuffix("_PARTIAL")
    assert t.score(base, partial=True) == partial


def test_every_partial_is_at_most_half_rounded_up():
    t = default_table()
    for row in t.rows.values():
        assert row.partial_score <= math.ceil(row.score / 2)


def test_unknown_tag_is_an_error():
    with pytest.raises(VeilError, match="unknown infoType"):
        default_table().score("MISSED_FAVOURITE_COLOUR")


def test_custom_table_rounding_rule_and_bad_rows(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text("# comment\ntag,score,partial_rounding,partial_score\nFOO,5,down,\nBAR,3,up,\nBAZ,4,down,0\n")
    t = ScoreTable.load(p)
    assert (t.score("FOO_PARTIAL"), t.score("BAR_PARTIAL"), t.score("BAZ_PARTIAL")) == (2, 2, 0)
    p.write_text("tag,score\nFOO,7\n")
    with pytest.raises(InputError, match=":2"):
        ScoreTable.load(p)


# --- documents -------------------------------------------------------------------------------------------

def test_paper_worked_example_total_6():
    # Table 2 of the paper: Dunder Mifflin (speaker's org), Green (partial name), M-K two one (partial
    # email), Staples (an org that is only a topic: score 0)
    missed = [MissedPI("Dunder Mifflin", "MISSED_ORGANIZATION_NAME_SPEAKER"),
              MissedPI("Green", "MISSED_PERSON_NAME_PARTIAL"),
              MissedPI("staples", "MISSED_ORGANIZATION_NAME"),
              MissedPI("M-K two one", "MISSED_EMAIL_PARTIAL")]
    r = score_document("table2", missed)
    assert r.score == 6
    assert {p.text: p.score for p in r.pieces} == {"Dunder Mifflin": 2, "Green": 3, "staples": 0, "M-K two one": 1}


def test_no_double_counting_of_one_piece_of_pi():
    four = [MissedPI("Marc", "MISSED_PERSON_NAME_PARTIAL")] * 4
    assert score_document("d", four).score == 3  # the paper: 3, not 12
    variants = [MissedPI("Mark", "PERSON_NAME_PARTIAL", entity="mark"),
                MissedPI("Marc", "PERSON_NAME_PARTIAL", entity="mark"),
                MissedPI("M-A-R-K", "PERSON_NAME_PARTIAL", entity="mark")]
    r = score_document("d", variants)
    assert r.score == 3 and r.pieces[0].mentions == 3
    # case and edge punctuation do not make a new piece; a whole miss beats a partial one
    r = score_document("d", [MissedPI("Marc,", "PERSON_NAME_PARTIAL"), MissedPI("marc", "PERSON_NAME")])
    assert r.score == 5 and len(r.pieces) == 1
    # different pieces add up
    assert score_document("d", [MissedPI("Marc", "PERSON_NAME"), MissedPI("Ann", "PERSON_NAME")]).score == 10


# --- corpus statistics ------------------------------------------------------------------------------------

def test_describe_and_pass_criterion():
    s = describe([0, 0, 2, 8])
    assert s["documents"] == 4 and s["mean"] == 2.5
    assert s["std"] == pytest.approx(math.sqrt((6.25 + 6.25 + 0.25 + 30.25) / 3))  # sample std, as pandas
    assert s["p95"] == pytest.approx(2 + 0.85 * 6)  # linear interpolation between 2 and 8
    assert s["max"] == 8 and s["mean_plus_std"] == pytest.approx(2.5 + s["std"])
    assert s["pass"] is False
    assert describe([0, 0, 2, 6])["pass"] is True  # 2 + 2.83 < 5
    ok = describe([0, 1, 0, 2, 1])
    assert ok["pass"] is True and ok["mean_plus_std"] < 5
    assert describe([4.9])["pass"] is True and describe([5])["pass"] is False  # strictly below 5
    with pytest.raises(VeilError):
        describe([])


def test_group_table_has_groups_then_total_and_table4_layout():
    risks = [score_document("a", [], group="calls"), score_document("b", [MissedPI("x", "PERSON_NAME")], group="calls"),
             score_document("c", [MissedPI("y", "URL")], group="meetings")]
    rows = risk.group_table(risks)
    assert [r["group"] for r in rows] == ["calls", "meetings", "Total"]
    assert rows[-1]["documents"] == 3 and rows[-1]["max"] == 5
    md = risk.format_table(rows)
    assert md.splitlines()[0].startswith("| Context | Count | Mean | STD | P95 | Max | μ+σ")
    assert "| Total | 3 | 2.3 |" in md
    # one group only: just the Total row
    assert [r["group"] for r in risk.group_table(risks[:2])] == ["Total"]
    # a group named 0 or "" is its own group, not "all"
    zero = [score_document("a", [], group=0), score_document("b", [], group=""), score_document("c", [])]
    assert [r["group"] for r in risk.group_table(zero)] == ["0", "", "all", "Total"]


# --- automatic mode ---------------------------------------------------------------------------------------

TEXT = "Mr John Smith of Acme Corp met Jane Doe in Oslo on 3 May 2001. Smith works for Acme Corp."


def _g(sub, label, itype="DIRECT", entity=None, nth=0):
    start = -1
    for _ in range(nth + 1):
        start = TEXT.index(sub, start + 1)
    return GoldSpan(start, start + len(sub), label, itype, entity)


def _mask(sub, nth=0, label="X"):
    start = -1
    for _ in range(nth + 1):
        start = TEXT.index(sub, start + 1)
    return Span(start, start + len(sub), label, "test")


def test_automatic_mode_missed_partial_protected():
    gold = [GoldDocument(Document("d1", TEXT, meta={"dataset_type": "train"}), [
        _g("Mr John Smith", "PERSON", entity="e1"),  # masked "John Smith" only: "Mr" is not PI -> protected
        _g("Acme Corp", "ORG", "QUASI", "e2"),  # masked "Acme" only -> partial (ORG speaker 2 -> 1)
        _g("Jane Doe", "PERSON", "DIRECT", "e3"),  # masked "Jane" -> partial name (3)
        _g("Oslo", "LOC", "QUASI", "e4"),  # missed -> 2
        _g("3 May 2001", "DATETIME", "QUASI", "e5"),  # missed, but Table 6 has no DATE -> unscored
        _g("Smith", "PERSON", "DIRECT", "e1", nth=1),  # masked
        _g("Acme Corp", "ORG", "QUASI", "e2", nth=1),  # missed whole: the piece e2 now scores 2
        _g("works", "MISC", "NO_MASK", "e6"),  # NO_MASK is not PI to protect
    ])]
    masks = [[_mask("John Smith"), _mask("Acme"), _mask("Jane"), _mask("Smith", nth=1)]]
    [r] = risk.audit_against_gold(gold, masks, "tab", group_by="dataset_type")
    by_tag = {p.tag + ("_PARTIAL" if p.partial else ""): p for p in r.pieces}
    assert set(by_tag) == {"ORGANIZATION_NAME_SPEAKER", "PERSON_NAME_PARTIAL", "LOCATION"}
    assert by_tag["PERSON_NAME_PARTIAL"].text == "Doe"
    assert by_tag["ORGANIZATION_NAME_SPEAKER"].mentions == 2
    assert r.score == 2 + 3 + 2 and r.group == "train"
    assert [m.gold_label for m in r.unscored] == ["DATETIME"]


def test_automatic_mode_type_map_override_and_unknown_type():
    gold = [GoldDocument(Document("d", TEXT), [_g("3 May 2001", "DATETIME", "QUASI", "e5")])]
    tm = risk.parse_type_map(["DATETIME=DATE_OF_BIRTH"])
    [r] = risk.audit_against_gold(gold, [[]], "tab", type_map=tm)
    assert r.score == 3
    gold = [GoldDocument(Document("d", TEXT), [GoldSpan(0, 2, "WEIRD")])]
    with pytest.raises(VeilError, match="WEIRD"):
        risk.audit_against_gold(gold, [[]], "presidio")
    with pytest.raises(VeilError):
        risk.parse_type_map(["DATETIME"])




# --- the CLI -----------------------------------------------------------------------------------------------

def _presidio_fixture(path):
    records = [
        {"full_text": "Alice wrote to john.doe@example.com today.", "spans": [
            {"entity_type": "PERSON", "entity_value": "Alice", "start_position": 0, "end_position": 5},
            {"entity_type": "EMAIL_ADDRESS", "entity_value": "john.doe@example.com", "start_position": 15,
             "end_position": 35}]},
        {"full_text": "Mail bob@example.org please.", "spans": [
            {"entity_type": "EMAIL_ADDRESS", "entity_value": "bob@example.org", "start_position": 5,
             "end_position": 20}]},
    ]
    path.write_text(json.dumps(records))
    return path


def test_cli_json_shape(tmp_path, capsys):
    from veil.cli import main

    gold = _presidio_fixture(tmp_path / "synth.json")
    details = tmp_path / "details.jsonl"
    assert main(["audit", "risk", str(gold), "--format", "presidio", "--masker", "dlp", "--json",
                 "--details", str(details)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out) == ["documents", "mean", "std", "p95", "max", "mean_plus_std", "pass"]
    # the DLP masker finds both emails and no names: Alice (5) is missed in document 0
    assert out["documents"] == 2 and out["max"] == 5 and out["mean"] == 2.5 and out["pass"] is False
    lines = [json.loads(x) for x in details.read_text().splitlines()]
    assert lines[0]["missed"] == [{"text": "Alice", "tag": "PERSON_NAME", "score": 5, "mentions": 1}]


def test_cli_table_and_out_dir(tmp_path, capsys):
    from veil.cli import main

    gold = _presidio_fixture(tmp_path / "synth.json")
    assert main(["audit", "risk", str(gold), "--format", "presidio", "--masker", "dlp",
                 "--out", str(tmp_path / "out")]) == 0
    text = capsys.readouterr().out
    assert "| Context | Count | Mean | STD | P95 | Max | μ+σ" in text and "FAILS" in text
    for name in ("risk_table.md", "risk_table.csv", "risk_by_tag.csv", "details.jsonl", "risk_hist.png"):
        assert (tmp_path / "out" / name).stat().st_size > 0


def test_cli_bad_input_is_a_clear_error(tmp_path, capsys):
    from veil.cli import main

    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["audit", "risk", str(bad), "--format", "presidio", "--masker", "dlp", "--json"]) == 2
    assert "bad.json" in capsys.readouterr().err


def test_cli_transform_audits_the_text_in_that_form(tmp_path, capsys):
    from veil.cli import main

    text = "Mr Smith wrote today."
    gold = tmp_path / "synth.json"
    gold.write_text(json.dumps([{"full_text": text, "spans": [
        {"entity_type": "PERSON", "entity_value": "Smith", "start_position": 3, "end_position": 8}]}]))
    scores = {}
    for form in ("none", "lower"):
        assert main(["audit", "risk", str(gold), "--format", "presidio", "--masker", "dlp", "--transform", form,
                     "--json"]) == 0
        scores[form] = json.loads(capsys.readouterr().out)["max"]
    assert scores == {"none": 0, "lower": 5}  # the titled-name rule needs the capital letter
