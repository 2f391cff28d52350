"""`veil verify`: planted survivors of every kind are found; veil's own mask + fill output verifies clean."""

import json
from pathlib import Path

import pytest

from bench.verify_planted import plant, removed_by_label
from veil.audit.verify import TextIndex, canonical, find_survivors, removed, value_keys, verify
from veil.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "calls.jsonl"


@pytest.mark.parametrize("value, text, form", [
    ("Maria Lopez", "then Maria Lopez called", "verbatim"),
    ("Maria Lopez", "then maria   LOPEZ, called", "normalised"),
    ("Maria Lopez", "then Maria-Lopez called", "normalised"),
    ("Lopez", "spell it l o p e z please", "spelled"),
    ("Lopez", "spell it L-O-P-E-Z please", "spelled"),
    ("Maria Lopez", "it's L-O-P-E-Z, yes", "part, spelled"),
    ("Maria Lopez", "ask Lopez about it", "part"),
    ("(415) 555-0199", "call four one five five five five zero one nine nine now", "spoken"),
    ("(415) 555-0199", "call four one five five five five oh one nine nine now", "spoken"),
    ("(415) 555-0199", "call 415.555.0199 now", "normalised"),
    ("maria.lopez@example.com", "write to maria dot lopez at example dot com today", "spoken"),
    ("1990", "born in nineteen ninety", "spoken"),
    ("five five five oh one", "dial 55501 now", "spoken"),
])
def test_each_form_is_found(value, text, form):
    values, _ = removed([("PERSON_NAME" if "Maria" in value else "X", value)])
    found = find_survivors(text, values, "d", "text")
    assert [f.form for f in found] == [form], found


@pytest.mark.parametrize("value, text", [
    ("Maria Lopez", "Mariana Lopezz and maria-lopezz"),  # word boundaries
    ("Northwind Bank", "the bank is closed"),  # a common word of a longer value is not looked for
    ("Ann", "Annabel and joanne"),
    ("Maria Smith", "ask Smith about it"),  # not a name (type X), and "smith" is a common word
])
def test_nothing_else_is_found(value, text):
    assert find_survivors(text, removed([("X", value)])[0], "d", "text") == []


def test_short_values_are_skipped_and_keys_deduplicated():
    values, skipped = removed([("A", "5"), ("P", "Tom"), ("P", "TOM"), ("P", "tom.")])
    assert skipped == 1 and [v.value for v in values] == ["Tom"]
    assert value_keys("Tom") == [("tom", "text")]
    assert value_keys("Northwind Bank", "ORGANIZATION_NAME") == [("northwindbank", "text"), ("northwind", "part")]
    assert TextIndex("Straße 5").joined == canonical("Straße 5") == "strasse5"
    assert canonical("five five five oh one") == "55501" and canonical("Ｍаría") == "maria"


def test_a_title_kept_by_the_fill_is_no_part_of_a_name():
    assert value_keys("Governor Mario", "PERSON_NAME") == [("governormario", "text"), ("mario", "part")]


def _mask_and_fill(tmp_path):
    masked, filled = tmp_path / "masked.jsonl", tmp_path / "filled.jsonl"
    assert main(["mask", str(EXAMPLES), "-o", str(masked), "-q"]) == 0
    assert main(["fill", str(masked), "-o", str(filled), "--filler", "faker", "-q"]) == 0
    return masked, filled


def test_veil_mask_and_fill_output_verifies_clean(tmp_path, capsys):
    masked, filled = _mask_and_fill(tmp_path)
    assert main(["verify", str(EXAMPLES), str(filled), "--masked", str(masked)]) == 0
    assert "CLEAN" in capsys.readouterr().out
    assert main(["verify", str(EXAMPLES), str(filled), "--json"]) == 0  # the values from masking again
    r = json.loads(capsys.readouterr().out)
    assert r["clean"] and r["documents"] == 12 and r["values"] > 10
    assert r["files"] == ["filled.jsonl", "filled.jsonl.substitutions.jsonl", "filled.jsonl.veil.json"]


def test_planted_survivors_are_each_found(tmp_path, capsys):
    masked, filled = _mask_and_fill(tmp_path)
    plant(EXAMPLES, masked, filled)
    name = removed_by_label(EXAMPLES, masked)["c1-2"]["PERSON_NAME"]
    assert main(["verify", str(EXAMPLES), str(filled), "--masked", str(masked), "--json"]) == 1
    r = json.loads(capsys.readouterr().out)
    assert not r["clean"] and "value" not in r["survivors"][0]  # no values without --show-values
    seen = {(s["doc"], s["field"], s["form"]) for s in r["survivors"]}
    for expected in [("c1-2", "text", "verbatim"), ("c1-2", "text", "normalised"), ("c1-2", "text", "spelled"),
                     ("c1-8", "text", "spoken"), ("c1-6", "text", "normalised"), ("c1-6", "text", "spoken"),
                     ("c1-2", "notes", "verbatim"),
                     ("*", "filled.jsonl.veil.json", "verbatim"), ("c1-2", "filled.jsonl.partial:text", "verbatim")]:
        assert expected in seen, (expected, sorted(seen))
    assert not any(s["doc"] == "c1-1" for s in r["survivors"])
    spoken_c18 = [s for s in r["survivors"] if s["doc"] == "c1-8" and s["form"] == "spoken"]
    assert {s["label"] for s in spoken_c18} == {"PHONE_NUMBER", "EMAIL_ADDRESS"}
    # the substitute equal to the name is judged with the chance matches (one in a small corpus: by chance),
    # in the text and in the substitutions file alike; not a survivor
    assert not any(s["field"].endswith("substitutions.jsonl:substitute") for s in r["survivors"])
    assert [(s["doc"], s["label"]) for s in r["substitutes_equal_original"]] == [("c1-2", "PERSON_NAME")]
    assert r["substitutes_equal_original"][0]["pool"] > 1 and r["chance"]["explained"]
    assert all(s["start"] < s["end"] for s in r["survivors"])
    # the table; values only when asked
    assert main(["verify", str(EXAMPLES), str(filled), "--masked", str(masked)]) == 1
    out = capsys.readouterr().out
    assert "FOUND" in out and name not in out and "substitute(s) equal an original value" in out
    assert main(["verify", str(EXAMPLES), str(filled), "--masked", str(masked), "--show-values"]) == 1
    assert name in capsys.readouterr().out


def test_usage_errors_exit_2(tmp_path, capsys):
    assert main(["verify", str(EXAMPLES), str(tmp_path / "none.jsonl"), "--masked", str(EXAMPLES)]) == 2
    assert "no such filled file" in capsys.readouterr().err
    masked, filled = _mask_and_fill(tmp_path)
    assert main(["verify", str(EXAMPLES), str(filled), "--masked", str(masked), "--masker", "dlp"]) == 2
    assert "without --masked" in capsys.readouterr().err
    other = tmp_path / "other.jsonl"
    other.write_text('{"id": "zz", "text": "hello"}\n')
    assert main(["verify", str(other), str(filled), "--masked", str(masked)]) == 2
    assert "no record with the same id" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["verify", str(EXAMPLES)])
    assert e.value.code == 2
