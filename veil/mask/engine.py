"""Detect and mask stage: run any combination of maskers, merge their spans, render placeholders."""

from __future__ import annotations

import bisect
import re
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

    ``keep`` lists tokens of the corpus's own mark-up that are kept verbatim (case-sensitive,
    matched as whole tokens): a span that overlaps one is dropped. Penn Treebank's ``<unk>`` is the
    case in point: it already stands for an anonymised rare word, but a word masker sees the
    letters ``unk`` between brackets and would mask them, and a filler would turn the corpus's most
    frequent rare-word token into ``<somethingelse>``.
    """

    def __init__(self, maskers: Sequence[Masker], style: str = "mask", exclude: Iterable[str] = (),
                 keep: Iterable[str] = ()) -> None:
        if not maskers:
            raise ValueError("at least one masker is needed")
        self.maskers = list(maskers)
        self.style = style
        self.exclude = {normalise_surface(e) for e in exclude}
        keep = sorted({k for k in keep if k.strip()}, key=len, reverse=True)
        self.keep = keep
        self._keep_re = (re.compile("|".join(rf"(?<!\w){re.escape(k)}(?!\w)" for k in keep)) if keep else None)

    @classmethod
    def from_names(cls, names: Sequence[str], style: str = "mask", exclude: Iterable[str] = (),
                   options: dict[str, dict] | None = None, keep: Iterable[str] = ()) -> "MaskingEngine":
        options = options or {}
        return cls([masker_registry.get(n)(**options.get(n, {})) for n in names], style=style, exclude=exclude,
                   keep=keep)

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
        if self._keep_re is not None:
            per_doc = [self._drop_kept(d.text, spans) for d, spans in zip(docs, per_doc)]
        return [merge_spans(spans) for spans in per_doc]

    def _drop_kept(self, text: str, spans: list[Span]) -> list[Span]:
        kept = [m.span() for m in self._keep_re.finditer(text)] if spans else []
        if not kept:
            return spans
        ends = [e for _, e in kept]  # kept tokens do not overlap: starts and ends both ascend
        out = []
        for s in spans:
            i = bisect.bisect_right(ends, s.start)  # the first kept token ending after the span starts
            if i == len(kept) or kept[i][0] >= s.end:
                out.append(s)
        return out

    def mask(self, docs: Sequence[Document]) -> list[MaskedDocument]:
        return [render(d, spans, self.style) for d, spans in zip(docs, self.detect(docs))]
