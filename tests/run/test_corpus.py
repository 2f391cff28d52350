"""veil.run.corpus and veil.run.stages: batch functions independent of batching, fill fallbacks (case 8, fill side),
look-alikes kept."""

import json
import logging

import pytest

from veil.errors import VeilError
from veil.fill.base import Filler
from veil.io.records import read_filled, read_masked
from veil.markers import find_markers
from veil.mask.detectors import DEFAULT_DETECTORS  # noqa: F401  (dlp's detectors load here, not per test)
from veil.run.components import build_engine
from veil.run.corpus import fill_corpus, mask_corpus
from veil.fill.fallback import fallback_fill, fill_batch
from veil.run.stages import mask_batch
from veil.types import Document

LOOKALIKES = "I typed [PERSON_NAME_1], [MASK], [mask], [\\MASK] and [MASK_] myself"


class FakerFiller(Filler):
    """Test filler: the pipeline's typed fallback for every placeholder; fails on documents holding ``fail_on``."""

    name = "faker"

    def __init__(self, seed=0, fail_on=None):
        self.seed, self.fail_on, self.calls = seed, fail_on, 0

    def _fill(self, docs):
        self.calls += 1
        if self.fail_on and any(self.fail_on in d.text for d in docs):
            raise VeilError("the model proposed no usable word for [MASK]")
        return [fallback_fill(d, self.seed) for d in docs]


def _docs(n):
    return [Document(str(i), f"mail me at user{i}@example.com or call 415-555-01{i:02d}, {LOOKALIKES}")
            for i in range(n)]


def test_mask_batch_does_not_depend_on_batching():
    engine = build_engine(["dlp"])
    docs = _docs(7)
    whole = mask_batch(docs, engine)
    pieces = [md for i in range(0, 7, 3) for md in mask_batch(docs[i:i + 3], engine)]
    assert whole == pieces
    assert whole[0].text.startswith("mail me at [EMAIL_ADDRESS_1] or call [PHONE_NUMBER_1]")


def mask_records(recs, engine, fields):
    from veil.io.formats import record_to_document
    from veil.io.records import masked_to_record

    docs = [record_to_document(dict(r), fields, "<records>", i, i) for i, r in enumerate(recs, 1)]
    return [masked_to_record(md, fields) for md in mask_batch(docs, engine)]


def fill_records(recs, filler, fields):
    from veil.io.records import filled_to_record, record_to_masked, substitution_records

    filled = fill_batch([record_to_masked(dict(r), fields, "<records>", i, i) for i, r in enumerate(recs, 1)], filler)
    return [filled_to_record(d, fields) for d in filled], [r for d in filled for r in substitution_records(d)]


def test_records_round_trip_through_the_batch_functions():
    engine = build_engine(["dlp"], placeholder="typed")
    recs = [{"key": "a", "body": "write to x@y.org", "n": 1}]
    from veil.io.formats import Fields

    fields = Fields(text="body", id="key")
    masked = mask_records(recs, engine, fields)
    assert masked == [{"key": "a", "body": "write to [EMAIL_ADDRESS]", "n": 1,
                       "placeholders": [{"start": 9, "end": 24, "label": "EMAIL_ADDRESS", "key": "EMAIL_ADDRESS#0",
                                         "technique": "dlp", "shape": "l@l.w"}], "style": "typed"}]
    filled, subs = fill_records(masked, FakerFiller(), fields)
    assert set(filled[0]) == {"key", "body", "n"} and "[" not in filled[0]["body"]
    assert subs[0]["id"] == "a" and filled[0]["body"][subs[0]["start"]:subs[0]["end"]] == subs[0]["substitute"]


def test_lookalikes_survive_mask_then_fill_verbatim(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": d.id, "text": d.text}) + "\n" for d in _docs(3)), encoding="utf-8")
    mask_corpus(src, tmp_path / "m.jsonl", ["dlp"], progress=False)
    fill_corpus(tmp_path / "m.jsonl", tmp_path / "f.jsonl", FakerFiller(), progress=False)
    for d in read_filled(tmp_path / "f.jsonl"):
        assert d.text.endswith(LOOKALIKES) and "example.com" not in d.text and "415-555" not in d.text


def test_one_unfillable_document_gets_fallbacks_and_the_run_goes_on(tmp_path, caplog):
    src = tmp_path / "m.jsonl"
    texts = ["hi [PERSON_NAME_1]", "odd [MASK_] text [MASK]", "call [PHONE_NUMBER_1]", "bye [MASK]"]
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        # one document of four: a quarter of the placeholders, allowed here (the default allows 10%)
        stats = fill_corpus(src, tmp_path / "f.jsonl", FakerFiller(fail_on="[MASK_]"), chunk_size=4, progress=False,
                            max_fallback_share=0.5)
    assert stats["fallback_documents"] == ["1"]
    assert any("could not be filled" in r.getMessage() and "'1'" in r.getMessage() for r in caplog.records)
    out = list(read_filled(tmp_path / "f.jsonl"))
    assert [d.id for d in out] == ["0", "1", "2", "3"] and all(not find_markers(d.text) for d in out)
    assert out[1].text.startswith("odd [MASK_] text ")  # the look-alike kept, the marker filled


def test_fill_batch_retries_a_failed_batch_document_by_document():
    docs = list(read_masked_texts(["a [MASK]", "b [MASK_] [MASK]", "c [MASK]"]))
    filler = FakerFiller(fail_on="[MASK_]")
    failures = []
    out = fill_batch(docs, filler, failures)
    assert [d.id for d in out] == ["1", "2", "3"] and [f.doc_id for f in failures] == ["2"]
    assert out[0] == fallback_fill(docs[0], 0)  # the others filled as the filler fills them


def read_masked_texts(texts):
    from veil.io.records import record_to_masked

    return [record_to_masked({"text": t}, number=i + 1) for i, t in enumerate(texts)]


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_mask_corpus_output_does_not_depend_on_the_batch_size(tmp_path, fmt):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": d.id, "text": d.text, "k": i}) + "\n" for i, d in enumerate(_docs(9))))
    outs = []
    for bs in (1, 4, 100):
        out = tmp_path / f"o{bs}.{fmt}"
        mask_corpus(src, out, ["dlp"], batch_size=bs, progress=False)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] == outs[2]
    assert [d.id for d in read_masked(tmp_path / f"o1.{fmt}")] == [str(i) for i in range(9)]

