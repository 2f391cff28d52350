"""Core types shared by every stage: documents, spans, masked and filled documents.

The privacy boundary is in these types: a ``MaskedDocument`` has no field that can
hold the original text or the surface strings that were masked, and the fill stage
accepts only ``MaskedDocument`` objects. Anything that needs the originals (detector
evaluation, audits) works on ``Document`` plus spans, upstream of the boundary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from veil.shapes import is_shape


@dataclass(frozen=True, slots=True)
class Span:
    """A detected sensitive stretch of a document's text: ``text[start:end]``."""

    start: int
    end: int
    label: str  # entity / info type, e.g. PERSON_NAME, EMAIL_ADDRESS, WORD
    source: str  # the masker (technique) that found it, e.g. "entity_tagger"
    score: float = 1.0

    def __post_init__(self) -> None:
        if not (0 <= self.start < self.end):
            raise ValueError(f"invalid span offsets [{self.start}, {self.end})")

    def overlaps(self, other: "Span") -> bool:
        return self.start < other.end and other.start < self.end

    def __len__(self) -> int:
        return self.end - self.start


@dataclass(slots=True)
class Document:
    """One record of a corpus: its text, an optional person / group, other fields kept as-is."""

    id: str
    text: str
    person: str | None = None
    #: the group field's value as read (a string, or a JSON number or boolean: 1 and "1" are two groups)
    group: Any = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Placeholder:
    """A mask marker inside a masked text: ``masked_text[start:end]`` is e.g. ``[PERSON_NAME_1]``.

    ``key`` identifies the masked entity within its document (the same key means the same
    normalised surface string); it carries no information about the surface itself.
    ``shape`` is the format of the masked surface ("ddddd", "dd/dd", "l-l-l-l-l"), built by
    ``veil.shapes.shape_of`` so that it cannot tell apart two values of the same layout; None for
    untyped markers and for labels without a shape.
    """

    start: int
    end: int
    label: str
    key: str
    technique: str
    shape: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {"start": self.start, "end": self.end, "label": self.label, "key": self.key,
             "technique": self.technique}
        if self.shape is not None:
            d["shape"] = self.shape
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Placeholder":
        shape = d.get("shape")
        if shape is not None:
            if not isinstance(shape, str) or not is_shape(shape):
                raise ValueError(f"placeholder shape {shape!r} is not a shape signature")
        return cls(int(d["start"]), int(d["end"]), str(d["label"]), str(d["key"]), str(d["technique"]), shape)


@dataclass(slots=True)
class MaskedDocument:
    """The output of the mask stage and the only input the fill stage accepts.

    ``text`` has user-written marker look-alikes escaped (see ``veil.mask.placeholders``),
    so every unescaped marker in it is one of ``placeholders``.
    """

    id: str
    text: str
    placeholders: tuple[Placeholder, ...]
    style: str  # "mask" | "typed" | "numbered"
    person: str | None = None
    group: Any = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.placeholders = tuple(self.placeholders)


@dataclass(frozen=True, slots=True)
class Substitution:
    """What the fill stage put in place of one placeholder."""

    doc_id: str
    placeholder: str  # the marker text, e.g. "[PERSON_NAME_1]" or "[MASK]"
    key: str
    label: str
    substitute: str
    start: int  # offsets of the substitute in the filled text
    end: int


@dataclass(slots=True)
class FilledDocument:
    """A masked document with every placeholder replaced; carries no original text."""

    id: str
    text: str
    substitutions: tuple[Substitution, ...]
    person: str | None = None
    group: Any = None
    meta: dict[str, Any] = field(default_factory=dict)
