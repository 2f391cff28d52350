"""Issue 32, "tracebacks instead of one line": each case the probe found, as the user typed it.

(``--stats-json`` given a folder: ``tests/io/test_links.py``; a filler's weights that cannot be loaded:
``tests/run/test_checks.py``; every option of every command: ``tests/cli/test_bad_values.py``.)
"""

import json

import pytest

from veil.cli import main


def _err(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return err.strip().splitlines()[-1]


@pytest.fixture
def corpus(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text("".join(json.dumps({"id": i, "text": f"Call John at 555-123-4567, case {i}", "person": f"p{i}"})
                         + "\n" for i in range(3)))
    return p


def test_set_with_a_text_value_for_a_number_option(corpus, tmp_path, capsys):
    assert main(["mask", str(corpus), "-o", str(tmp_path / "o.jsonl"), "--masker", "dlp",
                 "--set", "dlp.min_score=abc"]) == 2
    assert _err(capsys) == "veil mask: error: masker dlp: option min_score must be a number, got 'abc'"
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("command", ["mask", "fill"])
def test_a_negative_limit(corpus, tmp_path, capsys, command):
    with pytest.raises(SystemExit) as e:
        main([command, str(corpus), "-o", str(tmp_path / "o.jsonl"), "--limit", "-1"])
    assert e.value.code == 2
    assert _err(capsys).endswith("argument --limit: expected a number from 0 to 9223372036854775807, got -1")


@pytest.mark.parametrize("setter, message", [
    ("lm=[", "--set 'lm=[': the value is not valid YAML"),
    ("lm.finetune_epochs=abc", "lm.finetune_epochs must be a number, got 'abc'"),
    ("lm.n_layer=1.5", "lm.n_layer must be a whole number, got 1.5"),
    ("lm=[1]", "lm must be a mapping, got [1]"),
    ("methods=5", "methods must be a list, got 5"),
    ("seed=x", "seed must be a whole number, got 'x'"),
    ("nonsense", "--set 'nonsense': expected KEY=VALUE"),
])
def test_a_malformed_experiment_set_value(corpus, tmp_path, capsys, monkeypatch, setter, message):
    from veil.experiment.runner import ExperimentRunner

    monkeypatch.setattr(ExperimentRunner, "run", lambda self: pytest.fail("the experiment started"))
    spec = tmp_path / "e.yaml"
    spec.write_text(f"train: {corpus}\ntest: {corpus}\ntechniques: [dlp]\nbaselines: [oracle]\n")
    assert main(["experiment", "run", str(spec), "-o", str(tmp_path / "out"), "--set", setter]) == 2
    assert message in _err(capsys)


def test_audit_identifiers_on_broken_utf8(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"id": 1, "text": "ok", "person": "a"}\n{"id": 2, "text": "bad \xff\xfe", "person": "b"}\n')
    assert main(["audit", "identifiers", str(bad), "--format", "jsonl", "--no-direct"]) == 2
    assert _err(capsys).startswith(f"veil audit: error: {bad}:2: invalid UTF-8 at byte 23 of the line")


def test_detector_weights_that_cannot_be_loaded(corpus, tmp_path, capsys):
    import shutil

    from veil.mask.neural.saved import META_FILE, PACKAGED_DIR

    det = tmp_path / "det"
    det.mkdir()
    shutil.copy(PACKAGED_DIR / META_FILE, det / META_FILE)
    (det / "detector.int8.onnx").write_bytes(b"not a model")
    assert main(["mask", str(corpus), "-o", str(tmp_path / "o.jsonl"), "--masker", "neural_tagger",
                 "--set", f"neural_tagger.model={det}"]) == 2
    assert f"the detector in {det} cannot be loaded (InvalidProtobuf" in _err(capsys)


def test_a_huge_number_is_out_of_range_not_an_overflow(corpus, tmp_path, capsys):
    masked = tmp_path / "m.jsonl"
    masked.write_text('{"id": 1, "text": "hi [PERSON_NAME_1]"}\n')
    assert main(["fill", str(masked), "-o", str(tmp_path / "f.jsonl"), "--filler", "faker",
                 "--threads", "99999999999999999999"]) == 2
    assert _err(capsys) == "veil fill: error: --threads is out of range"


def test_identifier_ngrams_are_bounded(corpus, capsys):
    assert main(["audit", "identifiers", str(corpus), "--format", "jsonl", "--no-direct", "--max-n",
                 "99999999999999999"]) == 2
    assert _err(capsys) == "veil audit: error: --max-n and --sweep-n count words per n-gram: at most 10"


def test_speakers_is_refused_for_a_corpus_that_is_not_switchboard(corpus, tmp_path, capsys):
    assert main(["mask", str(corpus), "-o", str(tmp_path / "o.jsonl"), "--masker", "dlp", "--speakers", "x.csv"]) == 2
    assert _err(capsys) == "veil mask: error: --speakers applies to Switchboard input (--format switchboard) only"
