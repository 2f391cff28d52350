"""Every sub-command's every option, given bad values: a one-line error or a run, never a traceback.

The parser of each command in ``veil.cli.COMMANDS`` (and of each sub-sub-command: ``audit risk``,
``experiment run``, ...) is read for its options; each option gets values of the wrong kind for its
type (negative, zero, non-numbers, NaN, a missing path, a folder, a file that is not UTF-8, malformed
``--set`` items), on top of an otherwise valid command over a tiny corpus. ``main`` must return (an
exit code) or exit through argparse; any exception out of it is a traceback a user would see.

Work that would take long once the values are accepted (loading a language model, training,
running an experiment grid) is stopped where it starts by a sentinel: reaching it means the values
passed every check up front, which is all this test is about.
"""

from __future__ import annotations

import argparse
import json
import traceback
from pathlib import Path

import pytest

from veil.cli import COMMANDS, build_parser, main, parsers_of


class _Reached(BaseException):
    """The checks passed and the long work began (a BaseException: no ``except Exception`` keeps it)."""


def _stop(*args, **kwargs):
    raise _Reached()


@pytest.fixture(autouse=True)
def _no_long_work(monkeypatch):
    import veil.experiment.runner
    import veil.fill.mlm
    import veil.mask.neural.train
    import veil.models.minilm
    import veil.models.smollm2

    monkeypatch.setattr(veil.models.smollm2, "load_causal_lm", _stop)
    monkeypatch.setattr(veil.fill.mlm, "load_mlm", _stop)
    monkeypatch.setattr(veil.models.minilm, "load_masked_lm", _stop)
    monkeypatch.setattr(veil.mask.neural.train, "train", _stop)
    import veil.mask.neural.adapt

    monkeypatch.setattr(veil.mask.neural.adapt, "adapt", _stop)
    monkeypatch.setattr(veil.experiment.runner.ExperimentRunner, "run", _stop)
    import veil.review.app

    monkeypatch.setattr(veil.review.app, "serve", _stop)  # veil review's browser server would wait for ever


def _files(d: Path) -> dict[str, Path]:
    d.mkdir(parents=True, exist_ok=True)
    corpus = d / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "text": f"Call John Smith at 555-123-4567 about case {i}.",
                                          "person": f"p{i % 2}"}) + "\n" for i in range(4)))
    masked = d / "m.jsonl"
    masked.write_text("".join(json.dumps({"id": i, "text": f"Call [PERSON_NAME_1] now {i}."}) + "\n" for i in range(4)))
    conll = d / "g.conll"
    conll.write_text("-DOCSTART- -X- O O\n\nPeter NNP I-NP I-PER\nBlackburn NNP I-NP I-PER\ncalled VBD I-VP O\n")
    exp = d / "e.yaml"
    exp.write_text(f"train: {corpus}\ntest: {corpus}\ntechniques: [dlp]\nbaselines: [oracle, baseline0]\n")
    review = d / "review"
    review.mkdir(exist_ok=True)
    (review / "1.txt").write_text("Call (John)[MISSED_PERSON_NAME] now.\n")
    gold = d / "gold.jsonl"
    gold.write_text(json.dumps({"id": "1-1", "text": "my name is John", "spans": [
        {"start": 11, "end": 15, "type": "PERSON", "class": "DIRECT", "value": "John"}]}) + "\n")
    bad = d / "bad.txt"
    bad.write_bytes(b"ok\n\xff\xfe not utf-8\n")
    return {"corpus": corpus, "masked": masked, "conll": conll, "exp": exp, "review": review, "bad": bad, "gold": gold,
            "folder": d}


