"""Grouped documents (veil.run.groups): a call's records are one document for numbering and substitutes."""

from __future__ import annotations

import json

import pytest

import veil
from veil.cli import main
from veil.errors import VeilError
from veil.io.records import read_filled, read_masked
from veil.run.groups import batches_of, join_masked, split_filled, units_of
from veil.types import Document, FilledDocument, MaskedDocument, Placeholder, Substitution

CALL = [
    ("c1", "Thanks for calling, this is Maria speaking."),
    ("c1", "Hi Maria, my number is 415-555-0199."),
    ("c1", "Sorry, was that 415-555-0199? And your e-mail, Maria?"),
    ("c2", "Hello, call me on 415-555-0199 please."),
    ("c2", "Sure. I have 212-555-0142 too."),
    ("c3", "nothing personal here"),
]


def _docs(pairs):
    return [Document(str(i), t, group=g) for i, (g, t) in enumerate(pairs)]


def test_units_are_contiguous_groups_and_a_group_that_reappears_is_an_error():
    units = list(units_of(_docs(CALL), grouped=True))
    assert [[d.id for d in u] for u in units] == [["0", "1", "2"], ["3", "4"], ["5"]]
    assert [len(u) for u in units_of(_docs(CALL), grouped=False)] == [1] * 6
    with pytest.raises(VeilError, match="'c1' appears again"):
        list(units_of(_docs(CALL + [("c1", "late")]), grouped=True))
    with pytest.raises(VeilError, match="no group value"):
        list(units_of([Document("x", "t")], grouped=True))


def test_batches_never_split_a_group():
    units = list(units_of(_docs(CALL), grouped=True))
    for size in (1, 2, 3, 4, 100):
        batches = list(batches_of(units, size))
        assert [u for b in batches for u in b] == units
        assert all(sum(len(u) for u in b) <= size or len(b) == 1 for b in batches)


def test_split_filled_cuts_at_the_separators_with_escapes_and_mask_runs():
    unit = [MaskedDocument("a", "hi [MASK] [MASK] and [\\MASK]", (), "numbered", group="g"),
            MaskedDocument("b", "", (), "numbered", group="g"),
            MaskedDocument("c", "[PERSON_NAME_1] said [\\MASK]", (Placeholder(0, 15, "PERSON_NAME", "PERSON_NAME_1", "t"),),
                           "numbered", group="g")]
    joined = join_masked(unit)
    assert joined.text == "hi [MASK] [MASK] and [\\MASK]\n\n[PERSON_NAME_1] said [\\MASK]"
    text = "hi big dog and [MASK]\n\nAnna said [MASK]"
    subs = (Substitution("g", "[MASK] [MASK]", "MASK#0", "MASK", "big dog", 3, 10),
            Substitution("g", "[PERSON_NAME_1]", "PERSON_NAME_1", "PERSON_NAME", "Anna", 23, 27))
    out = split_filled(unit, joined, FilledDocument("g", text, subs, group="g"))
    assert [d.text for d in out] == ["hi big dog and [MASK]", "", "Anna said [MASK]"]
    assert out[2].substitutions[0] == Substitution("c", "[PERSON_NAME_1]", "PERSON_NAME_1", "PERSON_NAME", "Anna", 0, 4)
    assert out[0].substitutions[0].start == 3 and out[0].substitutions[0].end == 10
    with pytest.raises(VeilError, match="separator"):
        split_filled(unit, joined, FilledDocument("g", text.replace("\n", " ", 1), subs, group="g"))


def _write(path, pairs, text_field="text"):
    path.write_text("".join(json.dumps({"id": f"u{i}", text_field: t, "call": g}) + "\n"
                            for i, (g, t) in enumerate(pairs)), encoding="utf-8")


def test_cli_group_field_shares_keys_and_substitutes_within_a_call_only(tmp_path):
    src, masked, filled = tmp_path / "in.jsonl", tmp_path / "m.jsonl", tmp_path / "f.jsonl"
    _write(src, CALL)
    assert main(["mask", str(src), "-o", str(masked), "--masker", "dlp", "--group-field", "call", "--no-progress"]) == 0
    m = {d.id: d for d in read_masked(masked)}
    # one call: the same phone number is PHONE_NUMBER_1 in both of its utterances; another call counts again
    assert "[PHONE_NUMBER_1]" in m["u1"].text and "[PHONE_NUMBER_1]" in m["u2"].text
    assert "[PHONE_NUMBER_1]" in m["u3"].text and "[PHONE_NUMBER_2]" in m["u4"].text
    assert main(["fill", str(masked), "-o", str(filled), "--filler", "faker", "--group-field", "call",
                 "--no-progress"]) == 0
    f = {d.id: d for d in read_filled(filled)}
    sub = {(d.id, s.key): s.substitute for d in f.values() for s in d.substitutions}
    assert sub[("u1", "PHONE_NUMBER_1")] == sub[("u2", "PHONE_NUMBER_1")]  # one substitute across the call
    assert sub[("u1", "PHONE_NUMBER_1")] != sub[("u3", "PHONE_NUMBER_1")]  # calls are independent
    assert "415-555-0199" not in filled.read_text() and "212-555-0142" not in filled.read_text()
    assert f["u5"].text == "nothing personal here"
    for d in f.values():  # substitution offsets are the record's own
        assert all(d.text[s.start:s.end] == s.substitute for s in d.substitutions)


def test_cli_group_that_reappears_is_refused_before_any_work(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    _write(src, CALL + [("c1", "Maria again")])
    assert main(["mask", str(src), "-o", str(tmp_path / "m.jsonl"), "--masker", "dlp", "--group-field", "call"]) == 2
    assert "appears again after other groups" in capsys.readouterr().err
    assert not (tmp_path / "m.jsonl").exists()


def test_api_list_of_lists_is_groups_and_single_calls_are_independent():
    groups = [[t for g, t in CALL if g == c] for c in ("c1", "c2")]
    masked = veil.mask(groups, maskers=["dlp"])
    assert [[m.id for m in g] for g in masked] == [["0.0", "0.1", "0.2"], ["1.0", "1.1"]]
    assert "[PHONE_NUMBER_1]" in masked[0][1].text and "[PHONE_NUMBER_1]" in masked[0][2].text
    filled = veil.fill(masked, seed=4, details=True)
    a = {s.key: s.substitute for d in filled[0] for s in d.substitutions}
    assert [s.substitute for s in filled[0][1].substitutions] == [s.substitute for s in filled[0][2].substitutions]
    assert veil.anonymize(groups, maskers=["dlp"], seed=4) == [[d.text for d in g] for g in filled]
    assert a
    # repeated single-text calls: independent draws; seed= makes them reproducible
    text = "call me on 415-555-0199"
    draws = {veil.anonymize(text, maskers=["dlp"]) for _ in range(4)}
    assert len(draws) > 1
    assert veil.anonymize(text, maskers=["dlp"], seed=9) == veil.anonymize(text, maskers=["dlp"], seed=9)


def test_api_refuses_dicts_and_bytes_at_the_call():
    with pytest.raises(TypeError, match="dict"):
        veil.anonymize({"text": "Maria", "id": 1})
    with pytest.raises(TypeError, match="bytes"):
        veil.anonymize(b"Maria called")
    with pytest.raises(TypeError, match="bytes"):
        veil.mask([b"Maria called"], maskers=["dlp"])
