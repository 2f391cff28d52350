"""Benchmarks: run every speed benchmark (and the fill quality report) in turn (`make bench`); each prints its own table.

    python bench/run_all.py [--quick]

--quick passes each benchmark its smallest sensible size, for a smoke run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# (script, extra arguments for --quick)
BENCHMARKS = [
    ("bench_mask.py", ["--limit", "2000"]),
    ("bench_fill_speed.py", ["--limit", "60"]),
    ("bench_fill_llm_speed.py", ["--limit", "8", "--naive-limit", "2"]),
    ("bench_fill_quality.py", ["--limit", "10"]),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    failed = []
    for script, quick in BENCHMARKS:
        path = HERE / script
        if not path.exists():
            print(f"== {script}: not present, skipped")
            continue
        print(f"== {script}", flush=True)
        if subprocess.run([sys.executable, str(path), *(quick if args.quick else [])]).returncode:
            failed.append(script)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
