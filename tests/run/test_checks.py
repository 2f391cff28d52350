"""Issue 32 items 5 and 6: ``veil fill`` never reports success for a wrong result.

An input that was never masked, a filler that cannot load its model, and a filler that falls back
on most placeholders each used to end with exit 0 and an output whose manifest said complete.
"""

import json
from pathlib import Path

import pytest

from tests.io.test_hardening import FakerFiller, _corpus, _mask, fakes  # noqa: F401  (fakes: autouse)
from veil.cli import main
from veil.errors import VeilError
from veil.registry import fillers
from veil.run.checks import EARLY_JUDGEMENT, FallbackGuard
from veil.run.corpus import fill_corpus


def _fill(src, out, *extra, filler="faker"):
    return main(["fill", str(src), "-o", str(out), "--filler", filler, "--no-progress", *map(str, extra)])


def _one_line(err: str) -> str:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


class _CountingFaker(FakerFiller):
    built = 0

    def __init__(self, **options):
        type(self).built += 1
        super().__init__(**options)


# --- item 5: an input that was never masked ------------------------------------------------------------
def test_fill_refuses_a_corpus_that_was_never_masked(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(fillers._entries, "faker", _CountingFaker)
    _CountingFaker.built = 0
    src, out = _corpus(tmp_path), tmp_path / "f.jsonl"  # "hello Anna and Bob": names, no placeholder
    assert _fill(src, out) == 2
    err = _one_line(capsys.readouterr().err)
    assert "never masked" in err and "--allow-unmasked" in err
    assert not out.exists() and _CountingFaker.built == 0  # before the filler is built
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]
    assert _fill(src, out, "--allow-unmasked") == 0  # a user who means it
    assert [json.loads(x)["text"] for x in out.read_text().splitlines()][0] == "hello Anna and Bob 0"


def test_fill_says_when_veil_mask_found_nothing(tmp_path, capsys):
    src, masked, out = tmp_path / "in.jsonl", tmp_path / "m.jsonl", tmp_path / "f.jsonl"
    src.write_text('{"id": 1, "text": "no names here"}\n')
    assert _mask(src, "-o", masked) == 0
    assert _fill(masked, out) == 2
    assert "veil mask found nothing to mask" in _one_line(capsys.readouterr().err)


# --- item 6: a filler that cannot load ----------------------------------------------------------------
@pytest.mark.parametrize("args, message", [
    (["--filler", "llm", "--model", "/nonexistent/model"], "cannot load a causal LM from '/nonexistent/model'"),
    (["--filler", "llm", "--device", "cuda"], "no CUDA GPU"),
    (["--filler", "llm", "--dtype", "int3"], "unknown dtype 'int3'"),
    (["--filler", "mlm", "--model", "/nonexistent/model"], "cannot load masked LM '/nonexistent/model'"),
    (["--filler", "mlm", "--dtype", "int3"], "dtype must be one of"),
    (["--filler", "mlm", "--device", "cuda"], "no CUDA GPU"),
])
def test_a_filler_that_cannot_load_stops_before_the_work_with_one_line(tmp_path, capsys, args, message):
    import torch

    if torch.cuda.is_available() and "cuda" in args:
        pytest.skip("this machine has a GPU")
    src, masked, out = _corpus(tmp_path), tmp_path / "m.jsonl", tmp_path / "f.jsonl"
    assert _mask(src, "-o", masked) == 0
    assert main(["fill", str(masked), "-o", str(out), "--no-progress", *args]) == 2
    assert message in _one_line(capsys.readouterr().err)
    assert not out.exists() and not any(p.name.startswith("f.jsonl") for p in tmp_path.iterdir())


def test_model_weights_that_cannot_be_loaded_are_one_line(tmp_path, capsys):
    from transformers import BertConfig

    src, masked, out = _corpus(tmp_path), tmp_path / "m.jsonl", tmp_path / "f.jsonl"
    assert _mask(src, "-o", masked) == 0
    model = tmp_path / "broken"
    model.mkdir()
    BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
               intermediate_size=8).save_pretrained(model)
    (model / "model.safetensors").write_bytes(b"\x00\x01 not a safetensors file")
    for filler in ("mlm", "llm"):
        assert main(["fill", str(masked), "-o", str(out), "--filler", filler, "--model", str(model),
                     "--no-progress"]) == 2
        assert "cannot load" in _one_line(capsys.readouterr().err)
    assert not out.exists()


# --- item 6: a filler that falls back on more than the stated share ----------------------------------------
class _BrokenFaker(FakerFiller):
    """A filler that loads but fails on every document (as a model that proposes nothing usable)."""

    def __init__(self, **options):
        super().__init__(fail_on="[", **options)


def test_a_filler_that_falls_back_on_most_placeholders_fails_and_the_output_is_not_complete(
        tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(fillers._entries, "faker", _BrokenFaker)
    src, masked, out = _corpus(tmp_path), tmp_path / "m.jsonl", tmp_path / "f.jsonl"
    assert _mask(src, "-o", masked) == 0
    for _ in range(2):  # a second run (a resume of the first) judges the whole corpus again
        assert _fill(masked, out, "--chunk", "2") == 2
        err = capsys.readouterr().err
        assert "could not fill 12 of 12 placeholders (100%, more than the 10% allowed)" in err
        assert not out.exists() and not Path(str(out) + ".veil.json").exists()
    assert _fill(masked, out, "--chunk", "2", "--max-fallback-share", "1") == 0  # accepted explicitly
    assert out.exists()


def test_the_share_is_judged_during_the_run_once_enough_placeholders_were_filled():
    from veil.types import FilledDocument, Substitution

    def doc(i):  # a document whose two placeholders were filled
        return FilledDocument(str(i), "a b", tuple(Substitution(str(i), "[MASK]", f"MASK#{j}", "MASK", "a", 0, 1)
                                                  for j in range(2)))

    docs = [doc(i) for i in range(EARLY_JUDGEMENT)]
    guard = FallbackGuard(0.1)
    guard.add(docs[:10], [d.id for d in docs[:10]])
    guard.check()  # 20 placeholders: too few to judge before the end
    with pytest.raises(VeilError, match="could not fill 20 of 20"):
        guard.check(final=True)
    guard.add(docs[10:], [])
    guard.check()  # 20 of 400: 5%
    again = FallbackGuard(0.01, guard.state())  # resumed from the saved state
    with pytest.raises(VeilError, match="could not fill 20 of 400 placeholders .5%, more than the 1% allowed"):
        again.check()


def test_fill_corpus_keeps_the_fallback_counts_in_the_resumable_state(tmp_path):
    src = tmp_path / "m.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n"
                           for i, t in enumerate(["a [MASK]", "b [MASK] c", "odd [MASK_] [MASK]"])))
    out = tmp_path / "f.jsonl"
    with pytest.raises(VeilError, match="could not fill 1 of 3 placeholders"):
        fill_corpus(src, out, FakerFiller(fail_on="[MASK_]"), chunk_size=1, progress=False)
    state = json.loads(Path(str(out) + ".progress.json").read_text())["state"]
    assert state["placeholders"] == 3 and state["fallback_placeholders"] == 1 and state["fallback_documents"] == ["2"]
    stats = fill_corpus(src, out, FakerFiller(fail_on="[MASK_]"), chunk_size=1, progress=False,
                        max_fallback_share=0.5)
    assert stats["filled_now"] == 0 and out.exists()  # resumed: nothing filled twice
