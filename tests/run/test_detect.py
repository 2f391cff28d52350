"""veil.run.detect: detection alone on the corpus loop (DetectStage), in memory and kept in a resumable spans file."""

from __future__ import annotations

import json
import pytest

from veil.errors import VeilError
from veil.run.components import build_engine
from veil.run.detect import detect_documents, iter_spans
from veil.types import Document

TEXTS = ["call 555-123-4567 now", "no number here", "mail ann@example.com or 555-987-6543", "", "id 88231"]
DOCS = [Document(f"d{i}", t) for i, t in enumerate(TEXTS * 3)]
SETTINGS = {"maskers": ["dlp"]}


def engine():
    return build_engine(["dlp"])


def test_spans_equal_the_engines_whatever_the_batch_size():
    want = engine().detect(DOCS)
    for batch_size in (1, 2, 7, 100):
        assert list(iter_spans(DOCS, engine(), batch_size=batch_size)) == want
    assert detect_documents(DOCS, engine, batch_size=4) == want  # a factory: built where the stage runs


def test_a_spans_file_is_written_and_read_back_without_building_the_engine(tmp_path):
    out = tmp_path / "spans.jsonl"
    want = detect_documents(DOCS, engine, settings=SETTINGS, spans_file=out, batch_size=4)
    assert want == engine().detect(DOCS)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in lines] == [d.id for d in DOCS] and lines[0]["spans"][0][2] == "PHONE_NUMBER"

    def no_engine():
        raise AssertionError("a finished spans file is read back, not detected again")
    assert detect_documents(DOCS, no_engine, settings=SETTINGS, spans_file=out) == want
    with pytest.raises(VeilError, match="other settings"):  # another engine's spans are never taken for these
        detect_documents(DOCS, engine, settings={"maskers": ["quasi"]}, spans_file=out)


def test_an_interrupted_detection_resumes_after_its_last_complete_batch(tmp_path):
    out = tmp_path / "spans.jsonl"
    want = engine().detect(DOCS)

    def failing():  # a factory: its engine stops on the third batch
        e, calls = engine(), []
        real = e.detect

        def detect(docs):
            calls.append(1)
            if len(calls) == 3:
                raise KeyboardInterrupt
            return real(docs)
        e.detect = detect
        return e

    with pytest.raises(KeyboardInterrupt):
        detect_documents(DOCS, failing, settings=SETTINGS, spans_file=out, batch_size=4)
    assert not out.exists() and (tmp_path / "spans.jsonl.partial").exists()
    seen = []

    def counting():
        e = engine()
        real = e.detect
        e.detect = lambda docs: seen.append(len(docs)) or real(docs)
        return e
    assert detect_documents(DOCS, counting, settings=SETTINGS, spans_file=out, batch_size=4) == want
    assert sum(seen) == len(DOCS) - 8  # the two complete batches were not detected again


def test_a_built_engine_cannot_go_to_ray_workers():
    class Ray:
        name = "ray"
    with pytest.raises(VeilError, match="picklable"):
        list(iter_spans(DOCS, engine(), executor=Ray()))
