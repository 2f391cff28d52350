import json

import pytest

from veil.errors import InputError, VeilError
from veil.mask.gold import GoldSpan, read_gold


def _surfaces(gd):
    return [(gd.doc.text[s.start:s.end], s.label) for s in gd.spans]


def test_read_tab(tmp_path):
    text = "Mr John Smith lives in Oslo since 1990."
    rec = {"metadata": {"provenance": {"doc_id": "001-1", "applicant": "John Smith", "annotator": "a1"}},
           "text": text,
           "entities": [
               {"start_offset": 0, "end_offset": 13, "entity_type": "PERSON", "entity_id": "e1",
                "identifier_type": "DIRECT", "span_text": "Mr John Smith"},
               {"start_offset": 23, "end_offset": 27, "entity_type": "LOC", "entity_id": "e2",
                "identifier_type": "QUASI"},
               {"start_offset": 34, "end_offset": 38, "entity_type": "DATETIME", "entity_id": "e3",
                "identifier_type": "NO_MASK"}]}
    p = tmp_path / "tab.jsonl"
    p.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    [gd] = read_gold(p, "tab")
    assert gd.doc.id == "001-1" and gd.doc.meta["applicant"] == "John Smith"
    assert _surfaces(gd) == [("Mr John Smith", "PERSON"), ("Oslo", "LOC"), ("1990", "DATETIME")]
    assert gd.spans[0] == GoldSpan(0, 13, "PERSON", "DIRECT", "e1")


def test_read_presidio(tmp_path):
    recs = [{"full_text": "Mail bob@x.org now", "spans": [
        {"entity_type": "EMAIL_ADDRESS", "entity_value": "bob@x.org", "start_position": 5, "end_position": 14}]},
            {"full_text": "Nothing here", "spans": []}]
    p = tmp_path / "synth.json"
    p.write_text(json.dumps(recs), encoding="utf-8")
    docs = read_gold(p, "presidio")
    assert [_surfaces(d) for d in docs] == [[("bob@x.org", "EMAIL_ADDRESS")], []]


CONLL = """-DOCSTART- -X- O O

EU NNP I-NP I-ORG
rejects VBZ I-VP O
German JJ I-NP I-MISC
call NN I-NP O

Peter NNP I-NP I-PER
Blackburn NNP I-NP I-PER
Smith NNP I-NP B-PER

-DOCSTART- -X- O O

Paris NNP I-NP I-LOC
"""

WNUT = "Empire\tB-location\nState\tI-location\n=\tO\nESB\tB-location\n\nhi\tO\nBob\tI-person\n"


def test_read_conll_iob1_documents(tmp_path):
    p = tmp_path / "eng.train"
    p.write_text(CONLL, encoding="utf-8")
    docs = read_gold(p, "conll")
    assert [d.doc.text for d in docs] == ["EU rejects German call\nPeter Blackburn Smith", "Paris"]
    assert _surfaces(docs[0]) == [("EU", "ORG"), ("German", "MISC"), ("Peter Blackburn", "PER"), ("Smith", "PER")]
    assert _surfaces(docs[1]) == [("Paris", "LOC")]


def test_read_wnut_bio_one_document_per_sentence(tmp_path):
    p = tmp_path / "wnut.conll"
    p.write_text(WNUT, encoding="utf-8")
    docs = read_gold(p, "conll")
    assert _surfaces(docs[0]) == [("Empire State", "location"), ("ESB", "location")]
    assert _surfaces(docs[1]) == [("Bob", "person")]  # a stray I- starts an entity


