"""Byte-compare what two revisions of veil write for the README's examples (a refactoring must change nothing).

    .venv/bin/python scripts/compare_outputs.py BASE [OTHER]     # OTHER: the working tree by default

Each revision is checked out into a temporary git worktree and run with this environment's Python
(``PYTHONPATH`` set to the worktree): `veil mask` and `veil fill --filler faker` on
``examples/calls.jsonl`` and ``examples/calls.csv``, `veil mask --stats` with the four maskers of the
README, and `veil experiment run` on a tiny experiment over ``examples/calls.jsonl`` (a 2-layer GPT-2
built from a config, the dlp technique, the faker method). Every output file is compared byte for
byte, except the experiment's timings and absolute paths; the script prints one line per file and
exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

EXPERIMENT = """name: readme-calls
train: {path: calls.jsonl, format: jsonl}
test: {path: calls.jsonl, format: jsonl}
pretrain: {path: calls.jsonl, format: jsonl}
techniques: [dlp]
style: numbered
seed: 0
baselines: [oracle, baseline0]
methods:
  - {name: faker, filler: faker}
lm: {n_layer: 2, n_embd: 32, n_head: 2, context: 32, vocab_size: 300, batch_size: 4, pretrain_epochs: 1,
     finetune_epochs: 1, seeds: 1}
report: {examples: 2}
"""

COMMANDS = [
    ["mask", "calls.jsonl", "-o", "masked.jsonl", "--no-progress"],
    ["fill", "masked.jsonl", "-o", "filled.jsonl", "--filler", "faker", "--no-progress"],
    ["mask", "calls.csv", "-o", "masked.csv", "--no-progress"],
    ["fill", "masked.csv", "-o", "filled.csv", "--filler", "faker", "--no-progress"],
    ["mask", "calls.jsonl", "--stats", "--masker", "allow_list", "vocab_threshold", "entity_tagger", "dlp",
     "--no-progress", "--stats-json", "stats.json"],
    ["experiment", "run", "exp/readme.yaml", "--out", "exp/out", "--no-progress"],
]
#: columns of the experiment's results.csv that hold times or machine paths, not results
VOLATILE = ("seconds", "_s", "dir", "time")


def run(rev: str | None, work: Path) -> Path:
    """Run the commands with revision ``rev`` (None: the working tree); returns the folder of outputs."""
    if rev is None:
        code = REPO
    else:
        code = work / "tree"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(code), rev], check=True)
    out = work / "out"
    (out / "exp").mkdir(parents=True)
    (out / "exp" / "readme.yaml").write_text(EXPERIMENT, encoding="utf-8")
    for name in ("calls.jsonl", "calls.csv"):  # relative paths: the outputs must not name the checkout
        (out / name).write_bytes((code / "examples" / name).read_bytes())
    (out / "exp" / "calls.jsonl").write_bytes((code / "examples" / "calls.jsonl").read_bytes())
    env = {**os.environ, "PYTHONPATH": str(code), "VEIL_CACHE": str(work / "cache")}
    for cmd in COMMANDS:
        args = list(cmd)
        r = subprocess.run([sys.executable, "-m", "veil", *args], cwd=out, env=env, capture_output=True, text=True)
        (out / f"stdout-{COMMANDS.index(cmd)}.txt").write_text(
            r.stdout if cmd[0] != "experiment" else "", encoding="utf-8")
        if r.returncode:
            sys.exit(f"{rev or 'working tree'}: veil {' '.join(args)} failed:\n{r.stderr[-2000:]}")
    if rev is not None:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(code)], check=True)
    return out


def _results(path: Path) -> str:
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    keep = [c for c in (rows[0] if rows else {}) if not any(v in c for v in VOLATILE)]
    return "\n".join(",".join(r[c] for c in keep) for r in rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", help="the revision to compare against (e.g. a commit before a refactoring)")
    ap.add_argument("other", nargs="?", help="the revision to compare (default: the working tree)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="veil-compare-") as tmp:
        a = run(args.base, Path(tmp, "a"))
        b = run(args.other, Path(tmp, "b"))
        names = sorted({str(p.relative_to(a)) for p in a.rglob("*") if p.is_file()
                        and "cache" not in p.parts and p.suffix in (".jsonl", ".csv", ".txt", ".json", ".md")})
        differ = 0
        for name in names:
            pa, pb = a / name, b / name
            if name.endswith("results.csv"):
                same = pb.exists() and _results(pa) == _results(pb)
            elif name.endswith(("results.md", ".veil.json", "manifest.json")) or "exp/out" in name:
                continue  # timings and paths inside; results.csv carries the numbers
            else:
                same = pb.exists() and pa.read_bytes() == pb.read_bytes()
            differ += not same
            print(f"{'same   ' if same else 'DIFFERS'} {name}")
        print(f"{len(names) - differ} identical, {differ} different")
        return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
