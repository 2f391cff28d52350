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
    """``make_engine()`` builds the :class:`~veil.mask.engine.MaskingEngine`; records as ``veil mask`` writes them
    (:func:`veil.run.corpus.mask_batch`, :func:`veil.io.records.masked_to_record`)."""

    def __init__(self, make_engine: Callable[[], Any], drop: frozenset[str] = frozenset(), fields: Any = None) -> None:
        self.make_engine, self.drop, self.fields = make_engine, frozenset(drop), fields
        self._engine: Any = None

    def load(self) -> None:
        if self._engine is None:
            self._engine = self.make_engine()

    def __call__(self, docs: Sequence[Any]) -> list[StageRecord]:
        from veil.io.records import masked_to_record
        from veil.run.corpus import mask_batch

        self.load()
        return [StageRecord(md.id, masked_to_record(md, self.fields, self.drop))
                for md in mask_batch(list(docs), self._engine)]

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_engine": None}  # models are loaded where the stage runs


class FillStage:
    """``make_filler()`` builds the filler; records and substitution records as ``veil fill`` writes them
    (:func:`veil.run.corpus.fill_batch`: a document the model fails on gets fallbacks, as locally)."""

    def __init__(self, make_filler: Callable[[], Any], fields: Any = None) -> None:
        self.make_filler, self.fields = make_filler, fields
        self._filler: Any = None

    def load(self) -> None:
        if self._filler is None:
            self._filler = self.make_filler()

    def __call__(self, docs: Sequence[Any]) -> list[StageRecord]:
        from veil.io.records import filled_to_record, substitution_records
        from veil.run.corpus import fill_batch

        self.load()
        return [StageRecord(d.id, filled_to_record(d, self.fields), list(substitution_records(d)))
                for d in fill_batch(list(docs), self._filler)]

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_filler": None}
