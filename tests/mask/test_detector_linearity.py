"""Every DLP detector's time is linear in its input: adversarial and generated repetitions, a bound per character.

A back-tracking regex that tries a long match from every position of a run and gives it back
(the money / quantity / duration amounts on runs of number words or dotted digits, the e-mail
local part on ``a%a%...@``) costs time quadratic in the run: 8 times the input, 64 times the
time. These tests time each detector (CPU time of this process, best of three) on 1k and 8k
characters and require the 8k time to stay within 3x of linear (plus a few milliseconds of
slack for timer noise), and under a bound per character. ``bench/bench_detector_linearity.py``
prints the full table (1k to 64k).
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.bench_detector_linearity import ADVERSARIAL, time_find
from veil.registry import detectors

SMALL, LARGE = 1000, 8000
#: allowed growth of the time per character from SMALL to LARGE (linear: 1; quadratic: 8)
MAX_GROWTH = 3.0
SLACK_S = 0.02
#: the slowest linear detector (phonenumbers' matcher) takes ~35 µs a character; quadratic ones took ms
MAX_US_PER_CHAR = 150.0
#: phonenumbers is timed on one family only: at 35 µs a character it would take the
#: fuzz test past its time budget
FUZZED = [name for name in detectors.names() if name != "phone"]

_BUILT: dict[str, object] = {}


def _detector(name):
    if name not in _BUILT:
        det = detectors.get(name)()
        list(det.find("warm 123 one two at x dot com", "t"))  # lazy tables load outside the timing
        _BUILT[name] = det
    return _BUILT[name]


def _assert_linear(name: str, make) -> None:
    det = _detector(name)
    small, large = time_find(det, make(SMALL), 3), time_find(det, make(LARGE), 3)
    bound = small * (LARGE / SMALL) * MAX_GROWTH + SLACK_S
    assert large <= bound, (f"{name}: {large * 1e3:.1f} ms on {LARGE} characters, {small * 1e3:.1f} ms on {SMALL} "
                            f"(allowed {bound * 1e3:.1f} ms): super-linear")
    assert large / LARGE * 1e6 <= MAX_US_PER_CHAR, f"{name}: {large / LARGE * 1e6:.0f} µs a character"


# the probe's cases (issue 32 item 11) and their neighbours
@pytest.mark.parametrize("name, family", [
    ("money", "number words"), ("money", "dotted digits"), ("money", "comma digits"),
    ("money", "hyphenated number words"), ("quantity", "number words"), ("quantity", "dotted digits"),
    ("duration", "number words"), ("duration", "dotted digits"), ("email", "a%a%...@"),
    ("email", "x dot x dot ..."), ("username", "hot words"), ("spoken_email", "at x dot ..."),
    ("phone", "spaced digits"),
])
def test_the_probes_adversarial_inputs_take_linear_time(name, family):
    _assert_linear(name, ADVERSARIAL[family])


_UNITS = ["one ", "two ", "twenty-", "hundred ", "and ", "1", "1.", "1,", "1/", "a", "a%", "@", " dot ", " at ",
          "x", "-", ":", "http://", "www.", "Mr. ", "s ", "username ", " ", "[A_", " years", "$", "EUR ", "%",
          "teen", "th ", "'", "o'clock ", "st ", "Box ", "no. ", "May "]


def _repeat(unit: str):
    return lambda n: (unit * (n // len(unit) + 1))[:n]


@settings(derandomize=True, max_examples=10, deadline=None)
@given(st.lists(st.sampled_from(_UNITS), min_size=1, max_size=5).map("".join))
def test_every_detector_is_linear_on_generated_repetitions(unit):
    for name in FUZZED:
        _assert_linear(name, _repeat(unit))
