"""Detect and mask stage: run any combination of maskers, merge their spans, render placeholders."""

from __future__ import annotations

import bisect
import re
from typing import Iterable, Sequence

from veil.markers import DEFAULT_STYLE, lookalike_spans
from veil.mask.base import Masker
from veil.mask.normalise import OffsetMap, detection_view
from veil.mask.placeholders import merge_spans, render
from veil.textutil import normalise_surface
from veil.types import Document, MaskedDocument, Span


class MaskingEngine:
    """``MaskingEngine([AllowListMasker()], style="numbered").mask(docs)``.

    ``exclude`` is the never-mask list: a span whose normalised surface is in it is dropped,
    whichever masker found it.

    ``keep`` lists tokens of the corpus's own mark-up that are kept verbatim (case-sensitive,
    matched as whole tokens): they are cut out of any span that overlaps them. Penn Treebank's ``<unk>`` is the
    case in point: it already stands for an anonymised rare word, but a word masker sees the
    letters ``unk`` between brackets and would mask them, and a filler would turn the corpus's most
    frequent rare-word token into ``<somethingelse>``.

    Built from registry names (with the option checks) by :func:`veil.run.components.build_engine`.
    """

    def __init__(self, maskers: Sequence[Masker], style: str = DEFAULT_STYLE, exclude: Iterable[str] = (),
                 keep: Iterable[str] = ()) -> None:
        if not maskers:
            raise ValueError("at least one masker is needed")
        self.maskers = list(maskers)
        self.style = style
        self.exclude = {normalise_surface(e) for e in exclude}
        keep = sorted({k for k in keep if k.strip()}, key=len, reverse=True)
        self.keep = keep
        self._keep_re = (re.compile("|".join(rf"(?<!\w){re.escape(k)}(?!\w)" for k in keep)) if keep else None)

    def detect(self, docs: Sequence[Document]) -> list[list[Span]]:
        """Merged spans per document, on the original texts.

        Maskers see each text's detection view (NFC, invisible characters dropped:
        ``veil.mask.normalise``); their spans are mapped back to the original. Then, once for every
        masker, the never-mask list is applied and protected stretches are cut out of the spans:
        user text that looks like a marker (``[PERSON_NAME_1]``, ``[USERNAME]``, ``[\\MASK]``) and
        ``keep`` tokens. Cutting rather than dropping: a tagger span "[PERSON_NAME_1] Smith" still
        masks "Smith".
        """
        return self.detect_each(docs)[0]

    def detect_each(self, docs: Sequence[Document]) -> tuple[list[list[Span]], list[list[list[Span]]]]:
        """(merged spans per document, each masker's own spans per document): the masked-word statistics
        count each masker alone and all combined from one detection."""
        views = [detection_view(d.text) for d in docs]
        texts = [v for v, _ in views]
        each: list[list[list[Span]]] = []
        protected: dict[int, list[tuple[int, int]]] = {}  # per document, computed once for all maskers
        groups = [d.group for d in docs]
        for found in self._detect_all(texts, groups):
            mine = []
            for i, (d, (view, offsets), spans) in enumerate(zip(docs, views, found)):
                if self.exclude and spans:
                    spans = [s for s in spans if normalise_surface(view[s.start:s.end]) not in self.exclude]
                if offsets is not None and spans:
                    spans = [_map_back(s, offsets) for s in spans]
                if spans:
                    spans = self._outside_protected(i, d.text, spans, protected)
                mine.append(spans)
            each.append(mine)
        merged = [merge_spans([s for per_masker in each for s in per_masker[i]]) for i in range(len(docs))]
        for m in self.maskers:  # a masker that judges the merged spans (the neural tagger's span judge)
            if getattr(m, "judges_merged", False):
                found = {getattr(k, "name", str(j)): e for j, (k, e) in enumerate(zip(self.maskers, each))}
                merged = m.judge_merged([d.text for d in docs], merged, found,
                                        groups if any(g is not None for g in groups) else None)
        if any(g is not None for g in groups) and any(getattr(m, "carries_groups", False) for m in self.maskers):
            merged = self._carry_parts(docs, merged, groups, protected)
        return merged, each

    def _carry_parts(self, docs: Sequence[Document], merged: list[list[Span]], groups: Sequence[str | None],
                     protected: dict[int, list[tuple[int, int]]]) -> list[list[Span]]:
        """The merged spans with the words that identify alone of a group's other values (a street's name, the
        car of "nineteen eighty Volvo") and its numbers of three digits or more added wherever the group says them
        (:func:`veil.mask.propagation.propagate_parts`), under the never-mask list and the protected stretches
        as any masker's spans. Only where a masker carries what it finds over a group (``carries_groups``: ``dlp``;
        ``neural_tagger`` unless ``group_propagate=false``)."""
        from veil.mask.propagation import propagate_parts

        texts = [d.text for d in docs]
        carried = propagate_parts(texts, merged, groups)
        for i, (before, after) in enumerate(zip(merged, carried)):
            if len(after) == len(before):
                continue
            new = [s for s in after if s not in before]
            if self.exclude:
                new = [s for s in new if normalise_surface(texts[i][s.start:s.end]) not in self.exclude]
            if new:
                merged[i] = merge_spans(before + self._outside_protected(i, texts[i], new, protected))
        return merged

    def _outside_protected(self, i: int, text: str, spans: list[Span],
                           protected: dict[int, list[tuple[int, int]]]) -> list[Span]:
        """``spans`` of document ``i`` with its protected stretches cut out (computed once per document)."""
        if i not in protected:
            protected[i] = self._protected(text)
        return self._cut_protected(text, spans, protected[i])

    def _detect_all(self, texts: list[str], groups: Sequence[str | None] = ()) -> list[list[list[Span]]]:
        """Every masker's spans, in masker order; one that releases the GIL runs in a thread meanwhile. Where the
        documents have groups (a call's utterances), a masker with ``propagate_group`` then carries what it found
        in one record to the other records of its group."""
        background = [m for m in self.maskers if m.releases_gil] if len(self.maskers) > 1 else []
        if not background:
            found = [m.detect_batch(texts) for m in self.maskers]
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=len(background)) as pool:
                futures = {id(m): pool.submit(m.detect_batch, texts) for m in background}
                here = {id(m): m.detect_batch(texts) for m in self.maskers if not m.releases_gil}
                found = [futures[id(m)].result() if id(m) in futures else here[id(m)] for m in self.maskers]
        if any(g is not None for g in groups):
            found = [m.propagate_group(texts, f, groups) if hasattr(m, "propagate_group") else f
                     for m, f in zip(self.maskers, found)]
        return found

    def _protected(self, text: str) -> list[tuple[int, int]]:
        regions = lookalike_spans(text)
        if self._keep_re is not None:
            regions += [m.span() for m in self._keep_re.finditer(text)]
        return merge_regions(regions)

    def _cut_protected(self, text: str, spans: list[Span], protected: list[tuple[int, int]]) -> list[Span]:
        if not protected:
            return spans
        ends = [e for _, e in protected]
        out = []
        for s in spans:
            i = bisect.bisect_right(ends, s.start)  # the first protected stretch ending after the span starts
            if i == len(protected) or protected[i][0] >= s.end:
                out.append(s)
                continue
            pos = s.start
            while i < len(protected) and protected[i][0] < s.end:
                out += _trimmed(text, s, pos, protected[i][0])
                pos = protected[i][1]
                i += 1
            out += _trimmed(text, s, pos, s.end)
        return out

    def mask(self, docs: Sequence[Document]) -> list[MaskedDocument]:
        return [render(d, spans, self.style) for d, spans in zip(docs, self.detect(docs))]


def merge_regions(regions: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(regions):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _map_back(s: Span, offsets: OffsetMap) -> Span:
    return Span(offsets.start(s.start), offsets.end(s.end), s.label, s.source, s.score)


def _trimmed(text: str, s: Span, start: int, end: int) -> list[Span]:
    """The piece ``[start, end)`` of span ``s`` without edge spaces; none if it holds no word character."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if not any(c.isalnum() for c in text[start:end]):
        return []
    return [Span(start, end, s.label, s.source, s.score)]
