"""Corpus I/O stage: records (dicts) for masked documents, the format `veil mask` writes and `veil fill` reads."""

from __future__ import annotations

from typing import Any

from veil.types import MaskedDocument


def masked_to_record(md: MaskedDocument, drop: frozenset[str] = frozenset()) -> dict[str, Any]:
    rec: dict[str, Any] = {"id": md.id, "text": md.text,
                           "placeholders": [p.to_dict() for p in md.placeholders], "style": md.style}
    if md.person is not None:
        rec["person"] = md.person
    if md.group is not None:
        rec["group"] = md.group
    for k, v in md.meta.items():
        if k not in drop:
            rec.setdefault(k, v)
    return rec
