"""Benchmark of the ray engine: masks/s and words/s for 1 and 2 Ray workers, local vs Ray overhead, peak memory per worker.

    .venv/bin/python bench/bench_scale.py [--mask-docs 4000] [--fill-docs 40] [--skip-fill] [--data ../shared/data]

Workload: Switchboard train utterances (``switchboard/train``, veil's ``switchboard`` reader) written
as one JSONL corpus. Masking: ``entity_tagger`` + ``dlp`` (the default maskers), typed numbered
placeholders. Filling: the first ``--fill-docs`` utterances masked by ``allow_list`` (``[MASK]``
markers), filled Top-1 by the default ``llm`` filler.

Rows, all on the same input in this one process, one after the other:

- ``local``: the stage in this process (what ``veil mask`` / ``veil fill`` run), one torch thread;
- ``ray, N workers``: the corpus loop (``map_units``) on the Ray executor, N actors of 1 CPU each on a local Ray cluster started once
  before the timings (cluster start-up is not timed; actor start-up, i.e. model loading, is: it is
  part of every run).

``x local`` divides a row's rate by the local row's (below 1: the engine's overhead on one worker);
``x 1 worker`` is the scaling ratio. Peak RSS per worker is each actor's ``ru_maxrss`` at its last
batch. The machine's load (``os.getloadavg``) is printed with the table: other users' jobs slow
every row, the 2-worker row most.

Also timed: typed substitutes drawn without a model (``veil.fill.typed.fake_value``), per label.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from veil.run.stages import FillStage, MaskStage  # noqa: E402


class MeasuredMaskStage(MaskStage):
    """Records the worker's peak RSS after every batch (one file per process)."""

    def __init__(self, make_engine, rss_dir: str) -> None:
        super().__init__(make_engine)
        self.rss_dir = rss_dir

    def __call__(self, docs):
        out = super().__call__(docs)
        _note_rss(self.rss_dir)
        return out


class MeasuredFillStage(FillStage):
    def __init__(self, make_filler, rss_dir: str) -> None:
        super().__init__(make_filler)
        self.rss_dir = rss_dir

    def __call__(self, docs):
        out = super().__call__(docs)
        _note_rss(self.rss_dir)
        return out


def _note_rss(folder: str) -> None:
    Path(folder, f"{os.getpid()}.rss").write_text(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))


def _peak_rss_mib(folder: str) -> str:
    vals = [int(p.read_text()) / 1024 for p in Path(folder).glob("*.rss")]
    return " / ".join(f"{v:.0f}" for v in sorted(vals)) if vals else "?"


def make_mask_engine():
    from veil.mask.engine import MaskingEngine
    from veil.registry import maskers

    return MaskingEngine([maskers.get("entity_tagger")(), maskers.get("dlp")()], style="numbered")


def make_filler():
    import torch

    from veil.registry import create, fillers

    torch.set_num_threads(1)
    return create(fillers, "llm", avoid={})


def read_jsonl(path: str):
    from veil.io.formats import read_documents

    return read_documents(path, "jsonl")


