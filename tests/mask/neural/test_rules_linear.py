"""Every span rule, and tidy as a whole, costs the same per character from 1,000 to 64,000 characters.

Each rule gets an input made to hurt it (many spans in one spelled run, one span of a whole text of edge words,
a long run of duration words before "ago", a naming context beside a span that covers the text, ...). Timings are
CPU time, the best of three (one run at 64k) with the garbage collector off; a rule whose cost grows with the square of the length takes
64 times as long per character at 64k as at 1k, and 8 times from 8k; the bound here is generous for shared CPUs.
"""

from __future__ import annotations

import gc
import re
import time

import pytest

from veil.mask.neural.rules import REGISTRY, apply_rule, tidy
from veil.types import Span

SIZES = (1000, 8000, 64000)
#: the most the cost per character may grow from 1k to 64k (flat within 2x measured; noise allowed)
MAX_GROWTH = 4.0

# rule -> (repeated text, label, which words are spans: a regex, or "whole" for one span over all of it,
# or "both" for a span over all of it and one on each word; written?)
ADVERSARIAL = {
    "trim_edges": ("the ", "PER", "whole"),
    "spelled_acronym": ("a b c d e f g h i j k l m n o p q r s t u v w x y z ", "PER", r"\w"),
    "not_name_acronym": ("T V ", "ORG", r"\w"),
    "initials_org": ("C N N ", "PER", r"\w"),
    "valid_type": ("as far as ", "PER", r"\w+"),
    "topic_nationality": ("American ", "MISC", r"\w+"),
    "bare_number_date": ("eighty ", "DATE", r"\w+"),
    "first_name_run": ("liisa lepistö ", "ORG", r"liisa"),
    "listed_person": ("John Smith ", "ORG", r"John Smith"),
    "occupation": ("beautician ", "PER", r"\w+"),
    "named_place": ("we went to, uh, Austin ", "PER", r"Austin"),
    "titled_name": ("Dr. Melahat Filiz ", "PER", r"Melahat"),
    "cased_name": ("Sophie Lang ", "PER", r"Sophie"),
    "cased_entity": ("Chicago Bulls ", "ORG", r"Bulls"),
    "possessive": ("Sally's ", "PER", r"\S+"),
    "join_same_type": ("John Smith ", "PER", r"\w+"),
    "organisation_kind": ("Lubbock View Christian Church ", "LOC", r"\w+"),
    "institution_of": ("the House of Lords ", "ORG", r"Lords", True),
    "one_name": ("san francisco ", "ORG", r"\w+"),
    "kind_word_alone": ("the Union ", "ORG", r"Union"),
    "breed": ("part Golden Retriever ", "PER", "both"),
    "everyday_word": ("watermelon ", "PER", r"\w+"),
    "naming_context": ("hi dawn how are you ", "PER", "whole"),
    "acronym_institution": ("N C State ", "ORG", r"N C"),
}


def _input(unit: str, label: str, target: str, n: int) -> tuple[str, list[Span]]:
    text = (unit * (n // len(unit) + 1))[:n].rstrip()
    spans = []
    if target in ("whole", "both"):
        spans.append(Span(0, len(text), label, "t", 0.9))
    if target != "whole":
        pattern = r"\S+" if target == "both" else target
        spans += [Span(m.start(), m.end(), label, "t", 0.9) for m in re.finditer(pattern, text)]
    return text, spans


def _per_char(fn, text: str) -> float:
    """The least CPU time per character of a few runs (CPU time: other processes on a shared machine do not
    count; one run at 64k, where a run is long enough to time well)."""
    best = float("inf")
    gc.disable()
    try:
        for _ in range(1 if len(text) > 10000 else 3):
            t0 = time.process_time()
            fn()
            best = min(best, time.process_time() - t0)
    finally:
        gc.enable()
    return best / len(text)


def _growth(run) -> tuple[float, list[float]]:
    costs = [run(n) for n in SIZES]
    return costs[-1] / costs[0], costs


def test_every_rule_has_an_adversarial_input():
    assert set(ADVERSARIAL) == set(REGISTRY)


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_each_rule_is_linear(name):
    unit, label, target, *rest = ADVERSARIAL[name]
    written = bool(rest and rest[0])
    tidy("warm up", [], written)

    def run(n):
        text, spans = _input(unit, label, target, n)
        return _per_char(lambda: apply_rule(name, text, spans, written), text)

    growth, costs = _growth(run)
    assert growth < MAX_GROWTH, f"{name}: {', '.join(f'{c * 1e6:.2f}' for c in costs)} µs per character"


@pytest.mark.parametrize("case", ["spelled_acronym", "trim_edges", "breed", "naming_context"])
def test_tidy_as_a_whole_is_linear(case):
    unit, label, target, *_ = ADVERSARIAL[case]

    def run(n):
        text, spans = _input(unit, label, target, n)
        return _per_char(lambda: tidy(text, spans, False), text)

    growth, costs = _growth(run)
    assert growth < MAX_GROWTH, f"tidy on {case}: {', '.join(f'{c * 1e6:.2f}' for c in costs)} µs per character"
