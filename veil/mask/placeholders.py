"""Detect and mask stage: merge spans and render them as placeholders (the grammar is :mod:`veil.markers`)."""

from __future__ import annotations

from typing import Sequence

from veil.markers import (MARKER_RE, MASK, MAX_NUMBER, STYLES, check_label, escape, find_markers,  # noqa: F401
                          lookalike_spans, parse_marker_name, unescape)  # (re-exported)
from veil.shapes import shape_of
from veil.textutil import normalise_surface
from veil.types import Document, MaskedDocument, Placeholder, Span


def merge_spans(spans: Sequence[Span]) -> list[Span]:
    """Union overlapping spans; the merged span keeps the label and source of its strongest member.

    Strongest: a typed label beats the generic ``WORD``; then higher score; then longer.
    """
    def strength(s: Span) -> tuple[int, float, int]:
        return (s.label != "WORD", s.score, len(s))

    out: list[Span] = []
    for s in sorted(spans, key=lambda s: (s.start, -s.end)):
        if out and s.start < out[-1].end:
            prev = out[-1]
            best = max(prev, s, key=strength)
            out[-1] = Span(prev.start, max(prev.end, s.end), best.label, best.source, max(prev.score, s.score))
        else:
            out.append(s)
    return out


def render(doc: Document, spans: Sequence[Span], style: str = "mask") -> MaskedDocument:
    """Replace merged ``spans`` of ``doc.text`` by markers; escape everything between them.

    ``mask`` style writes one ``[MASK]`` per whitespace-separated token of a span (token masking,
    as in the paper); ``typed`` writes ``[LABEL]``; ``numbered`` writes ``[LABEL_N]`` where the
    same normalised surface gets the same N within this document only (N up to
    :data:`~veil.markers.MAX_NUMBER`; a document's further values of that label get ``[LABEL]``, each
    its own key). A span whose label is not one of :data:`veil.markers.LABELS` is refused: the
    fill stage would not read its marker.
    """
    if style not in STYLES:
        raise ValueError(f"unknown placeholder style {style!r}; choose from {', '.join(STYLES)}")
    text = doc.text
    parts: list[str] = []
    placeholders: list[Placeholder] = []
    numbers: dict[tuple[str, str], int] = {}  # (label, normalised surface) -> N, this doc only
    per_label: dict[str, int] = {}
    pos = 0
    out_len = 0

    def emit(s: str) -> None:
        nonlocal out_len
        parts.append(s)
        out_len += len(s)

    for span in merge_spans(spans):
        if span.end > len(text):
            raise ValueError(f"span {span} is outside document {doc.id!r} (length {len(text)})")
        emit(escape(text[pos:span.start]))
        surface = text[span.start:span.end]
        if style == "mask":
            tokens = surface.split() or [surface]
            for i, _ in enumerate(tokens):
                if i:
                    emit(" ")
                placeholders.append(Placeholder(out_len, out_len + len(MASK), span.label,
                                                f"MASK#{len(placeholders)}", span.source))
                emit(MASK)
        else:
            check_label(span.label, f"masker {span.source!r}")
            norm = (span.label, normalise_surface(surface) or surface)
            if style == "numbered" and norm not in numbers and per_label.get(span.label, 0) < MAX_NUMBER:
                per_label[span.label] = per_label.get(span.label, 0) + 1
                numbers[norm] = per_label[span.label]
            if style == "typed" or norm not in numbers:
                marker, key = f"[{span.label}]", f"{span.label}#{len(placeholders)}"
            else:
                key = f"{span.label}_{numbers[norm]}"
                marker = f"[{key}]"
            placeholders.append(Placeholder(out_len, out_len + len(marker), span.label, key, span.source,
                                            shape_of(span.label, surface)))
            emit(marker)
        pos = span.end
    emit(escape(text[pos:]))
    return MaskedDocument(id=doc.id, text="".join(parts), placeholders=tuple(placeholders), style=style,
                          person=doc.person, group=doc.group, meta=dict(doc.meta))
