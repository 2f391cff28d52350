"""The README's Python examples run as doctests (fast maskers and fillers only: no model is loaded)."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", ["README.md"])
def test_readme_examples_run(name):
    result = doctest.testfile(str(ROOT / name), module_relative=False, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed (details above)"
