"""What veil mask / veil fill write back: no field the input lacked, the group field's values as read (issue 39)."""

from __future__ import annotations

import json

import pytest

from veil.cli import main
from veil.errors import VeilError
from veil.fill.faker import FakerFiller
from veil.io.records import substitutions_path
from veil.run.corpus import fill_corpus


def _records(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def test_jsonl_without_ids_gains_no_id_and_a_fill_resumes(tmp_path):
    src, masked, filled = tmp_path / "in.jsonl", tmp_path / "m.jsonl", tmp_path / "f.jsonl"
    _write(src, [{"text": f"call {n} please", "agent": "a7"} for n in ("(415) 555-0199", "(212) 555-0142",
                                                                       "(617) 555-0110")])
    assert main(["mask", str(src), "-o", str(masked), "--masker", "dlp", "--no-progress"]) == 0
    assert [set(r) for r in _records(masked)] == [{"text", "agent", "placeholders", "style"}] * 3
    assert main(["fill", str(masked), "-o", str(filled), "--filler", "faker", "--seed", "3", "--no-progress"]) == 0
    assert [set(r) for r in _records(filled)] == [{"text", "agent"}] * 3
    # the record numbers are the ids where veil needs one: in the substitutions beside the filled file
    assert [r["id"] for r in _records(substitutions_path(filled))] == ["1", "2", "3"]

    class Interrupted(Exception):
        pass

    class Dying(FakerFiller):
        def _fill(self, docs):
            if any(d.id == "3" for d in docs):
                raise Interrupted
            return super()._fill(docs)

    resumed = tmp_path / "r.jsonl"
    settings = {"filler": "faker", "seed": 3}
    with pytest.raises(Interrupted):
        fill_corpus(masked, resumed, Dying(seed=3), settings=settings, chunk_size=1, progress=False)
    stats = fill_corpus(masked, resumed, FakerFiller(seed=3), settings=settings, chunk_size=1, progress=False)
    assert stats["filled_now"] == 1  # resumed after the two records written
    assert resumed.read_bytes() == filled.read_bytes()
    assert substitutions_path(resumed).read_bytes() == substitutions_path(filled).read_bytes()


def test_group_values_keep_their_type_and_1_and_the_string_1_are_two_groups(tmp_path):
    src, masked, filled = tmp_path / "in.jsonl", tmp_path / "m.jsonl", tmp_path / "f.jsonl"
    _write(src, [{"id": "u1", "call": 1, "text": "mine is (415) 555-0199"},
                 {"id": "u2", "call": 1, "text": "and (212) 555-0142"},
                 {"id": "u3", "call": "1", "text": "call (212) 555-0142"}])
    assert main(["mask", str(src), "-o", str(masked), "--masker", "dlp", "--group-field", "call",
                 "--no-progress"]) == 0
    recs = _records(masked)
    assert [r["call"] for r in recs] == [1, 1, "1"]
    # a group of its own: its number is counted again from 1 (merged with call 1 it would be the second)
    assert recs[1]["text"] == "and [PHONE_NUMBER_2]" and recs[2]["text"] == "call [PHONE_NUMBER_1]"
    assert main(["fill", str(masked), "-o", str(filled), "--filler", "faker", "--no-progress"]) == 0
    assert [r["call"] for r in _records(filled)] == [1, 1, "1"]


def test_a_group_value_that_reappears_after_another_type_of_it_is_refused(tmp_path):
    src = tmp_path / "in.jsonl"
    _write(src, [{"id": "a", "call": 1, "text": "x"}, {"id": "b", "call": "1", "text": "y"},
                 {"id": "c", "call": 1, "text": "z"}])
    assert main(["mask", str(src), "-o", str(tmp_path / "m.jsonl"), "--masker", "dlp", "--group-field", "call"]) == 2
    with pytest.raises(VeilError, match="appears again"):
        from veil.run.groups import units_of
        from veil.types import Document

        list(units_of([Document("a", "x", group=1), Document("b", "y", group="1"), Document("c", "z", group=1)],
                      grouped=True))
