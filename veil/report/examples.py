"""Report stage: a few training documents shown original -> masked -> filled, for the report's examples."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Mapping, Sequence

from veil.types import Document


def collect_examples(originals: Sequence[Document], masked: Mapping[str, Path],
                     filled: Mapping[tuple[str, str], Path], n: int = 3,
                     max_chars: int = 160) -> list[dict[str, Any]]:
    """``n`` documents that every technique masked something in, short enough to read.

    ``masked``: technique -> its masked JSONL; ``filled``: (technique, method) -> the filled JSONL.
    The choice is by a hash of the id (stable across runs, spread over the corpus), not the first n.
    """
    from veil.io.records import read_filled, read_masked

    if n <= 0 or not masked:
        return []
    by_tech = {t: {d.id: d for d in read_masked(p)} for t, p in masked.items()}
    fills = {key: {d.id: d.text for d in read_filled(p)} for key, p in filled.items()}
    candidates = [d for d in originals
                  if 20 <= len(d.text) <= max_chars
                  and all(d.id in docs and docs[d.id].placeholders for docs in by_tech.values())]
    candidates.sort(key=lambda d: hashlib.sha256(d.id.encode()).hexdigest())
    out = []
    for d in candidates[:n]:
        rows = []
        for tech, docs in by_tech.items():
            rows.append({"technique": tech, "masked": docs[d.id].text,
                         "fills": [{"method": m, "text": texts.get(d.id, "")} for (t, m), texts in fills.items()
                                   if t == tech]})
        out.append({"id": d.id, "original": d.text, "rows": rows})
    return out