def _base(command: tuple[str, ...], f: dict[str, Path], out: Path) -> list[str]:
    """A valid, cheap invocation of ``command``; ``out`` is fresh for every run."""
    return {
        ("mask",): [str(f["corpus"]), "-o", str(out / "o.jsonl"), "--masker", "dlp"],
        ("eval-detect",): [str(f["conll"]), "--format", "conll", "--masker", "dlp"],
        ("fill",): [str(f["masked"]), "-o", str(out / "o.jsonl")],
        ("finetune",): [str(f["masked"]), "-o", str(out / "ft")],
        ("experiment", "run"): [str(f["exp"]), "-o", str(out / "exp")],
        ("experiment", "gap"): [str(f["exp"]), "-o", str(out / "exp")],
        ("audit", "risk"): [str(f["conll"]), "--format", "conll", "--masker", "dlp"],
        ("audit", "review", "export"): [str(f["corpus"]), "--format", "jsonl", "--masker", "dlp",
                                        "-o", str(out / "rev")],
        ("audit", "review", "import"): [str(f["review"])],
        ("audit", "identifiers"): [str(f["corpus"]), "--format", "jsonl", "--no-direct"],
        ("audit", "ppmlm"): [str(f["corpus"]), "--format", "jsonl", "-o", str(out / "pp")],
        ("train-detector",): ["--data", str(f["folder"]), "-o", str(out / "det")],
        ("adapt",): [str(f["gold"]), "--format", "switchboard_pii", "-o", str(out / "det")],
        ("review",): [str(f["masked"]), "--export", "gold", "-o", str(out / "gold.jsonl")],
        ("verify",): [str(f["corpus"]), str(f["masked"])],
        ("ls",): [],
    }[command]


def _leaves() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    out = []
    for name in COMMANDS:
        top = build_parser(name)
        sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
        for p in parsers_of(sub):
            if any(isinstance(a, argparse._SubParsersAction) for a in p._actions):
                continue
            out.append((tuple(p.prog.split()[1:]), p))
    return out


LEAVES = _leaves()


def _bad_values(action: argparse.Action, f: dict[str, Path]) -> list[str]:
    if action.choices:
        return ["no-such-choice"]
    kind = action.type
    if kind is int:
        return ["-1", "0", "abc", "99999999999999999999"]
    if kind is float:
        return ["-1", "nan", "inf", "abc", "2"]
    values = ["", "/nonexistent/x", str(f["folder"]), str(f["bad"]), "a=b"]
    if action.dest == "set":
        values += ["x", "a.b=c", "dlp.min_score=abc", "dlp.detectors=nope", "dlp.bogus=1", "lm.n_layer=abc",
                   "lm=[", "train.limit=-1", "methods=5"]
    return values


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    skip = (argparse._HelpAction, argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._VersionAction)
    return [a for a in parser._actions if a.option_strings and not isinstance(a, skip) and a.nargs != 0
            and a.dest not in ("output", "out", "format")]


def _run(argv: list[str]) -> str | None:
    """None when ``main`` returned or exited cleanly; else the traceback's last lines."""
    try:
        main(argv)
    except SystemExit:
        pass
    except _Reached:
        pass
    except BaseException:  # noqa: BLE001 -- exactly what the test looks for
        return " ".join(argv) + "\n" + "".join(traceback.format_exc().splitlines(keepends=True)[-4:])
    return None


@pytest.mark.parametrize("command", [c for c, _ in LEAVES], ids=lambda c: " ".join(c))
def test_no_option_of_any_command_gives_a_traceback_on_bad_values(command, tmp_path, capsys, monkeypatch):
    parser = dict(LEAVES)[command]
    # a bad value may be a relative path ("a=b" for --identifiers-out): it must land here, not in the checkout
    monkeypatch.chdir(tmp_path)
    f = _files(tmp_path / "in")
    failures = []
    n = 0
    for action in _options(parser):
        for value in _bad_values(action, f):
            n += 1
            out = tmp_path / f"run{n}"
            failures.append(_run([*command, *_base(command, f, out), action.option_strings[-1], value,
                                  "--no-progress", "-q"]))
    # the positional input itself: missing, a folder, not UTF-8
    for value in ("/nonexistent/x", str(f["folder"]), str(f["bad"])):
        n += 1
        argv = [*command, *_base(command, f, tmp_path / f"run{n}")]
        if command != ("ls",) and command != ("train-detector",):
            argv[len(command)] = value
            failures.append(_run([*argv, "--no-progress", "-q"]))
    capsys.readouterr()
    failures = [x for x in failures if x]
    assert not failures, f"{len(failures)} of {n} runs gave a traceback:\n" + "\n".join(failures[:10])
