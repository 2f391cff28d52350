"""Mask and fill stages as picklable batch functions: built on the driver, loaded once in each worker.

A stage is what an engine runs on every batch of documents: ``stage.load()`` once per worker (it
builds the masking engine or the filler, i.e. loads the models), then ``stage(docs)`` per batch,
returning one :class:`StageRecord` per document: the output record and, for the fill stage, the
substitution records that go to the file beside it. The stages carry only plain settings and a
factory, so a Ray actor receives them by pickling and loads the models itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence


@dataclass
class StageRecord:
    id: str
    record: dict[str, Any]
    extra: list[dict[str, Any]] = field(default_factory=list)  # fill: the substitution records


class MaskStage:
    """``make_engine()`` builds the :class:`~veil.mask.engine.MaskingEngine`; records as ``veil mask`` writes them."""

    def __init__(self, make_engine: Callable[[], Any], drop: frozenset[str] = frozenset()) -> None:
        self.make_engine, self.drop = make_engine, frozenset(drop)
        self._engine: Any = None

    def load(self) -> None:
        if self._engine is None:
            self._engine = self.make_engine()

    def __call__(self, docs: Sequence[Any]) -> list[StageRecord]:
        from veil.io.records import masked_to_record

        self.load()
        return [StageRecord(md.id, masked_to_record(md, self.drop)) for md in self._engine.mask(list(docs))]

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_engine": None}  # models are loaded where the stage runs


class FillStage:
    """``make_filler()`` builds the filler; records and substitution records as ``veil fill`` writes them."""

    def __init__(self, make_filler: Callable[[], Any]) -> None:
        self.make_filler = make_filler
        self._filler: Any = None

    def load(self) -> None:
        if self._filler is None:
            self._filler = self.make_filler()

    def __call__(self, docs: Sequence[Any]) -> list[StageRecord]:
        from veil.io.records import filled_to_record, substitution_records

        self.load()
        return [StageRecord(d.id, filled_to_record(d), list(substitution_records(d)))
                for d in self._filler.fill(list(docs))]

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_filler": None}