@pytest.mark.parametrize("fmt,content,line", [
    ("tab", '{"text": "x"}\n', 1),
    ("tab", '{"text": "ab", "entities": []}\n\n', 2),
    ("tab", 'not json\n', 1),
    ("tab", '{"text": "ab", "entities": [{"start_offset": 0, "end_offset": 9, "entity_type": "X",'
            ' "entity_id": "e", "identifier_type": "QUASI"}]}\n', 1),
    ("presidio", '[{"full_text": "ab"}]', 1),
    ("conll", "EU NNP I-NP I-ORG\nrejects\n", 2),
    ("conll", "EU NNP I-NP X-ORG\n", 1),
    ("switchboard_pii", '{"id": "1-0", "text": "hi"}\n', 1),
    ("switchboard_pii", '{"id": "1-0", "text": "hi", "spans": []}\n{"id": "1-1", "text": "Dallas", "spans": '
                        '[{"start": 0, "end": 6, "type": "CITY", "class": "QUASI"}]}\n', 2),
    ("switchboard_pii", '{"id": "1-0", "text": "Dallas", "spans": [{"start": 0, "end": 6, "type": "LOCATION", '
                        '"class": "NO_MASK"}]}\n', 1),
    ("switchboard_pii", '{"id": "1-0", "text": "Dallas", "spans": [{"start": 0, "end": 9, "type": "LOCATION", '
                        '"class": "QUASI"}]}\n', 1),
])
def test_bad_input_names_the_line(tmp_path, fmt, content, line):
    p = tmp_path / "gold"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as e:
        read_gold(p, fmt)
    assert e.value.line == line


def test_bad_utf8_and_unknown_format(tmp_path):
    p = tmp_path / "gold"
    p.write_bytes(b'{"text": "ok", "entities": []}\n{"text": "\xff"}\n')
    with pytest.raises(InputError) as e:
        read_gold(p, "tab")
    assert e.value.line == 2
    with pytest.raises(VeilError):
        read_gold(p, "xml")
    with pytest.raises(InputError):
        read_gold(tmp_path / "missing.jsonl", "tab")


def test_read_switchboard_pii(tmp_path):
    recs = [{"id": "2733-43", "text": "we lived in Malaysia for T I", "spans": [
                {"start": 12, "end": 20, "type": "LOCATION", "class": "QUASI", "value": "Malaysia"},
                {"start": 25, "end": 28, "type": "ORGANIZATION", "class": "QUASI", "value": "T I"}]},
            {"id": "2733-44", "text": "Uh, the Soviet Union.", "spans": [
                {"start": 8, "end": 20, "type": "LOCATION", "class": "OPTIONAL", "value": "Soviet Union"}]},
            {"id": "2733-45", "text": "Um, all right.", "spans": []}]
    p = tmp_path / "val_gold.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    docs = read_gold(p, "switchboard_pii")
    assert [d.doc.id for d in docs] == ["2733-43", "2733-44", "2733-45"]
    assert {d.doc.group for d in docs} == {"2733"}
    assert _surfaces(docs[0]) == [("Malaysia", "LOCATION"), ("T I", "ORGANIZATION")]
    assert [s.identifier_type for s in docs[0].spans + docs[1].spans] == ["QUASI", "QUASI", "OPTIONAL"]
    assert docs[0].spans[1].entity_id == "2733:ORGANIZATION:t i"
    assert docs[2].spans == []


@pytest.mark.slow
def test_real_gold_sets(shared_data):
    tab = read_gold(shared_data / "tab" / "tab_train_dev.jsonl", "tab")
    assert len(tab) == 113
    for gd in tab:
        for s in gd.spans:
            assert gd.doc.text[s.start:s.end].strip()
    assert len(read_gold(shared_data / "presidio_synth" / "synth_dataset_v2_first750.json", "presidio")) == 750
    assert len(read_gold(shared_data / "conll2003" / "eng.testa", "conll")) == 216
    sw = read_gold(shared_data / "switchboard_pii" / "val_gold.jsonl", "switchboard_pii")
    assert len(sw) == 2249
    classes = [s.identifier_type for gd in sw for s in gd.spans]
    assert (classes.count("DIRECT"), classes.count("QUASI"), classes.count("OPTIONAL")) == (8, 170, 209)


def test_presidio_split_is_by_template():
    from veil.mask.gold import GoldDocument, presidio_split
    from veil.types import Document

    golds = [GoldDocument(Document(str(i), "x", meta={"template_id": i % 7})) for i in range(70)]
    train, held = presidio_split(golds)
    assert len(train) + len(held) == 70 and held
    assert not {g.doc.meta["template_id"] for g in train} & {g.doc.meta["template_id"] for g in held}
