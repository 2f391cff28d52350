"""Benchmarks: the paper's Table 2 analogue, the share of word tokens each masking technique masks.

    .venv/bin/python bench/table2.py [--max-words N] [--data ../shared/data]

Corpora: Switchboard train (one document per conversation, utterances joined by newlines, like
the paper's Fisher calls), PTB train (one sentence a line; already lower-cased, rare words are
``<unk>`` and numbers ``N``, so ``<unk>`` counts as a word here) and WikiText-2 ``wiki.test.raw``
(one paragraph a line). Shares use ``veil.textutil`` words and ``veil.mask.stats``;
``--max-words`` caps each corpus (whole documents, in file order) for a quick run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from veil.mask.stats import masked_word_counts
from veil.mask.placeholders import merge_spans
from veil.textutil import count_words

REPO = Path(__file__).resolve().parent.parent
TECHNIQUES = ("allow_list", "vocab_threshold", "entity_tagger", "dlp", "entity_tagger + dlp")


def _capped(docs, max_words):
    out, words = [], 0
    for d in docs:
        if max_words is not None and words >= max_words:
            break
        out.append(d)
        words += count_words(d)
    return out


def switchboard(data: Path) -> list[str]:
    docs = []
    for path in sorted((data / "switchboard" / "train").glob("*.txt")):
        lines = [ln.split("|")[1] for ln in path.read_text(encoding="utf-8").splitlines() if ln.count("|") >= 2]
        docs.append("\n".join(lines))
    return docs


def lines(path: Path) -> list[str]:
    return [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


CORPORA = {
    "Switchboard train": switchboard,
    "PTB train": lambda d: lines(d / "ptb" / "ptb.train.txt"),
    "WikiText-2 test (raw)": lambda d: lines(d / "wikitext2" / "wiki.test.raw"),
}


def shares(texts: list[str]) -> dict[str, float]:
    from veil.mask.allow_list import AllowListMasker
    from veil.mask.dlp import DLPMasker
    from veil.mask.entity_tagger import EntityTaggerMasker
    from veil.mask.vocab_threshold import VocabThresholdMasker

    spans = {}
    for name, masker in [("allow_list", AllowListMasker()), ("vocab_threshold", VocabThresholdMasker()),
                         ("entity_tagger", EntityTaggerMasker()), ("dlp", DLPMasker())]:
        t0 = time.perf_counter()
        spans[name] = masker.detect_batch(texts)
        print(f"    {name}: {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    spans["entity_tagger + dlp"] = [a + b for a, b in zip(spans["entity_tagger"], spans["dlp"])]
    out = {}
    for name in TECHNIQUES:
        masked = total = 0
        for text, s in zip(texts, spans[name]):
            m, t = masked_word_counts(text, merge_spans(s))
            masked += m
            total += t
        out[name] = masked / total if total else 0.0
    out["words"] = total
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--max-words", type=int, default=None, help="cap each corpus at about N words")
    args = ap.parse_args()
    rows = {}
    for name, load in CORPORA.items():
        try:
            texts = _capped(load(args.data), args.max_words)
        except FileNotFoundError as e:
            print(f"skipping {name}: {e}", file=sys.stderr)
            continue
        print(f"{name}: {len(texts)} documents", file=sys.stderr)
        rows[name] = shares(texts)
    print("\nShare of word tokens masked (the paper's Table 2 layout)")
    print(f"{'corpus':<24} {'words':>9} " + " ".join(f"{t:>20}" for t in TECHNIQUES))
    for name, r in rows.items():
        print(f"{name:<24} {r['words']:>9} " + " ".join(f"{r[t]:>19.1%} " for t in TECHNIQUES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
