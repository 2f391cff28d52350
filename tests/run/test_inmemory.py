"""In-memory fills (veil finetune, the MLM's fill -> fine-tune rounds) go through the one corpus loop."""

from __future__ import annotations

import pytest

import veil.run.inmemory
from veil.errors import VeilError
from veil.fill.faker import FakerFiller
from veil.fill.fallback import fallback_fill, fill_batch
from veil.run.inmemory import fill_documents
from veil.types import MaskedDocument

DOCS = [MaskedDocument(str(i), f"hi [PERSON_NAME_1], [PHONE_NUMBER_1] {i}", (), "numbered") for i in range(7)]


class Breaks(FakerFiller):
    def _fill(self, docs):
        if any(d.id == "3" for d in docs):
            raise VeilError("no")
        return super()._fill(docs)


def test_fill_documents_is_the_corpus_loop(monkeypatch):
    calls = []
    loop = veil.run.inmemory.map_units
    monkeypatch.setattr(veil.run.inmemory, "map_units", lambda *a, **k: calls.append(k) or loop(*a, **k))
    failures = []
    out = fill_documents(Breaks(seed=2), DOCS, batch_size=3, failures=failures)
    assert len(calls) == 1 and calls[0]["batch_size"] == 3
    assert out == fill_batch(DOCS, Breaks(seed=2))  # batches change nothing
    assert out[3] == fallback_fill(DOCS[3], 2) and [f.doc_id for f in failures] == ["3"]


def test_fill_rounds_need_the_loop_handed_down(tmp_path):
    from veil.fill.rounds import finetune_rounds

    with pytest.raises(VeilError, match="pass fill="):
        finetune_rounds(DOCS, tmp_path, filler_cls=FakerFiller, load=lambda m: (None, None), data="top1",
                        model_obj=object(), tokenizer=object())
