"""Fill stage: the context a causal model scores around one marker (left words, right words up to the next marker)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from veil.errors import VeilError
from veil.markers import MARKER_RE, unescape
from veil.textutil import WORD_RE

#: a marker, or a run of markers the fill loop merged into one slot ("[MASK] [MASK]")
_SLOTS_RE = re.compile(MARKER_RE.pattern + r"(?:\s+" + MARKER_RE.pattern + r")*")


@dataclass(frozen=True)
class MarkerContext:
    """What the model sees for one marker: ``left`` + candidate + ``right`` (strings)."""

    left: str
    right: str


def marker_context(text: str, target: tuple[int, int], left_words: int = 64,
                   right_words: int = 32, sentence_end: str | None = None) -> MarkerContext:
    """The left and right context strings scored around the marker at ``text[target[0]:target[1]]``.

    ``sentence_end`` is appended to the right context when it reaches the end of ``text`` (no later
    marker, not cut at ``right_words``)."""
    s, e = target
    if not (0 <= s < e <= len(text)) or not _SLOTS_RE.fullmatch(text, s, e):
        raise VeilError(f"target {target} is not a marker in the text {text[:60]!r}...")
    left, right = text[:s], text[e:]
    nxt = MARKER_RE.search(right)
    at_end = nxt is None
    if nxt:  # later markers are filled later: the sentence scored ends before the next one
        right = right[:nxt.start()].rstrip()
    if left_words is not None:
        starts = [m.start() for m in WORD_RE.finditer(left)]
        if len(starts) > left_words:
            left = left[starts[-left_words]:]
    if right_words is not None:
        ends = [m.end() for m in WORD_RE.finditer(right)]
        if len(ends) > right_words:
            right = right[:ends[right_words - 1]]
            at_end = False
    if at_end and sentence_end:
        right = right.rstrip() + sentence_end
    return MarkerContext(unescape(left), unescape(right))


def _first_words(text: str, n: int) -> str:
    """``text`` up to the end of its ``n``-th word (all of it when it has no more)."""
    ends = [m.end() for m in WORD_RE.finditer(text)]
    return text if len(ends) <= n else text[:ends[n - 1]]
