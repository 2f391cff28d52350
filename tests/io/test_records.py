import json

import pytest

from veil.errors import InputError
from veil.io import read_filled, read_masked, write_filled, write_masked
from veil.io.records import substitutions_path
from veil.mask.placeholders import render
from veil.types import Document, FilledDocument, Span, Substitution


def _masked(n=5):
    docs = [Document(f"d{i}", f"call Anna at 555-0{i}00 [MASK]", person=f"p{i % 2}", group="c1",
                     meta={"speaker": "agent", "turn": i}) for i in range(n)]
    return [render(d, [Span(5, 9, "PERSON_NAME", "entity_tagger"), Span(13, 21, "PHONE_NUMBER", "dlp")], "numbered")
            for d in docs]


def test_masked_round_trip_keeps_everything(tmp_path):
    docs = _masked()
    out = tmp_path / "m.jsonl"
    assert write_masked(out, docs, batch_size=2) == 5
    back = list(read_masked(out))
    assert back == docs
    assert back[0].text == "call [PERSON_NAME_1] at [PHONE_NUMBER_1] [\\MASK]"
    assert back[0].meta == {"speaker": "agent", "turn": 0}
    assert not list(tmp_path.glob("*.partial")) and not list(tmp_path.glob("*.progress.json"))


def test_masked_without_placeholders_rebuilds_them_from_markers(tmp_path):
    p = tmp_path / "m.jsonl"
    p.write_text(json.dumps({"id": 1, "text": "hi [PERSON_NAME_1], [MASK] [MASK] and [\\MASK] [EMAIL_ADDRESS]"}) + "\n"
                 + json.dumps({"id": 2, "text": "no markers"}) + "\n")
    a, b = read_masked(p)
    assert [(x.label, x.key, x.technique) for x in a.placeholders] == [
        ("PERSON_NAME", "PERSON_NAME_1", "unknown"), ("MASK", "MASK#1", "unknown"), ("MASK", "MASK#2", "unknown"),
        ("EMAIL_ADDRESS", "EMAIL_ADDRESS#3", "unknown")]
    assert [a.text[x.start:x.end] for x in a.placeholders] == ["[PERSON_NAME_1]", "[MASK]", "[MASK]", "[EMAIL_ADDRESS]"]
    assert a.style == "numbered" and a.id == "1"
    assert b.placeholders == () and b.style == "mask"


@pytest.mark.parametrize("line,message", [
    ('{"id": 2}', "m.jsonl:2: missing text field 'text'"),
    ('{"id": 2, "text": null}', "m.jsonl:2: field 'text' is null"),
    ('{"id": 3, "text": "[MASK]", "placeholders": [{"start": 0}]}', "m.jsonl:2: bad 'placeholders' entry"),
    ('{"id": 3, "text": "[MASK]", "placeholders": [{"start": 0, "end": 60, "label": "M", "key": "k", '
     '"technique": "t"}]}', "outside the text"),
    ('{"id": 3, "text": "x", "style": "fancy"}', "unknown placeholder style 'fancy'"),
    ('[1, 2]', "m.jsonl:2: expected a JSON object"),
    ('{"id": 3, "text": ', "m.jsonl:2: invalid JSON"),
])
def test_bad_masked_records_are_located(tmp_path, line, message):
    p = tmp_path / "m.jsonl"
    p.write_text('{"id": 1, "text": "fine"}\n' + line + "\n")
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("(", r"\(")):
        list(read_masked(p))


def _filled(n=4):
    out = []
    for i in range(n):
        subs = tuple(Substitution(f"d{i}", "[PERSON_NAME_1]", "PERSON_NAME_1", "PERSON_NAME", "Maria", 5, 10)
                     for _ in range(i % 2))  # every other document has no substitution
        out.append(FilledDocument(f"d{i}", "call Maria now" if subs else "nothing here", subs, person="p",
                                  group=None, meta={"turn": i}))
    return out


def test_filled_round_trip_with_substitutions_beside(tmp_path):
    docs = _filled()
    out = tmp_path / "f.jsonl"
    assert write_filled(out, docs, batch_size=3) == 4
    assert substitutions_path(out).exists()
    assert list(read_filled(out)) == docs
    first = json.loads(out.read_text().splitlines()[0])
    assert first == {"id": "d0", "text": "nothing here", "person": "p", "turn": 0}


def test_filled_without_substitution_file_and_orphan_substitution(tmp_path):
    out = tmp_path / "f.jsonl"
    write_filled(out, _filled(), substitutions=False)
    assert not substitutions_path(out).exists()
    assert all(d.substitutions == () for d in read_filled(out))
    substitutions_path(out).write_text(json.dumps({"id": "zzz", "placeholder": "[MASK]", "key": "k", "label": "MASK",
                                                   "substitute": "x", "start": 0, "end": 1}) + "\n")
    with pytest.raises(InputError, match=r"substitutions.jsonl:1: substitution for document 'zzz'"):
        list(read_filled(out))


def test_filled_reader_reads_veil_fill_output_layout(tmp_path):
    """The layout `veil fill` writes reads back with read_filled."""
    from veil.io.records import filled_to_record as filled_record, substitution_records

    docs = _filled(3)
    out = tmp_path / "f.jsonl"
    out.write_text("".join(json.dumps(filled_record(d)) + "\n" for d in docs))
    substitutions_path(out).write_text("".join(json.dumps(r) + "\n" for d in docs for r in substitution_records(d)))
    assert list(read_filled(out)) == docs
