"""Run stage: the one batch function of each stage (mask, detect, fill, both), whatever executor runs it.

A stage is built on the driver from plain settings and a factory, pickled to wherever it runs (this
process, a Ray actor, a ``datasets.map`` worker), loaded once there (``stage.load()`` builds the
masking engine or the filler, i.e. loads the models), then called on batch after batch. A batch is
a list of *units*: the records of one document (one record, or a group's records: see
:mod:`veil.run.groups`). Every document draws from its own seeded RNG, so a stage's output does
not depend on how the corpus is cut into batches, or on where they run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from veil.fill.fallback import FillFailure, fill_batch
from veil.types import Document, FilledDocument, MaskedDocument

log = logging.getLogger(__name__)

# --- mask ---------------------------------------------------------------------------------------
def mask_units(units: Sequence[Sequence[Document]], engine: Any, counts: dict[str, int] | None = None,
               each: bool = False) -> list[list[MaskedDocument]]:
    """Mask every unit; a group's records share one numbering. ``counts`` (if given) accumulates
    ``words`` and ``masked`` (the paper's share), and with ``each`` ``masked:NAME`` for each masker alone."""
    from veil.mask.placeholders import Numbering, merge_spans, render

    docs = [d for u in units for d in u]
    if counts is None:
        spans = engine.detect(docs)
    else:
        from veil.mask.stats import masked_word_counts

        spans, per_masker = engine.detect_each(docs) if each else (engine.detect(docs), [])
        names = [getattr(m, "name", type(m).__name__) for m in engine.maskers] if each else []
        for i, d in enumerate(docs):
            m, t = masked_word_counts(d.text, spans[i])
            counts["masked"] = counts.get("masked", 0) + m
            counts["words"] = counts.get("words", 0) + t
            for name, found in zip(names, per_masker):
                k = f"masked:{name}"
                counts[k] = counts.get(k, 0) + masked_word_counts(d.text, merge_spans(found[i]))[0]
    out: list[list[MaskedDocument]] = []
    i = 0
    for u in units:
        numbering = Numbering()
        out.append([render(d, spans[i + j], engine.style, numbering) for j, d in enumerate(u)])
        i += len(u)
    return out


def mask_batch(docs: Sequence[Document], engine: Any,
               word_counts: dict[str, int] | None = None) -> list[MaskedDocument]:
    """Mask documents that are each their own unit (the Python API's texts, a test's documents)."""
    return [u[0] for u in mask_units([[d] for d in docs], engine, word_counts)]


# --- fill ---------------------------------------------------------------------------------------
def fill_units(units: Sequence[Sequence[MaskedDocument]], filler: Any,
               failures: list[FillFailure] | None = None) -> list[list[FilledDocument]]:
    """Fill every unit; a group is filled as one document (one substitute per entity across its records)."""
    from veil.run.groups import join_masked, split_filled

    joined = [u[0] if len(u) == 1 and u[0].group is None else join_masked(u) for u in units]
    filled = fill_batch(joined, filler, failures)
    return [[f] if len(u) == 1 and u[0].group is None else split_filled(u, j, f)
            for u, j, f in zip(units, joined, filled)]


# --- the stages ---------------------------------------------------------------------------------
@dataclass
class StageOutput:
    """One batch's result: its units (in input order) and what the stage counted."""

    units: list[list[Any]]
    counts: dict[str, int] = field(default_factory=dict)
    failures: list[FillFailure] = field(default_factory=list)


class MaskStage:
    """``make_engine()`` builds the :class:`~veil.mask.engine.MaskingEngine`; ``count``: masked-word statistics
    (``each``: of every masker alone too)."""

    def __init__(self, make_engine: Callable[[], Any], count: bool = False, each: bool = False) -> None:
        self.make_engine, self.count, self.each = make_engine, count, each
        self._engine: Any = None

    def load(self) -> None:
        if self._engine is None:
            self._engine = self.make_engine()

    def __call__(self, batch: Sequence[Sequence[Document]]) -> StageOutput:
        self.load()
        counts: dict[str, int] = {}
        return StageOutput(mask_units(batch, self._engine, counts if self.count else None, self.each), counts)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_engine": None}  # models are loaded where the stage runs


class DetectStage(MaskStage):
    """Detection alone: each unit's merged spans per document, on its text (no placeholders; :mod:`veil.run.detect`)."""

    def __init__(self, make_engine: Callable[[], Any]) -> None:
        super().__init__(make_engine)

    def __call__(self, batch: Sequence[Sequence[Document]]) -> StageOutput:
        self.load()
        spans = iter(self._engine.detect([d for u in batch for d in u]))
        return StageOutput([[next(spans) for _ in u] for u in batch])


class FillStage:
    """``make_filler()`` builds the filler; a document the model fails on gets fallbacks and is reported."""

    def __init__(self, make_filler: Callable[[], Any]) -> None:
        self.make_filler = make_filler
        self._filler: Any = None

    def load(self) -> None:
        if self._filler is None:
            self._filler = self.make_filler()

    @property
    def filler(self) -> Any:
        self.load()
        return self._filler

    def __call__(self, batch: Sequence[Sequence[MaskedDocument]]) -> StageOutput:
        self.load()
        failures: list[FillFailure] = []
        return StageOutput(fill_units(batch, self._filler, failures), failures=failures)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_filler": None}


class AnonymizeStage:
    """Mask then fill in one place (``veil.anonymize`` on Ray: two actor pools could not share the CPUs);
    the fill stage sees only the masked documents."""

    def __init__(self, mask: MaskStage, fill: FillStage) -> None:
        self.mask, self.fill = mask, fill

    def load(self) -> None:
        self.mask.load()
        self.fill.load()

    def __call__(self, batch: Sequence[Sequence[Document]]) -> StageOutput:
        masked = self.mask(batch)
        return self.fill(masked.units)
