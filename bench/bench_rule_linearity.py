"""Benchmarks: each span rule of the neural tagger, and tidy as a whole, on the input made to hurt it, 1k to 64k.

    nice .venv/bin/python bench/bench_rule_linearity.py

The inputs are the ones ``tests/mask/neural/test_rules_linear.py`` asserts on; CPU time per character, best of
three (one run at 64k); the ratio is 64k's over 1k's (linear: 1).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "mask" / "neural"))

from test_rules_linear import ADVERSARIAL, SIZES, _input, _per_char  # noqa: E402

from veil.mask.neural.rules import apply_rule, tidy  # noqa: E402


def main() -> int:
    tidy("warm up", [], False)
    print("| rule | input | " + " | ".join(f"{n // 1000}k µs/char" for n in SIZES) + " | ratio 64k/1k |")
    print("|---|---|" + "---:|" * (len(SIZES) + 1))
    rows = [(name, name) for name in ADVERSARIAL] + [("tidy (all rules)", c) for c in ("spelled_acronym", "breed")]
    for label, case in rows:
        unit, kind, target, *rest = ADVERSARIAL[case]
        written = bool(rest and rest[0])
        costs = []
        for n in SIZES:
            text, spans = _input(unit, kind, target, n)
            fn = (lambda: tidy(text, spans, written)) if label.startswith("tidy") else \
                (lambda: apply_rule(label, text, spans, written))
            costs.append(_per_char(fn, text))
        shown = f"{unit.strip()!r} ({target if target in ('whole', 'both') else 'spans: ' + target})"
        print(f"| {label} | {shown} | " + " | ".join(f"{c * 1e6:.2f}" for c in costs) +
              f" | {costs[-1] / costs[0]:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
