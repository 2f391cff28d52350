"""The fillers' ``finetune`` hook: the one entry the experiment runner and ``veil finetune`` call."""

from __future__ import annotations

import pytest

from veil.errors import VeilError
from veil.fill.base import Filler
from veil.registry import fillers
from veil.types import MaskedDocument


def test_which_registered_fillers_can_learn():
    learn = sorted(n for n in fillers.names() if fillers.get(n).finetune.__func__ is not Filler.finetune.__func__)
    assert learn == ["llm", "llm-instruct", "mlm"]  # a new one: add it here with its test
    for n in learn:
        f = fillers.get(n)
        assert f.finetune_default_data in f.finetune_data or f.finetune_default_data == "mask-free"


def test_a_filler_without_the_hook_says_so(tmp_path):
    with pytest.raises(VeilError, match="faker filler cannot be fine-tuned"):
        fillers.get("faker").finetune([], tmp_path)


@pytest.mark.parametrize("name", ["llm", "llm-instruct"])
def test_one_round_hooks_check_their_training_text_before_loading_a_model(name, tmp_path):
    docs = [MaskedDocument("1", "[MASK] here", (), "mask")]
    with pytest.raises(VeilError, match="one round"):
        fillers.get(name).finetune(docs, tmp_path, rounds=2)
    with pytest.raises(VeilError, match="not 'topk'"):
        fillers.get(name).finetune(docs, tmp_path, data="topk")


def test_mlm_hook_refuses_an_option_it_does_not_know(tmp_path):
    with pytest.raises(VeilError, match="mlm fine-tuning: .*learning_rate"):
        fillers.get("mlm").finetune([], tmp_path, learning_rate=1e-3)
