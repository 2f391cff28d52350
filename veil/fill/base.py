"""Fill stage: the filler plug-in interface. The privacy boundary is enforced here."""

from __future__ import annotations

from typing import Sequence

from veil.types import FilledDocument, MaskedDocument


class Filler:
    """Replaces every placeholder of masked documents. Register it in ``veil.registry.fillers``.

    Constructed as ``Filler(model=..., strategy="top1"|"topk", k=10, seed=0, **options)``.
    Subclasses implement ``_fill``; ``fill`` refuses anything that is not a ``MaskedDocument``
    so that original text has no path into a model.
    """

    name: str = "filler"

    def fill(self, docs: Sequence[MaskedDocument]) -> list[FilledDocument]:
        for d in docs:
            if not isinstance(d, MaskedDocument):
                raise TypeError(f"fillers accept MaskedDocument only, got {type(d).__name__}: "
                                "the fill stage must never see original text")
        return self._fill(docs)

    def _fill(self, docs: Sequence[MaskedDocument]) -> list[FilledDocument]:
        raise NotImplementedError
