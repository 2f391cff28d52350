"""Fill stage: one document's fill in progress (:class:`DocState`) and the window a back-end is shown.

The output grows by appending (a fill adds two pieces: the text before the slot and the substitute),
and a back-end sees :meth:`DocState.view`, at most :data:`WINDOW` characters either side of the slot
as filled so far: nothing is rebuilt per fill, so filling a document is linear in its length.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from veil.fill import typed
from veil.fill.base import Slot
from veil.markers import MARKER_RE
from veil.types import MaskedDocument

#: characters of the (filled so far) text shown to a back-end on either side of a marker
WINDOW = 4096


#: a title right before a placeholder: the mention is a last name ("Mrs. [PERSON_NAME_1]")
_TITLE_BEFORE = re.compile(r"\b(?:mr|mrs|ms|miss|dr|prof|mister|doctor)\.?\s+$", re.IGNORECASE)


@dataclass
class DocState:
    """One document's fill in progress. The output so far is ``pieces`` (escaped masked text and
    substitutes, covering ``doc.text[:pos]``); ``slots[i]`` is the next slot. Nothing is rebuilt per
    fill: a fill appends two pieces, and a back-end sees :meth:`view`, a bounded window."""

    doc: MaskedDocument
    slots: list[Slot]  # every slot, left to right, offsets in doc.text
    rng: random.Random
    i: int = 0  # the next slot to fill
    pos: int = 0
    pieces: list[str] = field(default_factory=list)
    values: dict[int, str] = field(default_factory=dict)  # slot index -> substitute
    assigned: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # key -> (substitute, its shape)
    used: dict[str, set[str]] = field(default_factory=dict)  # label -> substitutes of other keys
    lowercase: bool = False  # substitutes are lower-cased (match_case and a text without capitals)

    @property
    def slot(self) -> Slot | None:
        return self.slots[self.i] if self.i < len(self.slots) else None

    @property
    def next_slot(self) -> Slot | None:
        return self.slots[self.i + 1] if self.i + 1 < len(self.slots) else None

    def value_of(self, slot: Slot) -> str:
        """The substitute of an assigned key at ``slot``: in the slot's letter case where the same
        entity was written another way ("Maria" / "maria"), a person's first or last name alone where the
        slot names them so ("Maria Lopez" ... "Maria")."""
        value, shape = self.assigned[slot.key]
        if slot.shape == shape:
            return value
        if slot.label in ("PERSON_NAME", "PERSON"):  # "Maria Lopez" ... "Thanks Maria": the first name alone
            title = _TITLE_BEFORE.search(self.doc.text, max(0, slot.start - 12), slot.start) is not None
            part = typed.person_mention(value, shape, slot.shape, after_title=title)
            if part is not None:
                return part
        return typed.restyle(value, slot.shape)

    def put(self, value: str) -> None:
        """Fill the current slot with ``value``."""
        s = self.slots[self.i]
        self.pieces.append(self.doc.text[self.pos:s.start])
        self.pieces.append(value)
        self.pos = s.end
        self.values[s.index] = value
        self.i += 1

    def _tail(self, n: int) -> str:
        """The last ``n`` characters (at most) of the output so far."""
        out: list[str] = []
        got = 0
        for p in reversed(self.pieces):
            if got >= n:
                break
            out.append(p)
            got += len(p)
        return "".join(reversed(out))[-n:] if n > 0 else ""

    def view(self, before: int = WINDOW, after: int = WINDOW) -> tuple[str, int, int, int | None]:
        """The text around the current slot as filled so far: ``(text, start, end, next)`` with the
        slot at ``text[start:end]`` and the next unfilled marker at ``next`` (None: none in view).
        Later slots of keys already assigned show their substitute."""
        text, s = self.doc.text, self.slots[self.i]
        gap = text[self.pos:s.start]
        left = gap[-before:] if len(gap) >= before else self._tail(before - len(gap)) + gap
        parts = [left, text[s.start:s.end]]
        start, end = len(left), len(left) + s.end - s.start
        cut = min(len(text), s.end + after)
        p, length, nxt = s.end, end, None
        for j in range(self.i + 1, len(self.slots)):
            o = self.slots[j]
            if o.start >= cut:
                break
            if o.key in self.assigned:
                v = self.value_of(o)
                parts += [text[p:o.start], v]
                length += o.start - p + len(v)
                p = o.end
            elif nxt is None:
                nxt = length + o.start - p
        parts.append(text[p:max(p, cut)])
        return "".join(parts), start, end, nxt


def _forges_marker(text: str, start: int, end: int, value: str) -> bool:
    """Would ``value`` in place of ``text[start:end]`` form a marker with the brackets around it?"""
    window = text[max(0, start - 40):start] + value + text[end:end + 40]
    off = min(start, 40)
    return any(m.start() < off + len(value) and m.end() > off for m in MARKER_RE.finditer(window))


def _forges(st: DocState, value: str) -> bool:
    """:func:`_forges_marker` at the document's current slot."""
    text, start, end, _ = st.view(40, 40)
    return _forges_marker(text, start, end, value)
