"""Detect and mask stage: align a masked text with its original (the inverse of ``placeholders.render``).

A masked record keeps the offsets of its placeholders in the *masked* text, never the original
span (the privacy boundary: see :mod:`veil.types`). Upstream of that boundary (the review page, which
shows the original beside the masked text, and ``veil verify``, which looks for removed values in a
filled corpus) the original span of each placeholder is worked out again:

- ``render`` writes ``escape(segment)`` between the markers, so the text between two placeholders,
  unescaped, is verbatim original text (a *literal*); every placeholder stands for a non-empty stretch of
  original text (a *gap*) between two literals;
- placeholders with nothing between them (``[MASK][MASK]``) or, in ``mask`` style, one space
  (``[MASK] [MASK]``: the tokens of one span, or two spans one space apart) form one gap; in
  ``mask`` style the gap is split into its whitespace-separated tokens when there are as many as
  placeholders, otherwise each placeholder of the group gets the whole gap (``exact`` is False);
- the literals are found in the original left to right, each at its first position from which the
  rest of the document can still be matched (the latest feasible position of every literal is
  computed from the right first), so each gap is the shortest that fits the whole document. Only a
  literal that also occurs inside a masked value next to it can make that choice differ from what
  was masked (e.g. ``[PERSON_NAME_1] [PERSON_NAME_2]`` over "Ann Marie Smith"); the text
  re-rendered from the aligned spans is still the masked text.

A masked text that cannot come from the original (a literal missing) raises ``VeilError`` naming
the document and a masked offset, never the text.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from veil.errors import VeilError
from veil.markers import _LOOKALIKE_RE
from veil.types import MaskedDocument


@dataclass(frozen=True, slots=True)
class Alignment:
    """The original span of every placeholder of a masked document, and an offset map for the rest."""

    spans: tuple[tuple[int, int], ...]  # original (start, end) per placeholder, in placeholder order
    exact: tuple[bool, ...]  # False where a placeholder shares its span with neighbours (see module doc)
    # (masked offset, original offset) at the start of every literal, and backslash positions removed
    _literals: tuple[tuple[int, int, int], ...]  # (masked start, masked end, original start)
    _dropped: tuple[tuple[int, ...], ...]  # per literal: masked offsets of the escape backslashes

    def to_original(self, pos: int) -> int:
        """The original offset of masked offset ``pos``, which must lie in the text between placeholders
        (or at a boundary of it)."""
        starts = [m for m, _, _ in self._literals]
        i = bisect.bisect_right(starts, pos) - 1
        if i < 0:
            raise ValueError(f"masked offset {pos} is inside a placeholder")
        mstart, mend, ostart = self._literals[i]
        if pos > mend:
            raise ValueError(f"masked offset {pos} is inside a placeholder")
        return ostart + (pos - mstart) - bisect.bisect_left(self._dropped[i], pos)


def _unescape_map(seg: str) -> tuple[str, tuple[int, ...]]:
    """``unescape(seg)`` and the offsets (within ``seg``) of the backslashes it drops."""
    out: list[str] = []
    dropped: list[int] = []
    pos = 0
    for m in _LOOKALIKE_RE.finditer(seg):
        if m.group(1):  # an escaped look-alike: its first backslash was added by escape()
            out.append(seg[pos:m.start() + 1])
            dropped.append(m.start() + 1)
            pos = m.start() + 2
    out.append(seg[pos:])
    return "".join(out), tuple(dropped)


def align(original: str, doc: MaskedDocument) -> Alignment:
    """Where each placeholder of ``doc`` lies in ``original`` (see the module docstring)."""
    masked = doc.text
    phs = sorted(doc.placeholders, key=lambda p: p.start)
    if list(phs) != list(doc.placeholders):
        raise VeilError(f"document {doc.id!r}: placeholders are not in text order")
    if not phs:
        if masked != original and _unescape_map(masked)[0] != original:
            raise VeilError(f"document {doc.id!r}: the masked text has no placeholder but differs from the original")
        return Alignment((), (), ((0, len(masked), 0),), (_unescape_map(masked)[1],))
    mask_style = doc.style == "mask"
    # literals between groups of placeholders: (masked start, masked end, unescaped text, dropped offsets)
    lits: list[tuple[int, int, str, tuple[int, ...]]] = []
    groups: list[list[int]] = [[0]]
    prev_end = 0
    for i, p in enumerate(phs):
        seg = masked[prev_end:p.start]
        if i and (seg == "" or (mask_style and seg == " ")):
            groups[-1].append(i)
        else:
            if i:
                groups.append([i])
            text, dropped = _unescape_map(seg)
            lits.append((prev_end, p.start, text, tuple(prev_end + d for d in dropped)))
        prev_end = p.end
    text, dropped = _unescape_map(masked[prev_end:])
    lits.append((prev_end, len(masked), text, tuple(prev_end + d for d in dropped)))
    n = len(lits)  # == len(groups) + 1
    words = [t for _, _, t, _ in lits]

    def fail(k: int) -> VeilError:
        return VeilError(f"document {doc.id!r}: the masked text does not come from the original text "
                         f"(the text at masked offset {lits[k][0]} is not where it should be)")

    # latest feasible position of every literal, from the right
    latest = [0] * n
    latest[-1] = len(original) - len(words[-1])
    if latest[-1] < 0 or not original.endswith(words[-1]):
        raise fail(n - 1)
    for k in range(n - 2, 0, -1):
        q = original.rfind(words[k], 0, latest[k + 1] - 1)
        if q < 0 or q + len(words[k]) + 1 > latest[k + 1]:
            raise fail(k)
        latest[k] = q
    if not original.startswith(words[0]) or len(words[0]) + 1 > latest[1 if n > 1 else 0]:
        raise fail(0)
    # earliest positions within those bounds, from the left
    pos = [0] * n
    for k in range(1, n - 1):
        q = original.find(words[k], pos[k - 1] + len(words[k - 1]) + 1)
        if q < 0 or q > latest[k]:
            raise fail(k)
        pos[k] = q
    pos[-1] = latest[-1]
    if pos[-1] < pos[-2] + len(words[-2]) + 1:
        raise fail(n - 1)
    spans: list[tuple[int, int]] = []
    exact: list[bool] = []
    for g, members in enumerate(groups):
        gs, ge = pos[g] + len(words[g]), pos[g + 1]
        if len(members) == 1:
            spans.append((gs, ge))
            exact.append(True)
            continue
        tokens = _tokens(original, gs, ge) if mask_style else []
        if len(tokens) == len(members):
            spans += tokens
            exact += [True] * len(members)
        else:
            spans += [(gs, ge)] * len(members)
            exact += [False] * len(members)
    literals = tuple((ms, me, pos[k]) for k, (ms, me, _, _) in enumerate(lits))
    return Alignment(tuple(spans), tuple(exact), literals, tuple(d for _, _, _, d in lits))


def _tokens(text: str, start: int, end: int) -> list[tuple[int, int]]:
    out = []
    i = start
    while i < end:
        while i < end and text[i].isspace():
            i += 1
        j = i
        while j < end and not text[j].isspace():
            j += 1
        if j > i:
            out.append((i, j))
        i = j
    return out


def original_values(original: str, doc: MaskedDocument) -> list[tuple[int, int, str, str]]:
    """``(start, end, label, value)`` in ``original`` of every placeholder of ``doc`` (upstream of the boundary)."""
    a = align(original, doc)
    return [(s, e, p.label, original[s:e]) for (s, e), p in zip(a.spans, doc.placeholders)]
