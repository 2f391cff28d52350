"""ASR evaluation stage: the experiment file's ``asr:`` section is validated like the rest of the spec."""

from __future__ import annotations

import pytest
import yaml

from veil.downstream.asr.settings import ASRSettings
from veil.errors import VeilError
from veil.experiment.spec import load_spec


def test_defaults_are_a_valid_setting():
    s = ASRSettings.from_dict({})
    assert s.speech == "synth" and s.beam >= 8 and s.nbest <= s.beam and 0.0 in s.lm_weights


@pytest.mark.parametrize("bad, message", [
    ({"beems": 8}, "unknown key"),
    ({"beam": 4}, "at least 8"),
    ({"nbest": 9}, "nbest"),
    ({"dev": 0}, "positive"),
    ({"text_form": "wsj"}, "text_form"),
    ({"rates": [20]}, "words per minute"),
    ({"min_words": 5, "max_words": 3}, "min_words"),
    ({"lm_weights": []}, "non-empty"),
    ({"lm_context": -1}, "lm_context"),
    ({"lm_context": 9}, "lm_context"),
    ({"lm_context": 1, "speech": "calls.jsonl"}, "needs asr.speech: synth"),
])
def test_bad_settings_are_errors(bad, message):
    with pytest.raises(VeilError, match=message):
        ASRSettings.from_dict(bad)


def write(tmp_path, asr):
    (tmp_path / "t.txt").write_text("a b c\n")
    exp = {"train": "t.txt", "test": "t.txt", "pretrain": "t.txt", "techniques": ["allow_list"],
           "baselines": ["oracle"], "asr": asr}
    p = tmp_path / "e.yaml"
    p.write_text(yaml.safe_dump(exp))
    return p


def test_experiment_file_asr_section(tmp_path):
    spec = load_spec(write(tmp_path, {"voices": "en-gb", "sentences": 10, "dev": 5, "noise_snr": 15}))
    assert spec.asr.voices == ["en-gb"] and spec.asr.sentences == 10 and spec.asr.noise_snr == 15
    assert load_spec(write(tmp_path, None)).asr is None
    assert load_spec(write(tmp_path, {}), setters=["asr.beam=16", "asr.nbest=16"]).asr.beam == 16
    with pytest.raises(VeilError, match="unknown key"):
        load_spec(write(tmp_path, {"lamda": 1}))
    with pytest.raises(VeilError, match="mapping"):
        load_spec(write(tmp_path, ["synth"]))
