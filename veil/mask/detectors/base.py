"""Detect and mask stage: the DLP detector plug-in interface (one small class per infoType).

Modelled on Presidio's recognizers: a :class:`PatternDetector` is its ``PATTERNS`` (regex, score),
an optional ``CONTEXT`` (hot words that raise the score when they occur within
``CONTEXT_WINDOW`` characters of a hit), an optional ``validate`` (Luhn, address ranges) and an
optional ``fits`` (the words around a hit: an age said of a thing).
A cheap ``may_match`` test skips texts that cannot contain a hit, which keeps the regexes off
most utterances of a transcript.
"""

from __future__ import annotations

import bisect
import re
from typing import Iterator

from veil.types import Span


class Detector:
    """Finds one kind of sensitive information; ``find`` yields spans on the text it was given.

    ``WRITTEN_ONLY`` detectors run on written documents only (:func:`is_written`), not on conversation.
    """

    label: str = "GENERIC_ID"
    WRITTEN_ONLY = False

    def find(self, text: str, source: str) -> Iterator[Span]:
        raise NotImplementedError

    @property
    def name(self) -> str:
        return type(self).__name__


class PatternDetector(Detector):
    #: (regular expression, score) pairs; a hit is the whole match, or group "hit" if present
    PATTERNS: tuple[tuple[str, float], ...] = ()
    FLAGS: int = 0
    #: hot words (a regex alternation) that raise the score of a nearby hit by CONTEXT_BOOST
    CONTEXT: str | None = None
    CONTEXT_WINDOW = 100
    CONTEXT_BOOST = 0.3
    #: report overlapping hits of the patterns as one span (a date and its parts, a code's two readings)
    MERGE_OVERLAPS = False

    def __init__(self) -> None:
        self._patterns = [(re.compile(p, self.FLAGS), s) for p, s in self.PATTERNS]
        self._context = re.compile(r"\b(?:" + self.CONTEXT + r")\b", re.IGNORECASE) if self.CONTEXT else None

    def may_match(self, text: str) -> bool:
        """False when the text cannot contain a hit (a fast pre-test; True is always safe)."""
        return True

    def validate(self, surface: str) -> bool:
        return True

    def fits(self, text: str, start: int, end: int, pattern: int) -> bool:
        """Whether the hit ``[start, end)`` of ``PATTERNS[pattern]`` fits the words around it (Presidio's
        ``invalidate_result``: "thirty years old" said of a house is no one's age)."""
        return True

    def find(self, text: str, source: str) -> Iterator[Span]:
        if not self.MERGE_OVERLAPS:
            yield from self._find(text, source)
            return
        from veil.mask.placeholders import merge_spans

        yield from merge_spans(list(self._find(text, source)))

    def _find(self, text: str, source: str) -> Iterator[Span]:
        if not self.may_match(text):
            return
        hot: list[tuple[int, int]] | None = None
        for k, (pattern, score) in enumerate(self._patterns):
            for m in pattern.finditer(text):
                start, end = m.span("hit") if "hit" in pattern.groupindex else m.span()
                if start == end or not self.validate(text[start:end]) or not self.fits(text, start, end, k):
                    continue
                hit_score = score
                if self._context is not None:
                    if hot is None:
                        hot = [h.span() for h in self._context.finditer(text)]
                    if near(hot, start, end, self.CONTEXT_WINDOW):
                        hit_score = min(1.0, score + self.CONTEXT_BOOST)
                yield Span(start, end, self.label, source, hit_score)


_SPEECH = re.compile(r"\b(?:uh|um|uh-huh|um-hum|huh|yeah|okay|gonna|you know|i mean)\b", re.IGNORECASE)
#: the fewest words a written document has (a court case, a report); utterances and chat messages have fewer
WRITTEN_MIN_WORDS = 100


#: where a text counts as a written document: ``auto``: by :func:`is_written`; ``written``: always;
#: ``conversation``: never (the ``register`` option of ``dlp`` and ``neural_tagger``)
REGISTERS = ("auto", "written", "conversation")


def check_register(owner: str, register: str) -> str:
    if register not in REGISTERS:
        from veil.errors import VeilError

        raise VeilError(f"{owner}: register must be one of {', '.join(REGISTERS)}, not {register!r}")
    return register


def written_in(register: str, text: str) -> bool:
    """Whether ``text`` counts as a written document under ``register`` (:data:`REGISTERS`)."""
    return register == "written" or (register == "auto" and is_written(text))


def is_written(text: str) -> bool:
    """Whether a text reads as a written document: long (:data:`WRITTEN_MIN_WORDS` words or more) and with
    hardly a speech filler ("uh", "you know", "yeah": at most one in 500 words)."""
    words = len(text.split())
    if words < WRITTEN_MIN_WORDS:
        return False
    return len(_SPEECH.findall(text)) * 500 <= words


def near(hot: list[tuple[int, int]], start: int, end: int, window: int) -> bool:
    """Whether ``[start, end)`` lies within ``window`` characters of one of the ``hot`` spans.

    ``hot`` is sorted and non-overlapping (a ``finditer``'s spans), so one binary search answers:
    the first hot span that ends late enough is the one that starts earliest among the candidates
    (a scan of every hot span for every hit is quadratic in a text full of hot words)."""
    i = bisect.bisect_left(hot, start - window, key=lambda h: h[1])
    return i < len(hot) and hot[i][0] - window <= end


def inside(spans: list[tuple[int, int]], pos: int) -> bool:
    """Whether ``pos`` lies in one of the sorted, non-overlapping ``spans`` (binary search)."""
    i = bisect.bisect_right(spans, pos, key=lambda h: h[0]) - 1
    return i >= 0 and spans[i][0] <= pos < spans[i][1]
