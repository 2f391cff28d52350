"""Detect and mask stage: run any combination of maskers, merge their spans, render placeholders."""

from __future__ import annotations

from typing import Iterable, Sequence

from veil.mask.base import Masker
from veil.mask.placeholders import merge_spans, render
from veil.registry import maskers as masker_registry
from veil.textutil import normalise_surface
from veil.types import Document, MaskedDocument, Span


class MaskingEngine:
    """``MaskingEngine([AllowListMasker()], style="numbered").mask(docs)``.

    ``exclude`` is the never-mask list: a span whose normalised surface is in it is dropped,
    whichever masker found it.
    """

    def __init__(self, maskers: Sequence[Masker], style: str = "mask", exclude: Iterable[str] = ()) -> None:
        if not maskers:
            raise ValueError("at least one masker is needed")
        self.maskers = list(maskers)
        self.style = style
        self.exclude = {normalise_surface(e) for e in exclude}

    @classmethod
    def from_names(cls, names: Sequence[str], style: str = "mask", exclude: Iterable[str] = (),
                   options: dict[str, dict] | None = None) -> "MaskingEngine":
        options = options or {}
        return cls([masker_registry.get(n)(**options.get(n, {})) for n in names], style=style, exclude=exclude)

    def detect(self, docs: Sequence[Document]) -> list[list[Span]]:
        """Merged spans per document, on the original texts."""
        texts = [d.text for d in docs]
        per_doc: list[list[Span]] = [[] for _ in docs]
        for masker in self.maskers:
            for i, spans in enumerate(masker.detect_batch(texts)):
                per_doc[i].extend(spans)
        if self.exclude:
            per_doc = [[s for s in spans if normalise_surface(d.text[s.start:s.end]) not in self.exclude]
                       for d, spans in zip(docs, per_doc)]
        return [merge_spans(spans) for spans in per_doc]

    def mask(self, docs: Sequence[Document]) -> list[MaskedDocument]:
        return [render(d, spans, self.style) for d, spans in zip(docs, self.detect(docs))]
