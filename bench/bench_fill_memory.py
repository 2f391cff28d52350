"""Benchmark: peak memory of `veil fill` as the corpus grows (it must stream: peak RSS bounded by the chunk).

Writes N short masked documents (typed placeholders filled by Faker: [PHONE_NUMBER_1],
[EMAIL_ADDRESS_1], and a [MASK] in every tenth), builds a tiny randomly initialised 2-layer BERT
masked LM (the filler's model: real code path, seconds of work), runs
``veil fill IN -o OUT --filler mlm --model TINY -q`` under ``/usr/bin/time -v`` for each N and
prints peak RSS and its ratio to the smallest N. ``--baseline DIR`` runs the same with another
veil checkout (e.g. one before streaming fill) for comparison.

    python bench/bench_fill_memory.py                      # N = 10,000 and 200,000
    python bench/bench_fill_memory.py --sizes 10000 200000 --baseline /tmp/veil-old
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write_masked(path: Path, n: int) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            text = f"hi this is joe, call me at [PHONE_NUMBER_1] or mail [EMAIL_ADDRESS_1] ok {i}"
            if i % 10 == 0:
                text += " see you [MASK]"
            f.write(json.dumps({"id": f"d{i}", "text": text, "turn": i}) + "\n")


def tiny_model(folder: Path) -> None:
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(
        set("hi this is call me at or mail ok see you soon then later bye the a and to".split()))
    tok = BertTokenizer(vocab={w: i for i, w in enumerate(words)}, do_lower_case=True)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(tok), hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, max_position_embeddings=64, type_vocab_size=1)
    BertForMaskedLM(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)


def peak_rss(veil_root: Path, src: Path, out: Path, model: Path) -> tuple[float, float]:
    """(peak RSS in MB, wall seconds) of one `veil fill` run."""
    env = {**os.environ, "PYTHONPATH": str(veil_root)}
    cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "veil", "fill", str(src), "-o", str(out), "--filler", "mlm",
           "--model", str(model), "--strategy", "top1", "--no-avoid", "--threads", "1"]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=veil_root)
    secs = time.perf_counter() - t0
    if r.returncode:
        raise SystemExit(f"veil fill failed:\n{r.stderr[-2000:]}")
    kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
    return kb / 1024, secs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 200_000])
    ap.add_argument("--baseline", type=Path, help="another veil checkout to measure the same way")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="veil-fill-mem-") as tmp:
        tmp = Path(tmp)
        tiny_model(tmp / "model")
        rows = []
        for label, root in [("this checkout", ROOT)] + ([("baseline", args.baseline)] if args.baseline else []):
            base = None
            for n in args.sizes:
                src = tmp / f"m{n}.jsonl"
                if not src.exists():
                    write_masked(src, n)
                out = tmp / f"f{n}-{label.replace(' ', '_')}.jsonl"
                mb, secs = peak_rss(root, src, out, tmp / "model")
                for p in tmp.glob(f"{out.name}*"):
                    p.unlink()
                base = base or mb
                rows.append((label, n, mb, mb / base, secs))
                print(f"{label:14s} {n:>8,} docs  peak RSS {mb:7.1f} MB  ({mb / base:4.2f}x)  {secs:6.1f} s",
                      flush=True)
    print("\n| veil | documents | peak RSS (MB) | ratio to smallest | wall (s) |\n|---|---:|---:|---:|---:|")
    for label, n, mb, ratio, secs in rows:
        print(f"| {label} | {n:,} | {mb:.0f} | {ratio:.2f} | {secs:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
