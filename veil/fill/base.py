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


class CandidateFiller(Filler):
    """Fills markers one at a time, left to right, choosing among a model's ranked whole-word candidates.

    Model back-ends (``mlm``, ``llm``) implement only ``propose_batch``; the fill loop, the Top-1 /
    Top-K strategies, avoidance of allow-listed words, typed and numbered consistency live in this
    class so every back-end behaves the same.
    """

    def __init__(self, strategy: str = "top1", k: int = 10, seed: int = 0, batch_size: int = 64,
                 **options) -> None:
        self.strategy, self.k, self.seed, self.batch_size = strategy, k, seed, batch_size
        self.options = options

    def propose_batch(self, texts: Sequence[str], targets: Sequence[tuple[int, int]],
                      k: int) -> list[list[tuple[str, float]]]:
        """For each ``texts[i]``, up to ``k`` whole-word candidates ``(word, score)``, best first,
        for the marker at ``texts[i][targets[i][0]:targets[i][1]]``. Other markers in the text may
        still be present (they are filled later, left to right)."""
        raise NotImplementedError
