"""The faker filler is a plain filler: no model, so a model option it cannot honour is an error, not ignored."""

from __future__ import annotations

import pytest

from veil.errors import VeilError
from veil.fill.draws import DrawFiller
from veil.fill.faker import FakerFiller
from veil.fill.loop import CandidateFiller
from veil.run.components import build_filler
from veil.types import MaskedDocument


def test_faker_is_not_a_model_filler():
    assert issubclass(FakerFiller, DrawFiller) and not issubclass(FakerFiller, CandidateFiller)
    assert not hasattr(FakerFiller, "propose_batch")


@pytest.mark.parametrize("options, message", [
    ({"strategy": "topk"}, "strategy 'topk' needs a model filler"),
    ({"strategy": "sample"}, "sample only with rank_types"),
    ({"k": 5}, "drop k"),
    ({"model": "bert-base-uncased"}, "uses no model"),
    ({"entities": "propose"}, "draws entities"),
    ({"batch_size": 8}, "batch_size"),
    ({"avoid_in_top1": True}, "avoid_in_top1"),
])
def test_options_it_cannot_honour_are_errors(options, message):
    with pytest.raises(VeilError, match=message):
        build_filler("faker", **options)


def test_the_defaults_every_filler_is_built_with_are_taken():
    doc = MaskedDocument("1", "hi [PERSON_NAME_1], [MASK] here", (), "numbered")
    plain = FakerFiller(seed=1).fill([doc])
    assert FakerFiller(strategy="top1", k=10, seed=1).fill([doc]) == plain
    assert "[" not in plain[0].text
