"""Mask / fill over a Hugging Face ``datasets.Dataset``: the records equal the local engine's."""

import json

import pytest

datasets = pytest.importorskip("datasets")
pytest.importorskip("torch")

from veil.run.hf_datasets import fill_dataset, mask_dataset  # noqa: E402
from veil.io.records import filled_to_record, masked_to_record, substitution_records  # noqa: E402

TEXTS = ["call me at 555-123-4567 tomorrow", "mail john.smith@example.com about the order",
         "nothing to hide here", "my card is 4111 1111 1111 1111 thanks"]


def _engine():
    from veil.mask.engine import MaskingEngine
    from veil.registry import maskers

    return MaskingEngine([maskers.get("dlp")()], style="numbered")


def test_mask_and_fill_a_dataset_like_the_local_engine():
    from veil.fill.llm import LLMFiller
    from veil.io.formats import Document
    from tests.tiny_models import build_tiny_causal_lm
    from veil.run.stages import mask_batch

    ds = datasets.Dataset.from_dict({"id": [f"d{i}" for i in range(len(TEXTS))], "text": TEXTS,
                                     "source": ["a", "b", "c", "d"]})
    masked = mask_dataset(ds, _engine, batch_size=3)
    local = [masked_to_record(m) for m in mask_batch(
        [Document(id=f"d{i}", text=t, meta={"source": s}) for i, (t, s) in enumerate(zip(TEXTS, "abcd"))], _engine())]
    assert [json.dumps(r, sort_keys=True) for r in masked] == [json.dumps(r, sort_keys=True) for r in local]

    model, tok = build_tiny_causal_lm(TEXTS * 3, vocab_size=300)
    filled = fill_dataset(masked, lambda: LLMFiller(model_obj=model, tokenizer=tok, avoid={}, types="off",
                                                    n_candidates=6), batch_size=2)
    from veil.io.records import record_to_masked

    ref = LLMFiller(model_obj=model, tokenizer=tok, avoid={}, types="off", n_candidates=6).fill(
        [record_to_masked(r) for r in local])
    for row, d in zip(filled, ref):
        subs = row.pop("substitutions")
        assert row == filled_to_record(d)
        assert subs == substitution_records(d)


def test_missing_columns_are_an_error():
    from veil.errors import VeilError

    with pytest.raises(VeilError, match="needs columns"):
        mask_dataset(datasets.Dataset.from_dict({"body": ["x"]}), _engine)


def test_veil_mask_and_fill_take_a_dataset():
    import veil

    ds = datasets.Dataset.from_dict({"id": ["a", "b"], "text": TEXTS[:2]})
    masked = veil.mask(ds, ["dlp"])
    assert isinstance(masked, datasets.Dataset) and "[PHONE_NUMBER_1]" in masked[0]["text"]
    filled = veil.fill(masked, "faker")
    assert "[" not in filled[0]["text"] and filled[0]["substitutions"][0]["label"] == "PHONE_NUMBER"
