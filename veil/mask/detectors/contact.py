"""Detect and mask stage: DLP detectors for contact details (email, URL, IP address, phone number)."""

from __future__ import annotations

import bisect
import ipaddress
import itertools
import re
from typing import Iterator

from veil.mask.detectors.base import Detector, PatternDetector
from veil.types import Span

_TLDS = ("com|org|net|edu|gov|mil|int|info|biz|io|co|us|uk|ca|de|fr|nl|eu|au|in|ru|ch|se|no|es|it|"
         "jp|cn|br|me|tv|ly|app|dev|ai")


class EmailDetector(PatternDetector):
    label = "EMAIL_ADDRESS"
    PATTERNS = (
        # one start per run of local-part characters (leading punctuation skipped): every later start
        # of the run reaches the same "@" and fails or succeeds alike, so trying them all ("a%a%a%...@")
        # costs time quadratic in the run
        (r"(?<![\w.%+-])[._%+-]*(?P<hit>[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*"
         r"\.[A-Za-z]{2,}\b)", 1.0),
        # as a transcript spells it out: "john dot smith at gmail dot com" (bounded: linear on "x dot x dot ...")
        (r"\b[A-Za-z0-9]+(?:\s+(?:dot|underscore)\s+[A-Za-z0-9]+){0,8}\s+at\s+[A-Za-z0-9]+"
         r"(?:\s+dot\s+[A-Za-z0-9]+){0,6}\s+dot\s+(?:" + _TLDS + r")\b", 0.9),
    )
    FLAGS = re.IGNORECASE

    def may_match(self, text: str) -> bool:
        return "@" in text or " dot " in text.lower()


class UrlDetector(PatternDetector):
    label = "URL"
    PATTERNS = (
        (r"\b(?:https?|ftp)://[^\s<>\"'()]+[^\s<>\"'().,;:!?]", 1.0),
        (r"\bwww\.[^\s<>\"'()]+[^\s<>\"'().,;:!?]", 1.0),
        # a bare domain with a known top-level domain, optionally with a path
        (r"(?<![@\w./:-])[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)*\.(?:" + _TLDS + r")"
         r"(?![\w@-])(?:/[^\s<>\"'()]*[^\s<>\"'().,;:!?])?", 0.8),
    )
    FLAGS = re.IGNORECASE

    def may_match(self, text: str) -> bool:
        return "." in text


class IpAddressDetector(PatternDetector):
    label = "IP_ADDRESS"
    PATTERNS = (
        (r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?!\w|\.\d)", 0.9),
        (r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])", 0.9),
    )

    def may_match(self, text: str) -> bool:
        return "." in text or ":" in text

    def validate(self, surface: str) -> bool:
        if ":" in surface and sum(1 for g in surface.split(":") if g) < 2:
            return False  # "::" or "a::" in prose, not an address
        try:
            ipaddress.ip_address(surface)
        except ValueError:
            return False
        return True


class PhoneDetector(Detector):
    """Phone numbers via Google's ``phonenumbers`` (``PhoneNumberMatcher``), US and international."""

    label = "PHONE_NUMBER"
    CONTEXT = re.compile(r"\b(?:phone|call|number|cell|mobile|fax|tel|telephone|reach|extension|ext)\b",
                         re.IGNORECASE)
    _DIGIT = re.compile(r"\d")

    def __init__(self, regions: tuple[str, ...] = ("US",)) -> None:
        import phonenumbers  # lazy: its metadata is large

        self._pn = phonenumbers
        self.regions = regions

    def find(self, text: str, source: str) -> Iterator[Span]:
        # A phone number has at least 7 digits; most texts have far fewer, so skip them cheaply.
        if sum(1 for _ in self._DIGIT.finditer(text)) < 7:
            return
        seen: set[tuple[int, int]] = set()
        for region in self.regions:
            # VALID leniency (as Presidio): "18403/91" is a case number, not a phone number;
            # invalid digit strings are still masked by the number detector.
            for m in self._pn.PhoneNumberMatcher(text, region, leniency=self._pn.Leniency.VALID):
                if (m.start, m.end) in seen:
                    continue
                seen.add((m.start, m.end))
                context = self.CONTEXT.search(text, max(0, m.start - 100), m.end + 100) is not None
                yield Span(m.start, m.end, self.label, source, 0.8 + 0.2 * context)
        # a number written in the North American phone layout is a phone number even where phonenumbers finds
        # no such exchange ("555-123-4560", the numbers films and examples use)
        found = sorted(seen)
        starts = [s for s, _ in found]
        ends = list(itertools.accumulate((e for _, e in found), max))  # the furthest end among the first k
        for m in self._NANP.finditer(text):
            k = bisect.bisect_right(starts, m.start())  # the matches starting at or before this one
            if not (k and ends[k - 1] >= m.end()):
                yield Span(m.start(), m.end(), self.label, source, 0.7)

    _NANP = re.compile(r"(?<![\w.-])(?:\(\d{3}\) ?\d{3}-\d{4}|\d{3}-\d{3}-\d{4}|\d{3}\.\d{3}\.\d{4})(?![\w-]|\.\d)")
