"""Detect and mask stage (data build): the TAB train split's DEM / MISC identifiers, as terms for the ``quasi`` masker.

    .venv/bin/python scripts/build_quasi_terms.py [../shared/data/tab/tab_train_dev.jsonl]

Writes ``veil/data/quasi/tab_train_terms.tsv`` (``term<TAB>TYPE``). Only documents with
``dataset_type == "train"`` are read, so scores on TAB's dev documents stay honest. A term is kept
when it is a DIRECT or QUASI mention of type DEM or MISC, holds a letter, has at most four words and
is not only a number with a unit (ages and amounts are the DLP detectors' job).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "veil" / "data" / "quasi" / "tab_train_terms.tsv"


def main() -> int:
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO.parent / "shared" / "data" / "tab" / "tab_train_dev.jsonl"
    terms: Counter[tuple[str, str]] = Counter()
    for line in src.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec["metadata"]["provenance"].get("dataset_type") != "train":
            continue
        for e in rec["entities"]:
            if e["entity_type"] not in ("DEM", "MISC") or e["identifier_type"] not in ("DIRECT", "QUASI"):
                continue
            term = " ".join(e["span_text"].lower().strip(" .,;:“”\"'()").split())
            term = re.sub(r"^(?:a|an|the|his|her|their)\s+", "", term)
            words = re.findall(r"[^\W_]+", term)
            if not words or len(words) > 4 or not any(c.isalpha() for c in term) or any(w.isdigit() for w in words):
                continue
            terms[(term, e["entity_type"])] += 1
    OUT.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"# {len(terms)} DEM / MISC terms of TAB's train split (scripts/build_quasi_terms.py); term<TAB>type"]
    lines += [f"{t}\t{k}" for (t, k) in sorted(terms)]
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(terms)} terms to {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
