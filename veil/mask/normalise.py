"""Detect and mask stage: the text detectors see (NFC, no invisible characters), with offsets back to the original.

Detectors match words with ``\\w`` and a model's vocabulary; both break on text that a reader sees as
one word but that is stored otherwise:

- decomposed accents: ``Garci\\u0301a`` (``i`` + COMBINING ACUTE) is three "words" to ``\\w``
  (combining marks are not word characters); NFC composes it to ``García``;
- invisible format characters (Unicode category Cf: soft hyphen U+00AD, zero-width space, joiners,
  word joiner, byte-order mark, bidi controls) inside a word: ``Jo\\u00adhn`` is ``Jo`` + ``hn``.
  They are dropped from the detection view.

:func:`detection_view` gives the view and a :class:`OffsetMap` that takes a span on the view back to
the original text, so masks always cover the original characters (a soft hyphen inside a masked
name is masked with it). ASCII and already-normal text (almost every corpus line) takes a fast path
with no copy and no map.
"""

from __future__ import annotations

import bisect
import unicodedata
from functools import lru_cache


@lru_cache(maxsize=1)
def _format_chars() -> frozenset[str]:
    """Every character of category Cf (built once, on the first non-ASCII text)."""
    import sys

    return frozenset(c for c in map(chr, range(0x80, sys.maxunicode + 1)) if unicodedata.category(c) == "Cf")


class OffsetMap:
    """Maps offsets on the detection view back to the original text.

    Stored as the view's stretches that differ from the original (a composed cluster, a dropped
    invisible character); between them view and original agree up to a constant shift, so memory
    grows with the number of changes, not with the text.
    """

    __slots__ = ("_view_starts", "_segments")

    def __init__(self, segments: list[tuple[int, int, int, int]]) -> None:
        # (view start, view end, original start, original end) of each changed stretch, ascending
        self._segments = segments
        self._view_starts = [s[0] for s in segments]

    def _locate(self, pos: int) -> tuple[int, int, int, int] | None:
        i = bisect.bisect_right(self._view_starts, pos) - 1
        return self._segments[i] if i >= 0 else None

    def start(self, pos: int) -> int:
        """Original offset of the view character at ``pos`` (a span's start)."""
        seg = self._locate(pos)
        if seg is None:
            return pos
        vs, ve, os_, oe = seg
        return os_ if pos < ve else oe + (pos - ve)

    def end(self, pos: int) -> int:
        """Original offset just after the view character at ``pos - 1`` (a span's exclusive end)."""
        if pos == 0:
            return 0
        seg = self._locate(pos - 1)
        if seg is None:
            return pos
        vs, ve, os_, oe = seg
        return oe if pos <= ve else oe + (pos - ve)


def detection_view(text: str) -> tuple[str, OffsetMap | None]:
    """(view, map) where map is None when the view is the text itself."""
    if text.isascii():
        return text, None
    fmt = _format_chars()
    if unicodedata.is_normalized("NFC", text) and fmt.isdisjoint(text):
        return text, None
    parts: list[str] = []
    segments: list[tuple[int, int, int, int]] = []
    view_len = 0
    n = len(text)
    i = 0
    plain_from = 0  # start of the current unchanged stretch of the original
    while i < n:
        c = text[i]
        if c in fmt:
            parts.append(text[plain_from:i])
            view_len += i - plain_from
            # a dropped character: empty on the view, attached to the view position it sits at
            _add(segments, view_len, view_len, i, i + 1)
            i += 1
            plain_from = i
            continue
        # a cluster: a character and the combining marks (and format characters) after it
        j = i + 1
        while j < n and (unicodedata.combining(text[j]) or text[j] in fmt):
            j += 1
        if j - i == 1 and (c.isascii() or unicodedata.is_normalized("NFC", c)):
            i = j
            continue
        cluster = text[i:j]
        composed = unicodedata.normalize("NFC", "".join(ch for ch in cluster if ch not in fmt))
        if composed == cluster:
            i = j
            continue
        parts.append(text[plain_from:i])
        view_len += i - plain_from
        parts.append(composed)
        _add(segments, view_len, view_len + len(composed), i, j)
        view_len += len(composed)
        i = j
        plain_from = i
    parts.append(text[plain_from:])
    return "".join(parts), OffsetMap(segments)


def _add(segments: list[tuple[int, int, int, int]], vs: int, ve: int, os_: int, oe: int) -> None:
    """Append a changed stretch, merging it with the previous one when they touch on both sides."""
    if segments and segments[-1][1] == vs and segments[-1][3] == os_:
        pvs, _, pos_, _ = segments[-1]
        segments[-1] = (pvs, ve, pos_, oe)
    else:
        segments.append((vs, ve, os_, oe))
