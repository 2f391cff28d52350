"""The README's first hour prints what the commands print: every ``$ veil ...`` block runs and is compared.

A fenced block whose lines start with ``$ `` is a shell session: each command runs (in a folder
holding a copy of ``examples/``, ``veil`` being this checkout's), and the lines after it are what it
must print, standard output and veil's log lines together, the log's clock time left out. ``...``
in an expected line stands for any text; an expected block's last line ``...`` for any further lines.
Blocks run in README order in one folder, so a later block reads what an earlier one wrote.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CLOCK = re.compile(r"^\d\d:\d\d:\d\d (?=(INFO|WARNING|ERROR) )")
#: commands that need a model this suite does not load (the neural tagger and Faker are fine; SmolLM2 is not),
#: or a browser
SLOW = ("--filler llm", "veil experiment", "make ", "veil review")


def sessions(text: str) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) of every shell line of the README's fenced blocks, in order."""
    out: list[tuple[str, list[str]]] = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.M | re.S):
        lines = block.splitlines()
        if not lines or not lines[0].startswith("$ "):
            continue
        for line in lines:
            if line.startswith("$ "):
                out.append((line[2:], []))
            else:
                out[-1][1].append(line)
    return out


def matches(expected: list[str], got: list[str]) -> bool:
    if expected and expected[-1] == "...":
        expected, got = expected[:-1], got[:len(expected) - 1]
    if len(expected) != len(got):
        return False
    return all(re.fullmatch(".*".join(map(re.escape, e.split("..."))), g) for e, g in zip(expected, got))


def test_readme_first_hour_prints_what_the_commands_print(tmp_path):
    (tmp_path / "examples").mkdir()
    for name in ("calls.jsonl", "calls.csv"):
        shutil.copy(ROOT / "examples" / name, tmp_path / "examples" / name)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    veil = bindir / "veil"
    veil.write_text(f"#!/bin/sh\nexec {sys.executable} -m veil \"$@\"\n")
    veil.chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    ran = 0
    for command, expected in sessions((ROOT / "README.md").read_text(encoding="utf-8")):
        if any(s in command for s in SLOW):
            continue
        r = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert r.returncode == 0, f"$ {command}\n{r.stderr}"
        got = [CLOCK.sub("", line) for line in (r.stdout + r.stderr).splitlines()]
        assert matches(expected, got), f"$ {command}\nREADME says:\n" + "\n".join(expected) + \
            "\nit prints:\n" + "\n".join(got)
        ran += 1
    assert ran >= 8, "the README's first hour lost its commands"


@pytest.mark.parametrize("expected, got, ok", [
    (["a ... b"], ["a xyz b"], True), (["a"], ["a", "b"], False), (["a", "..."], ["a", "b", "c"], True),
    (["x"], ["y"], False)])
def test_expected_lines_match_with_ellipsis(expected, got, ok):
    assert matches(expected, got) is ok
