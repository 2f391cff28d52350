"""Fill stage benchmark: speed of the ``llm`` filler (real SmolLM2-135M-Instruct) against the naive scorer.

One command: ``.venv/bin/python bench/bench_fill_llm_speed.py`` (defaults sized for <= 5 minutes on
two idle CPU threads; ``--limit N`` / ``--naive-limit N`` enlarge it).

Workload: Switchboard validation utterances (``../shared/data/switchboard/val``, read with veil's
``switchboard`` reader) masked with the ``allow_list`` masker, ``[MASK]`` style; the first
``--limit`` utterances that get at least one marker. Every (merged) marker is filled Top-1, left to
right, by veil's fill loop; only the back-end differs.

Configurations:

- ``naive``: what a user would write: ``tests/fill/naive_llm.py`` (``propose_naive`` / ``score_naive``): per
  marker, one forward over the left context for the first-token proposals, one forward per
  extension step of each proposal, then **one full-sentence forward per candidate**; no cache, no
  batching. Runs on the first ``--naive-limit`` utterances (it is slow);
- ``veil``: the exact ``LLMFiller`` in fp32 (``shortlist=None``; the default before issue 18: left context encoded once per marker, its key/value cache
  shared by all candidates, candidates of all markers batched, LM head only where a probability is
  needed), timed on the naive run's utterances (same work, so the ratio is exact) and on all
  ``--limit`` utterances. Its Top-1 substitutes must equal the naive ones (exit code 1 otherwise);
- approximate modes, each with its Top-1 agreement with ``veil`` (share of identical substitutes
  on all ``--limit`` utterances) and its speed-up over it: ``default`` (the filler's defaults:
  ``--dtype auto``, i.e. bfloat16 where the CPU has AVX-512 BF16 / AMX, and a shortlist: all
  proposals scored with the first words of the right context, the best few with all of it),
  ``veil-bf16`` (bfloat16 weights, every candidate scored in full), ``veil-shortlist`` (fp32 with
  the shortlist), ``veil-c16`` (16 instead of 32 proposals re-scored per marker), ``veil-bf16-c16``,
  ``veil-r8`` (right context cut at 8 words instead of 32), and ``fast-*``: the default with fewer
  proposals (``c16``), a shorter shortlist (``s3``), right context (``r12``) and word length (``w4``).

Timings on a shared machine vary; every configuration runs in the same process, one after the other.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EXACT = {"shortlist": None}  # LLMFiller options of the exact filler (veil's default before issue 18)
APPROX = {  # name: (LLMFiller options, model dtype)
    "default": ({}, "auto"),  # what LLMFiller does unless told otherwise (dtype auto: bf16 on this CPU)
    "veil-bf16": (EXACT, "bf16"),
    "veil-shortlist": ({}, None),
    "veil-c16": ({**EXACT, "n_candidates": 16}, None),
    "veil-bf16-c16": ({**EXACT, "n_candidates": 16}, "bf16"),
    "veil-r8": ({**EXACT, "right_words": 8}, None),
    # the default's speed knobs turned further (bf16 + shortlist as the default, less work per marker)
    "fast-c16": ({"n_candidates": 16}, "auto"),
    "fast-c16-s3": ({"n_candidates": 16, "shortlist": 3}, "auto"),
    "fast-c16-s3-r12": ({"n_candidates": 16, "shortlist": 3, "right_words": 12}, "auto"),
    "fast-c12-s3-r12-w4": ({"n_candidates": 12, "shortlist": 3, "right_words": 12, "max_word_tokens": 4}, "auto"),
}


def masked_workload(limit: int, data: Path):
    from veil.io import read_documents
    from veil.mask.allow_list import AllowListMasker
    from veil.mask.engine import MaskingEngine

    val = data / "switchboard" / "val"
    if not val.is_dir():
        sys.exit(f"no Switchboard validation folder at {val}")
    engine = MaskingEngine([AllowListMasker()], style="mask")
    out = []
    for doc in read_documents(val, "switchboard"):
        if not doc.text.strip():
            continue
        m = engine.mask([doc])[0]
        if m.placeholders:
            out.append(m)
            if len(out) >= limit:
                break
    return out


def naive_filler_class():
    from tests.fill.naive_llm import rank_naive
    from veil.fill.llm import LLMFiller

    class NaiveLLMFiller(LLMFiller):
        """The same fill loop with the naive back-end: per-candidate full-sentence forwards."""

        def propose_batch(self, texts, targets, k):
            return rank_naive(self.scorer, texts, targets, k)

    return NaiveLLMFiller


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=30, help="utterances for veil and the approximate modes (default 30)")
    ap.add_argument("--naive-limit", type=int, default=6,
                    help="utterances for the naive scorer and the same-work veil run (default 6)")
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    ap.add_argument("--variants", default="naive,veil,default,veil-bf16,veil-shortlist",
                    help=f"configurations (naive, veil, {', '.join(APPROX)})")
    ap.add_argument("--model", default=None, help="causal LM (default: the packaged SmolLM2-135M-Instruct)")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    args = ap.parse_args(argv)

    import torch
    from transformers.utils import logging as hf_logging

    from veil.fill.base import document_slots
    from veil.fill.llm import LLMFiller
    from veil.models.cpu_linear import fast_linear_class, restore_linears
    from veil.models.smollm2 import load_causal_lm, resolve_dtype

    hf_logging.set_verbosity_error()
    torch.set_num_threads(args.threads)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = set(variants) - {"naive", "veil", *APPROX}
    if unknown:
        sys.exit(f"unknown variants: {', '.join(sorted(unknown))}")
    docs = masked_workload(max(args.limit, args.naive_limit), Path(args.data))
    n_naive = min(args.naive_limit, len(docs))
    docs_all, docs_naive = docs[:args.limit], docs[:n_naive]

    def markers(ds):
        return sum(len(document_slots(d)) for d in ds)

    t = time.perf_counter()
    model, tok = load_causal_lm(args.model, device="cpu")
    load_s = time.perf_counter() - t
    # what a user runs: PyTorch's own linear layers (veil switches them to oneDNN where that is faster)
    plain = copy.deepcopy(model)
    restore_linears(plain)
    kernels = "oneDNN" if any(type(m) is fast_linear_class() for m in model.modules()) else None
    print(f"workload: {len(docs_all)} Switchboard val utterances, {markers(docs_all)} markers to fill "
          f"(allow_list masking, runs merged); naive on the first {n_naive} ({markers(docs_naive)} markers); "
          f"{args.threads} thread(s), torch {torch.__version__}; model loaded in {load_s:.1f} s", flush=True)

    def run(filler, ds):
        filler.scorer  # build vocabulary tables outside the timing
        t0 = time.perf_counter()
        out = filler.fill(ds)
        return [s.substitute for d in out for s in d.substitutions], time.perf_counter() - t0

    rows = []  # (configuration, docs, markers, seconds, agreement, ratio)
    subs: dict[str, list[str]] = {}
    naive_s = None
    if "naive" in variants:
        subs["naive"], naive_s = run(naive_filler_class()(model_obj=plain, tokenizer=tok, avoid={}), docs_naive)
        rows.append(("naive (per-candidate forwards)", len(docs_naive), markers(docs_naive), naive_s, "ref", 1.0))
        print(f"  naive: {naive_s:.1f} s", flush=True)
    mismatch = False
    if "veil" in variants or any(v in APPROX for v in variants):
        veil = LLMFiller(model_obj=model, tokenizer=tok, avoid={}, **EXACT)
        if "naive" in variants:
            # the exact check runs both algorithms on the same kernels; veil as shipped may differ from
            # them by fp32 rounding only (oneDNN sums in another order)
            checks = [("veil, same utterances as naive" + (", PyTorch's linear" if kernels else ""),
                       LLMFiller(model_obj=plain, tokenizer=tok, avoid={}, **EXACT) if kernels else veil, True)]
            if kernels:
                checks.append((f"veil, same utterances as naive, {kernels} linear", veil, False))
            for name, f, exact in checks:
                same, secs = run(f, docs_naive)
                agree = sum(a == b for a, b in zip(same, subs["naive"]))
                ok = agree == len(same) == len(subs["naive"])
                mismatch = mismatch or (exact and not ok)
                rows.append((name, len(docs_naive), markers(docs_naive), secs,
                             "identical" if ok else (f"MISMATCH {agree}/{len(same)}" if exact
                                                     else f"{agree}/{len(same)} identical"), naive_s / secs))
                print(f"  {name}: {secs:.1f} s", flush=True)
        subs["veil"], secs = run(veil, docs_all)
        rows.append(("veil (exact)" + (f", {kernels} linear" if kernels else ""), len(docs_all), markers(docs_all), secs, "ref" if "naive" not in variants
                     else "exact (see above)", None))
        print(f"  veil: {secs:.1f} s", flush=True)
        for v in variants:
            if v not in APPROX:
                continue
            opts, dtype = APPROX[v]
            m = model
            if dtype == "bf16" or (dtype == "auto" and resolve_dtype("auto", "cpu") is torch.bfloat16):
                m = copy.deepcopy(model).to(torch.bfloat16)
            # a low-precision copy ranks; the fp32 model re-scores its close calls, as LLMFiller does by default
            verify = {"verify_obj": model} if m is not model and "shortlist" not in opts else {}
            f = LLMFiller(model_obj=m, tokenizer=tok, avoid={}, **opts, **verify)
            subs[v], secs = run(f, docs_all)
            agree = sum(a == b for a, b in zip(subs[v], subs["veil"])) / max(1, len(subs["veil"]))
            rows.append((v + (" (bf16)" if m is not model else ""), len(docs_all), markers(docs_all), secs,
                         f"{100 * agree:.1f}% of veil's", None))
            print(f"  {v}: {secs:.1f} s", flush=True)
            del f, m
    naive_rate = markers(docs_naive) / naive_s if naive_s else None
    exact = next((r for r in rows if r[0].startswith("veil (exact)")), None)
    exact_rate = exact[2] / exact[3] if exact else None
    print(f"\nload average after the runs: {os.getloadavg()[0]:.2f} (2 cores; above 2, other jobs shared them)")
    print("\n| configuration | utterances | markers | seconds | masks/s | sentences/s | x naive | x exact fp32 | Top-1 choices |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, nd, nm, secs, agree, ratio in rows:
        if ratio is None and naive_rate:
            ratio = (nm / secs) / naive_rate
        r = f"{ratio:.1f}" if ratio is not None else ""
        x = f"{(nm / secs) / exact_rate:.2f}" if exact_rate else ""
        print(f"| {name} | {nd} | {nm} | {secs:.1f} | {nm / secs:.2f} | {nd / secs:.2f} | {r} | {x} | {agree} |")
    if naive_rate:
        print("\n(x naive: masks/s over the naive masks/s; exact for the same-utterance row, a rate ratio otherwise)")
    if mismatch:
        bad = [(a, b) for a, b in zip(subs["naive"], subs["veil"]) if a != b][:5]
        print(f"MISMATCH: veil's Top-1 substitutes differ from the naive scorer's, e.g. {bad}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
