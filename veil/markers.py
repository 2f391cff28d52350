"""Marker grammar shared by every stage: placeholder syntax and reversible escaping of look-alikes.

Markers are ``[MASK]``, ``[LABEL]`` or ``[LABEL_N]``. Text a user wrote that already looks like a
marker (``[MASK]``, ``[PERSON_NAME_1]``, ``[mask]``) is escaped by inserting one backslash after
the bracket (``[\\MASK]``); a look-alike that already has backslashes gets one more, so
``unescape(escape(t)) == t`` for every ``t``. Real markers never contain a backslash.

It lives beside :mod:`veil.types` (not in the mask stage) because the mask stage writes markers,
the fill stage reads them, and corpus I/O and the experiment runner parse them: none of those
should have to import the mask stage to know what a marker is.
"""

from __future__ import annotations

import re

STYLES = ("mask", "typed", "numbered")
MASK = "[MASK]"

_NAME = r"(?:(?i:mask)|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)"
_LOOKALIKE_RE = re.compile(r"\[(\\*)(" + _NAME + r")\]")
#: A real (unescaped) marker; group 1 is the name, e.g. MASK, PERSON_NAME, PERSON_NAME_1.
MARKER_RE = re.compile(r"\[(" + _NAME + r")\]")
_NUMBERED_RE = re.compile(r"^([A-Z][A-Z0-9_]*?)_(\d+)$")


def escape(text: str) -> str:
    """Hide every marker look-alike the user wrote (reversible with :func:`unescape`)."""
    return _LOOKALIKE_RE.sub(lambda m: "[\\" + m.group(1) + m.group(2) + "]", text)


def lookalike_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every marker look-alike in user text, escaped or not: never masked inside."""
    return [m.span() for m in _LOOKALIKE_RE.finditer(text)] if "[" in text else []


def unescape(text: str) -> str:
    return _LOOKALIKE_RE.sub(
        lambda m: "[" + m.group(1)[1:] + m.group(2) + "]" if m.group(1) else m.group(0), text)


def find_markers(masked_text: str) -> list[tuple[int, int, str]]:
    """Unescaped markers in a masked text: (start, end, name)."""
    return [(m.start(), m.end(), m.group(1)) for m in MARKER_RE.finditer(masked_text)]


def parse_marker_name(name: str) -> tuple[str, int | None]:
    """``PERSON_NAME_1`` -> (``PERSON_NAME``, 1); ``MASK`` -> (``MASK``, None)."""
    m = _NUMBERED_RE.match(name)
    return (m.group(1), int(m.group(2))) if m else (name, None)


def infer_style(masked_text: str) -> str:
    """The placeholder style of a masked text written without a recorded style."""
    names = [n for _, _, n in find_markers(masked_text)]
    if all(n.upper() == "MASK" for n in names):
        return "mask"
    return "numbered" if any(parse_marker_name(n)[1] is not None for n in names) else "typed"
