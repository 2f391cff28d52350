"""The detector's gold sources: SGD slots read as typed gold, folds by hash, gold windows, generated things."""

import json

import pytest

from veil.errors import InputError
from veil.mask.gold import GoldDocument, GoldSpan, read_gold, read_sgd
from veil.mask.neural import gold_sources as gs
from veil.mask.neural.things import generate, thing_lists
from veil.types import Document

TURNS = [
    {"id": "1_001-0", "dialogue": "1_001", "services": ["Banks_1"], "speaker": "USER",
     "text": "Send fifty dollars to Amir from checking.", "slots": [
         {"start": 5, "end": 18, "slot": "amount", "service": "Banks_1"},
         {"start": 22, "end": 26, "slot": "recipient_account_name", "service": "Banks_1"},
         {"start": 32, "end": 40, "slot": "account_type", "service": "Banks_1"}]},
    {"id": "1_002-0", "dialogue": "1_002", "services": ["Restaurants_2"], "speaker": "USER",
     "text": "A table at Sino in San Jose.", "slots": [
         {"start": 11, "end": 15, "slot": "restaurant_name", "service": "Restaurants_2"},
         {"start": 19, "end": 27, "slot": "location", "service": "Restaurants_2"}]},
]
CLASSES = {"amount": ["MONEY", "QUASI"], "recipient_account_name": ["PERSON", "DIRECT"], "account_type": None,
           "restaurant_name": ["ORGANIZATION", "OPTIONAL"], "location": ["LOCATION", "QUASI"]}


@pytest.fixture
def sgd_file(tmp_path):
    (tmp_path / "slot_classes.json").write_text(json.dumps(CLASSES))
    path = tmp_path / "dev.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in TURNS))
    return path


def test_sgd_slots_become_typed_gold(sgd_file):
    docs = read_gold(sgd_file, "sgd")
    bank = docs[0]
    assert bank.doc.group == "1_001"
    got = [(bank.doc.text[g.start:g.end], g.label, g.identifier_type) for g in bank.spans]
    # a null slot ("checking") is no span: masking it costs precision like any other word
    assert got == [("fifty dollars", "MONEY", "QUASI"), ("Amir", "PERSON", "DIRECT")]


def test_sgd_families_filter_and_missing_table(sgd_file, tmp_path):
    assert [d.doc.id for d in read_sgd(sgd_file, frozenset({"Restaurants"}))] == ["1_002-0"]
    (tmp_path / "slot_classes.json").unlink()
    with pytest.raises(InputError, match="slot_classes.json"):
        read_sgd(sgd_file)


def test_sgd_unknown_slot_is_an_error(sgd_file, tmp_path):
    (tmp_path / "slot_classes.json").write_text(json.dumps({k: v for k, v in CLASSES.items() if k != "location"}))
    with pytest.raises(InputError, match="location"):
        read_sgd(sgd_file)


def test_folds_are_stable_and_cover_all():
    folds = [gs.fold_of(str(2000 + i)) for i in range(500)]
    assert folds == [gs.fold_of(str(2000 + i)) for i in range(500)]
    share = {f: folds.count(f) / 500 for f in gs.FOLDS}
    assert 0.12 < share["frozen"] < 0.28 and 0.12 < share["dev"] < 0.28 and share["train"] > 0.5


def test_windows_teach_direct_and_quasi_and_ignore_optional():
    import random

    text1, text2 = "my name is Jo Ann", "we watched Dallas on TV in Austin"
    golds = [GoldDocument(Document(id="c-0", text=text1, group="c"), [GoldSpan(11, 17, "PERSON", "DIRECT")]),
             GoldDocument(Document(id="c-1", text=text2, group="c"),
                          [GoldSpan(11, 17, "MISC", "OPTIONAL"), GoldSpan(27, 33, "LOCATION", "QUASI")])]
    seen = set()
    for ex in gs._windows(golds, 40, random.Random(0), "t", max_turns=2):
        for s, e, k in ex.spans:
            seen.add((ex.text[s:e], k))
        for s, e in ex.ignore:
            seen.add((ex.text[s:e], "ignored"))
    assert seen == {("Jo Ann", "PER"), ("Austin", "LOC"), ("Dallas", "ignored")}


def test_generated_things_are_seeded_and_only_names_are_spans():
    a, b = generate(200, 3), generate(200, 3)
    assert a == b and a != generate(200, 4)
    words = {w.lower() for ws in thing_lists().values() for w in ws}
    named = 0
    for text, spans in a:
        for s, e, k in spans:
            assert k == "PER" and text[s:e].lower() not in words
            named += 1
    assert named > 10
