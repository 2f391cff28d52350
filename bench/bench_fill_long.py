"""Fill stage benchmark: seconds to fill one long document, by its length (the loop must be linear).

One command: ``.venv/bin/python bench/bench_fill_long.py`` (``--lengths`` in characters, ``--filler``).

The document repeats "Hello, this is Maria Lopez calling from Boston about card 4111 1111 1111 1111,
thanks." with its person, place and card masked in ``typed`` style (one key per placeholder: every
placeholder is its own draw), about one placeholder every 29 characters.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", default="15625,62500,125000,250000,1000000")
    ap.add_argument("--filler", default="faker")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tests" / "fill"))
    from test_scaling import long_document

    from veil.registry import fillers

    filler = fillers.get(args.filler)()
    print("| characters | placeholders | seconds | microseconds per character |\n|---:|---:|---:|---:|")
    for n in (int(x) for x in args.lengths.split(",")):
        doc = long_document(n)
        t = time.perf_counter()
        filler.fill([doc])
        dt = time.perf_counter() - t
        print(f"| {n:,} | {len(doc.placeholders):,} | {dt:.2f} | {1e6 * dt / n:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
