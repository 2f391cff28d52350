"""Detect and mask stage: the masker plug-in interface."""

from __future__ import annotations

from typing import Sequence

from veil.types import Span


class Masker:
    """A detector: given a text, return the spans to mask. Register it in ``veil.registry.maskers``.

    Subclasses implement ``detect``; override ``detect_batch`` when the back-end is faster in
    batches (spaCy's ``nlp.pipe``).
    """

    name: str = "masker"

    def detect(self, text: str) -> list[Span]:
        raise NotImplementedError

    def detect_batch(self, texts: Sequence[str]) -> list[list[Span]]:
        return [self.detect(t) for t in texts]
