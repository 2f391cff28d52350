"""Detect and mask stage: merge spans and render them as placeholders (the grammar is :mod:`veil.markers`)."""

from __future__ import annotations

from typing import Sequence

from veil.markers import (MARKER_RE, MASK, MAX_NUMBER, STYLES, check_label, escape, find_markers,  # noqa: F401
                          lookalike_spans, parse_marker_name, unescape)  # (re-exported)
from veil.shapes import ENTITY_SHAPED, shape_of
from veil.textutil import normalise_surface
from veil.types import Document, MaskedDocument, Placeholder, Span


#: labels that say an identifier is there but not of what kind: another reading of the same span wins over them
UNSPECIFIC_LABELS = frozenset({"GENERIC_ID"})


def merge_spans(spans: Sequence[Span]) -> list[Span]:
    """Union overlapping spans; the merged span keeps the label and source of its strongest member.

    Strongest: a typed label beats the generic ``WORD``; then a name (person, place, organisation, street
    address) that holds the other span and more (the whole name "Lubbock View Christian Church" read as an
    organisation, not its word "Christian" as a religion); then any other reading beats an identifier of no
    known kind (a checked card number stays a ``CREDIT_CARD_NUMBER`` however sure the tagger's ``GENERIC_ID``
    reading of the same digits is); then higher score; then longer.
    """
    def strength(s: Span) -> tuple[int, int, float, int]:
        return (s.label != "WORD", s.label not in UNSPECIFIC_LABELS, s.score, len(s))

    def holds(a: Span, b: Span) -> bool:
        return a.label in ENTITY_SHAPED and a.start <= b.start and b.end <= a.end and len(a) > len(b)

    def stronger(a: Span, b: Span) -> Span:
        if (a.label == "WORD") == (b.label == "WORD"):
            if holds(a, b):
                return a
            if holds(b, a):
                return b
        return max(a, b, key=strength)

    out: list[Span] = []
    best: list[Span] = []  # the strongest member of each merged span (a union is no reading of its own)
    for s in sorted(spans, key=lambda s: (s.start, -s.end)):
        if out and s.start < out[-1].end:
            prev = out[-1]
            best[-1] = stronger(best[-1], s)
            out[-1] = Span(prev.start, max(prev.end, s.end), best[-1].label, best[-1].source, max(prev.score, s.score))
        else:
            out.append(s)
            best.append(s)
    return out


class Numbering:
    """The numbers of ``[LABEL_N]`` markers: one per (label, normalised surface), counted per label.

    One ``Numbering`` is one document's: the records of a group (a call given one utterance a
    record) share one, so an entity keeps its number across the call and nowhere else.
    """

    def __init__(self) -> None:
        self.numbers: dict[tuple[str, str], int] = {}
        self.per_label: dict[str, int] = {}

    def key(self, label: str, surface: str) -> str | None:
        """``LABEL_N``; None once the label has :data:`~veil.markers.MAX_NUMBER` numbers and this is a new value."""
        norm = (label, normalise_surface(surface) or surface)
        if norm not in self.numbers:
            same = self._same_person(label, norm[1]) if label in PERSON_LABELS else None
            if same is None:
                if self.per_label.get(label, 0) >= MAX_NUMBER:
                    return None
                self.per_label[label] = self.per_label.get(label, 0) + 1
                same = self.per_label[label]
            self.numbers[norm] = same
        return f"{label}_{self.numbers[norm]}"

    def _same_person(self, label: str, name: str) -> int | None:
        """The number of the one person this name can only be: a first or last name alone is the person
        whose full name holds it ("Maria" and "Maria Lopez"), a title changes nothing ("Dr. Sarah Connor"
        and "Sarah Connor"), and a full name takes over a lone first or last name not yet tied to another
        full name. None when no one, or more than one person, fits ("Maria" when both Maria Lopez and
        Maria Gonzalez were named; "Maria Gonzalez" after Maria Lopez is someone else)."""
        words = set(_name_words(name))
        if not words:
            return None
        full: dict[int, set[frozenset[str]]] = {}  # number -> the full names it already stands for
        named = [(set(_name_words(other)), n) for (lab, other), n in self.numbers.items() if lab == label]
        for other, n in named:
            if len(other) > 1:
                full.setdefault(n, set()).add(frozenset(other))
        fits = set()
        for other, n in named:
            if other == words or (len(words) == 1 and words < other):
                fits.add(n)
            elif len(other) == 1 and other < words and not (full.get(n, set()) - {frozenset(words)}):
                fits.add(n)
        return fits.pop() if len(fits) == 1 else None


#: labels whose mentions are one person when one name's words contain the other's
PERSON_LABELS = frozenset({"PERSON_NAME", "PERSON"})
_TITLES = frozenset("mr mrs ms miss dr prof sir madam mister doctor".split())


def _name_words(name: str) -> list[str]:
    return [w for w in (w.strip(".,") for w in name.split()) if w and w not in _TITLES]


def render(doc: Document, spans: Sequence[Span], style: str = "mask",
           numbering: Numbering | None = None) -> MaskedDocument:
    """Replace merged ``spans`` of ``doc.text`` by markers; escape everything between them.

    ``mask`` style writes one ``[MASK]`` per whitespace-separated token of a span (token masking,
    as in the paper); ``typed`` writes ``[LABEL]``; ``numbered`` writes ``[LABEL_N]`` where the
    same normalised surface gets the same N within this document only (``numbering``: a state
    shared by the records of one group, which are one document; N up to :data:`~veil.markers.MAX_NUMBER`,
    a document's further values of that label get ``[LABEL]``, each its own key). A span whose label
    is not one of :data:`veil.markers.LABELS` is refused: the fill stage would not read its marker.
    """
    if style not in STYLES:
        raise ValueError(f"unknown placeholder style {style!r}; choose from {', '.join(STYLES)}")
    text = doc.text
    parts: list[str] = []
    placeholders: list[Placeholder] = []
    numbering = numbering if numbering is not None else Numbering()
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
            key = numbering.key(span.label, surface) if style == "numbered" else None
            if key is None:
                marker, key = f"[{span.label}]", f"{span.label}#{len(placeholders)}"
            else:
                marker = f"[{key}]"
            placeholders.append(Placeholder(out_len, out_len + len(marker), span.label, key, span.source,
                                            shape_of(span.label, surface)))
            emit(marker)
        pos = span.end
    emit(escape(text[pos:]))
    return MaskedDocument(id=doc.id, text="".join(parts), placeholders=tuple(placeholders), style=style,
                          person=doc.person, group=doc.group, meta=dict(doc.meta))
