"""Run stage: a fill in memory through the one corpus loop (:func:`veil.run.corpus.map_units`).

`veil finetune --data top1|topk` and the fill -> fine-tune rounds (:mod:`veil.fill.rounds`) fill a corpus
in memory to train on it; they do it here, with the loop every other fill takes (batches, the
executor, the progress bar, a failed document filled with fallbacks), not with a loop of their own.
"""

from __future__ import annotations

from typing import Any, Sequence

from veil.run.corpus import map_units
from veil.run.stages import FillFailure, FillStage
from veil.types import FilledDocument, MaskedDocument


def fill_documents(filler: Any, docs: Sequence[MaskedDocument], progress: bool = False, *, batch_size: int = 256,
                   executor: Any = None, failures: list[FillFailure] | None = None) -> list[FilledDocument]:
    """``docs`` filled by ``filler`` (a filler, or a zero-argument factory), in input order; the documents
    it fails on are added to ``failures`` (when given) and filled with fallback values."""
    stage = FillStage(filler if callable(filler) and not hasattr(filler, "fill") else (lambda: filler))
    out: list[FilledDocument] = []
    for batch in map_units(stage, docs, executor=executor, batch_size=batch_size, progress=progress,
                           total=len(docs), desc="fill"):
        out += [d for u in batch.units for d in u]
        if failures is not None:
            failures += batch.failures
    return out
