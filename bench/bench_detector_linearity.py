"""Benchmarks: time against input length of every DLP detector on adversarial inputs (regex back-tracking).

    python bench/bench_detector_linearity.py [--sizes 1000 2000 ... 64000] [--detectors money email] [--repeats 3]

For each detector (``veil.registry.detectors``) every input family below is generated at
each length; a family is a short pattern repeated (runs of number words, dotted digits,
``a%a%...@``, "x dot x dot ...", hot words, ...), the shapes that make a regex try a long match
from every position and give it back. The table shows, per detector, the family that costs most
at the largest length and its time per character at each length (CPU time of this process, best
of ``--repeats``: wall time on a shared machine measures the other users too), and the
ratio of the largest length's time per character to the smallest's: a linear detector stays
near 1 (the goal: within 2x from 1k to 64k characters); a quadratic one doubles with every doubling.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _repeat(unit: str, tail: str = "") -> Callable[[int], str]:
    def make(n: int) -> str:
        body = (unit * (n // len(unit) + 1))[:max(0, n - len(tail))]
        return body + tail
    return make


#: input families that make a back-tracking regex try long matches from many positions
ADVERSARIAL: dict[str, Callable[[int], str]] = {
    "number words": _repeat("one two three four five six seven eight nine ten twenty thirty hundred thousand and "),
    "hyphenated number words": _repeat("twenty-one-"),
    "dotted digits": _repeat("1."),
    "comma digits": _repeat("1,"),
    "spaced digits": _repeat("1 "),
    "digits": _repeat("1"),
    "slashed digits": _repeat("1/"),
    "a%a%...@": _repeat("a%", "@"),
    "a.a.a...@": _repeat("a.", "@"),
    "x dot x dot ...": _repeat("x dot "),
    "x at y dot ...": _repeat("x at y dot "),
    "at x dot ...": _repeat("at x dot "),
    "spelled letters": _repeat("s m i t h "),
    "hyphenated letters": _repeat("A-"),
    "dotted letters": _repeat("a."),
    "a-a-a-": _repeat("a-"),
    "http://http://": _repeat("http://"),
    "www.www.": _repeat("www."),
    "Capitalised words": _repeat("Ab "),
    "a:a:a:": _repeat("a:"),
    "spaces": lambda n: "1" + " " * max(0, n - 2) + "x",
    "hot words": _repeat("username "),
    "@a@a": _repeat("@a"),
    "s as in sam": _repeat("s as in sam "),
    "Mr. Mr.": _repeat("Mr. "),
    "amount and unit": _repeat("5 years and "),
    "letters and digits": _repeat("a1"),
    "[A_A_A": _repeat("[A_", "x"),
    "plain prose": _repeat("the cat sat on the mat and looked at the dog. "),
}


def time_find(det, text: str, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        for _span in det.find(text, "bench"):
            pass
        best = min(best, time.process_time() - t0)
    return best


def measure(name: str, sizes: list[int], repeats: int, families: dict[str, Callable[[int], str]]) -> dict:
    """The worst family of detector ``name`` at the largest size, with its time at every size."""
    from veil.registry import detectors

    det = detectors.get(name)()
    det_find = list(det.find("warm up 123 one two at x dot com", "bench"))  # lazy tables load here
    del det_find
    worst = max(families, key=lambda f: time_find(det, families[f](sizes[-1]), 1))
    times = [time_find(det, families[worst](n), repeats) for n in sizes]
    return {"detector": name, "family": worst, "times": times}


def main(argv: list[str] | None = None) -> int:
    from veil.registry import detectors

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000, 8000, 16000, 32000, 64000])
    from veil.mask.detectors import DEFAULT_DETECTORS

    ap.add_argument("--detectors", nargs="+", default=list(DEFAULT_DETECTORS), choices=detectors.names(),
                    metavar="NAME")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    sizes = sorted(args.sizes)
    print("| detector | worst input | " + " | ".join(f"{n // 1000}k µs/char" for n in sizes)
          + f" | {sizes[-1] // 1000}k s | ratio {sizes[-1] // 1000}k/{sizes[0] // 1000}k |")
    print("|---|---|" + "---:|" * (len(sizes) + 2))
    worst_ratio = 0.0
    for name in args.detectors:
        r = measure(name, sizes, args.repeats, ADVERSARIAL)
        per = [t / n * 1e6 for t, n in zip(r["times"], sizes)]
        ratio = per[-1] / per[0] if per[0] > 0 else float("inf")
        worst_ratio = max(worst_ratio, ratio)
        print(f"| {name} | {r['family']} | " + " | ".join(f"{p:.2f}" for p in per)
              + f" | {r['times'][-1]:.3f} | {ratio:.2f} |", flush=True)
    print(f"\nworst ratio of time per character ({sizes[-1]} vs {sizes[0]} characters): {worst_ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
