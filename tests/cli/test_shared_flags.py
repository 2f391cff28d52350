"""One flag vocabulary on every command (issue 16; issue 19 case 7): walk every parser, run both list spellings."""

import argparse
import json
import re

import pytest

from veil.cli import COMMANDS, build_parser, main, parsers_of
from veil.mask.base import Masker
from veil.run.components import DEFAULT_MASKERS
from veil.registry import maskers
from veil.types import Span


class NamesMasker(Masker):
    name = "names"

    def detect(self, text):
        return [Span(m.start(), m.end(), "PERSON_NAME", self.name) for m in re.finditer(r"(?<=\s)[A-Z][a-z]+", text)]


class DigitsMasker(Masker):
    name = "digits"

    def detect(self, text):
        return [Span(m.start(), m.end(), "PHONE_NUMBER", self.name) for m in re.finditer(r"\d{3,}", text)]


@pytest.fixture(autouse=True)
def fakes(monkeypatch):
    monkeypatch.setitem(maskers._entries, "names", NamesMasker)
    monkeypatch.setitem(maskers._entries, "digits", DigitsMasker)


def _leaf_parsers():
    for command in COMMANDS:
        top = build_parser(command)
        sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
        for p in parsers_of(sub):
            if not any(isinstance(a, argparse._SubParsersAction) for a in p._actions):
                yield p.prog, p


LEAVES = dict(_leaf_parsers())


@pytest.mark.parametrize("prog", sorted(LEAVES))
def test_every_command_has_the_shared_flags(prog):
    p = LEAVES[prog]
    options = {o: a for a in p._actions for o in a.option_strings}
    for flag in ("-v", "--verbose", "-q", "--quiet", "--no-progress"):
        assert flag in options, f"{prog} lacks {flag}"
    for a in p._actions:
        if a.nargs in ("+", "*") and a.option_strings:  # a list-valued flag: repeated and space-separated
            assert isinstance(a, argparse._ExtendAction), f"{prog} {a.option_strings[0]} must extend, not replace"
        assert type(a) is not argparse._AppendAction or a.dest == "set", \
            f"{prog} {a.option_strings} appends single values: use nargs='+' with action='extend'"
    if "--out" in options:
        assert options["--out"] is options.get("-o") is options.get("--output"), f"{prog}: -o/--output"
    if "--set" in options:
        assert options["--set"].metavar.endswith("=VALUE")


def test_verbose_and_quiet_anywhere_and_version(capsys):
    for argv in (["-v", "ls"], ["ls", "-v"], ["-q", "ls"], ["ls", "--quiet"]):
        assert main(argv) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("veil ")


@pytest.mark.parametrize("prog", ["veil audit identifiers", "veil audit risk", "veil audit review export",
                                  "veil eval-detect", "veil mask"])
def test_masker_defaults_are_one_list(prog):
    from veil.cli.common import maskers_of

    p = LEAVES[prog]
    required = [a for a in p._actions if a.required and a.option_strings]
    argv = ["x"] + [x for a in required for x in (a.option_strings[0], (a.choices and list(a.choices)[0]) or "x")]
    if prog == "veil audit review export":
        argv = ["x", "--format", "jsonl", "-o", "x"]
    assert maskers_of(p.parse_args(argv)) == list(DEFAULT_MASKERS)


def _conll(path):
    path.write_text("Call\tO\nAnna\tB-PER\nat\tO\n5551234\tO\n\nBob\tB-PER\nsaid\tO\nhi\tO\n", encoding="utf-8")
    return path


def _jsonl(path):
    path.write_text("".join(json.dumps({"id": i, "text": f"call Anna at 555123{i}", "person": f"p{i % 2}"}) + "\n"
                            for i in range(4)), encoding="utf-8")
    return path


# command -> (argv builder from tmp folder and an output name, what to compare)
RUNS = {
    "mask": lambda t, o: (["mask", str(_jsonl(t / "c.jsonl")), "-o", str(t / f"{o}.jsonl")], t / f"{o}.jsonl"),
    "eval-detect": lambda t, o: (["eval-detect", str(_conll(t / "g.conll")), "--format", "conll", "--json"], None),
    "audit risk": lambda t, o: (["audit", "risk", str(_conll(t / "g.conll")), "--format", "conll", "--json"], None),
    "audit identifiers": lambda t, o: (["audit", "identifiers", str(_jsonl(t / "c.jsonl")), "--format", "jsonl",
                                        "--json"], None),
    "audit review export": lambda t, o: (["audit", "review", "export", str(_jsonl(t / "c.jsonl")), "--format",
                                          "jsonl", "--sample", "4", "-o", str(t / o)], t / o),
}


def _result(capsys, argv, out):
    assert main(argv + ["-q"]) == 0
    printed = capsys.readouterr().out
    if out is None:
        return re.sub(r'"?(time|seconds)"?[:=] ?[0-9.]+s?', "", printed)
    if not out.is_dir():
        return out.read_text()
    return [(str(f.relative_to(out)), f.read_text()) for f in sorted(out.rglob("*")) if f.is_file()]


@pytest.mark.parametrize("command", sorted(RUNS))
def test_repeated_and_space_separated_maskers_mean_the_same(tmp_path, capsys, command):
    a_argv, a_out = RUNS[command](tmp_path, "a")
    b_argv, b_out = RUNS[command](tmp_path, "b")
    a = _result(capsys, a_argv + ["--masker", "names", "--masker", "digits"], a_out)
    b = _result(capsys, b_argv + ["--masker", "names", "digits"], b_out)
    d_argv, d_out = RUNS[command](tmp_path, "d")
    only_last = _result(capsys, d_argv + ["--masker", "digits"], d_out)
    assert a == b
    assert a != only_last  # both maskers ran, not just the last one given


def test_list_flags_of_audit_commands_accept_both_spellings():
    from veil.cli.common import list_value

    p = LEAVES["veil audit identifiers"]
    for argv in (["--sweep-k", "2", "--sweep-k", "4"], ["--sweep-k", "2", "4"], ["--sweep-k", "2,4"]):
        assert list_value(p.parse_args(["x", "--format", "jsonl", *argv]).sweep_k) == ["2", "4"]
    p = LEAVES["veil audit ppmlm"]
    for argv in (["--methods", "mlm", "--methods", "dp"], ["--methods", "mlm", "dp"], ["--methods", "mlm,dp"]):
        assert list_value(p.parse_args(["x", "-o", "o", *argv]).methods) == ["mlm", "dp"]


def test_a_registered_filler_is_offered(monkeypatch):
    from veil.registry import fillers

    monkeypatch.setitem(fillers._entries, "my-filler", object)
    for command in ("fill", "finetune"):  # parsers are built per call, so the registry is read then
        top = build_parser(command)
        sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
        assert "my-filler" in next(a for a in sub._actions if "--filler" in a.option_strings).choices


@pytest.mark.parametrize("verbose,quiet,veil_info,third_party_info", [
    (False, False, True, False), (True, False, True, True), (False, True, False, False)])
def test_third_party_info_lines_only_with_verbose(verbose, quiet, veil_info, third_party_info):
    import logging

    from veil.cli import configure_logging

    root_level = logging.getLogger().level
    try:
        configure_logging(verbose, quiet)
        assert logging.getLogger("veil.run.corpus").isEnabledFor(logging.INFO) is veil_info
        assert logging.getLogger("some_library.module").isEnabledFor(logging.INFO) is third_party_info
    finally:
        logging.getLogger().setLevel(root_level)
        logging.getLogger("veil").setLevel(logging.NOTSET)
