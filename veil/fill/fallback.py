"""Fill stage: fill a batch without ever aborting on one document (its types' fallback values instead).

:func:`fill_batch` is the batch function every fill goes through (the corpus loop, the Python API,
the Ray and HF executors): a document the filler fails on is filled by
:func:`fallback_fill` and reported as a :class:`FillFailure`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any, Sequence

from veil.errors import VeilError
from veil.types import FilledDocument, MaskedDocument

log = logging.getLogger(__name__)

#: what an unfillable plain-word marker becomes (a typed one gets its type's Faker value)
FALLBACK_WORD = "something"


@dataclass
class FillFailure:
    """A document the filler could not fill; it was filled with its types' fallbacks instead."""

    doc_id: str
    reason: str


def fill_batch(docs: Sequence[MaskedDocument], filler: Any,
               failures: list[FillFailure] | None = None) -> list[FilledDocument]:
    """Fill a batch; a document the filler fails on is filled with fallbacks and reported, never aborting.

    A failure of the whole batch is retried document by document, so one bad document costs only
    its own fill (every document draws from its own seeded RNG: the others fill identically).
    """
    try:
        return list(filler.fill(docs))
    except VeilError as e:
        if len(docs) == 1:
            if failures is not None:
                failures.append(FillFailure(docs[0].id, str(e)))
            log.warning("document %r: %s; filled with fallback values", docs[0].id, e)
            return [fallback_fill(docs[0], getattr(filler, "seed", 0))]
    return [d for doc in docs for d in fill_batch([doc], filler, failures)]


def fallback_fill(doc: MaskedDocument, seed: int = 0) -> FilledDocument:
    """Every marker of ``doc`` replaced by its type's Faker value (or ``FALLBACK_WORD``), same key same value."""
    from veil.fill import typed
    from veil.fill.assemble import assemble
    from veil.fill.base import doc_rng, document_slots

    try:
        slots = document_slots(doc)
    except VeilError:  # placeholders that do not match the text: its markers are what must go
        slots = document_slots(replace(doc, placeholders=()))
    rng = doc_rng(seed, doc.id)
    values: dict[str, str] = {}
    for s in slots:
        if s.key not in values:
            values[s.key] = typed.fake_value(s.label, rng, s.shape) if typed.has_fallback(s.label) else FALLBACK_WORD
    return assemble(doc, slots, [values[s.key] for s in slots])