def read_masked(path: str):
    from veil.io.records import read_masked

    return read_masked(path, "jsonl")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mask-docs", type=int, default=4000, help="utterances masked (default 4000)")
    ap.add_argument("--fill-docs", type=int, default=40, help="utterances filled (default 40)")
    ap.add_argument("--skip-fill", action="store_true")
    ap.add_argument("--skip-mask", action="store_true")
    ap.add_argument("--workers", default="1,2", help="Ray worker counts (default 1,2)")
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    args = ap.parse_args(argv)

    import ray
    import torch

    from veil.run.corpus import map_units
    from veil.run.executors import RayExecutor, init_ray
    from veil.io.formats import read_documents
    from veil.io.records import masked_to_record
    from veil.textutil import count_words

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import bench/
    torch.set_num_threads(1)
    val = Path(args.data) / "switchboard" / "train"
    if not val.is_dir():
        sys.exit(f"no Switchboard folder at {val}")
    tmp = Path(tempfile.mkdtemp(prefix="bench_scale_"))
    docs = []
    for d in read_documents(val, "switchboard"):
        if d.text.strip():
            docs.append(d)
            if len(docs) >= max(args.mask_docs, args.fill_docs * 20):
                break
    counts = [int(w) for w in args.workers.split(",")]
    init_ray(None, max(counts))
    print(f"load before: {os.getloadavg()}; torch {torch.__version__}; ray {ray.__version__}", flush=True)
    rows = []

    def table_rows(stage_name, unit_count, words, run_local, run_ray):
        t = time.perf_counter()
        run_local()
        local_s = time.perf_counter() - t
        rows.append((stage_name, "local (1 thread)", local_s, unit_count, words, None, None, "-"))
        base = None
        for n in counts:
            rss = tempfile.mkdtemp(dir=tmp)
            t = time.perf_counter()
            run_ray(n, rss)
            secs = time.perf_counter() - t
            base = base or secs
            rows.append((stage_name, f"ray, {n} worker{'s' if n > 1 else ''}", secs, unit_count, words,
                         local_s / secs, base / secs, _peak_rss_mib(rss)))
            print(f"  {stage_name} ray {n}: {secs:.1f} s (load {os.getloadavg()[0]:.1f})", flush=True)

    if not args.skip_mask:
        src = tmp / "corpus.jsonl"
        src.write_text("".join(json.dumps({"id": d.id, "text": d.text}) + "\n" for d in docs[:args.mask_docs]))
        words = sum(count_words(d.text) for d in docs[:args.mask_docs])
        eng = make_mask_engine()
        eng.mask(docs[:20])  # warm-up: models loaded outside the local timing, as Ray's actors load theirs
        masked = []

        def local_mask():
            masked.extend(eng.mask(list(read_jsonl(str(src)))))

        def ray_mask(n, rss):
            for _ in map_units(MeasuredMaskStage(make_mask_engine, rss), read_jsonl(str(src)),
                               executor=RayExecutor(n), batch_size=256):
                pass

        # count the placeholders once (the same for every row)
        n_ph = sum(len(m.placeholders) for m in eng.mask(docs[:args.mask_docs]))
        table_rows("mask", n_ph, words, local_mask, ray_mask)

    if not args.skip_fill:
        from veil.mask.allow_list import AllowListMasker
        from veil.mask.engine import MaskingEngine

        al = MaskingEngine([AllowListMasker()], style="mask")
        fill_docs = [m for m in al.mask(docs) if m.placeholders][:args.fill_docs]
        msrc = tmp / "masked.jsonl"
        msrc.write_text("".join(json.dumps(masked_to_record(m), ensure_ascii=False) + "\n" for m in fill_docs))
        from veil.fill.base import document_slots

        n_slots = sum(len(document_slots(m)) for m in fill_docs)
        words = sum(count_words(m.text) for m in fill_docs)
        filler = make_filler()
        filler.fill(fill_docs[:1])  # model loaded outside the local timing

        def local_fill():
            filler.fill(list(read_masked(str(msrc))))

        def ray_fill(n, rss):
            for _ in map_units(MeasuredFillStage(make_filler, rss), read_masked(str(msrc)),
                               executor=RayExecutor(n), batch_size=max(1, len(fill_docs) // (2 * n))):
                pass

        table_rows("fill (llm, top1)", n_slots, words, local_fill, ray_fill)

    typed_rows = []
    try:
        import random

        from veil.fill import typed

        rng = random.Random(0)
        for label in ("PERSON", "PHONE_NUMBER", "EMAIL_ADDRESS", "DATE_TIME", "LOCATION", "CREDIT_CARD"):
            if not typed.has_fallback(label):
                continue
            typed.fake_value(label, rng)
            t = time.perf_counter()
            n = 2000
            for _ in range(n):
                typed.fake_value(label, rng)
            typed_rows.append((label, n / (time.perf_counter() - t)))
    except ImportError:
        pass

    print(f"\nload after: {os.getloadavg()}")
    print("\n| stage | engine | seconds | placeholders/s | words/s | x local | x 1 worker | peak RSS per worker (MiB) |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for stage, eng_name, secs, units, words, x_local, x_one, rss in rows:
        print(f"| {stage} | {eng_name} | {secs:.1f} | {units / secs:.1f} | {words / secs:.0f} | "
              f"{'' if x_local is None else f'{x_local:.2f}'} | {'' if x_one is None else f'{x_one:.2f}'} | {rss} |")
    if typed_rows:
        print("\n| typed label (no model) | substitutes/s |\n|---|---:|")
        for label, rate in typed_rows:
            print(f"| {label} | {rate:,.0f} |")
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
