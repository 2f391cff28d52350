"""Detect and mask stage: DLP detectors for words (spelled-out letters, usernames, titled names, dictionary)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Iterator, Mapping

from veil.errors import InputError, VeilError
from veil.markers import LABELS, check_label
from veil.mask.allow_list import common_words
from veil.mask.detectors.base import Detector, inside, near
from veil.mask.detectors.numbers import _NUMBER_WORDS
from veil.types import Span


_DIGIT_OR_WORD = r"(?:\d+|" + "|".join(w for w in sorted(_NUMBER_WORDS, key=len, reverse=True)
                                        if w not in ("o", "double", "triple")) + r")"


class SpelledWordDetector(Detector):
    """Letter sequences a transcription engine writes with hyphens: ``A-L-P-H-A``, ``M-K two one``.

    Three or more hyphen-joined single letters, or two followed by digits or digit words.
    """

    label = "SPELLED_WORD"
    _RE = re.compile(r"(?<![\w-])[A-Za-z](?:-[A-Za-z]){1,}(?![\w-])"
                     r"(?P<tail>(?:[\s-]+" + _DIGIT_OR_WORD + r"(?![\w-]))*)", re.IGNORECASE)

    def find(self, text: str, source: str) -> Iterator[Span]:
        if "-" not in text:
            return
        for m in self._RE.finditer(text):
            letters = m.end() - len(m.group("tail")) - m.start()
            n_letters = (letters + 1) // 2
            if n_letters >= 3 or (n_letters == 2 and m.group("tail").strip(" -")):
                yield Span(m.start(), m.end(), self.label, source, 0.9)


class UsernameDetector(Detector):
    """Usernames and other handles (DLP's GENERIC_ID).

    Everywhere: ``@handles`` and tokens that mix letters and digits (``enigma52``, ``jsmith1985``).
    Near a hot word ("user name", "username", "user ID", "handle", "login", ...; within
    ``window`` characters, the Dialpad paper's 100), also any uncommon word (``Mrbigchef``),
    and every hit there gets a higher score.
    """

    label = "USERNAME"
    HOT = re.compile(r"\b(?:user\s*names?|user\s*ids?|screen\s*names?|account\s*names?|gamer\s*tags?|"
                     r"log\s*in\s*(?:names?|ids?)|login|nick\s*names?|(?:twitter|instagram|user)\s+handles?|"
                     r"handle\s+is)\b", re.IGNORECASE)
    _HANDLE = re.compile(r"(?<![\w@.])@[A-Za-z0-9_]{2,}\b")
    # a handle-like token; apostrophes join ("didn't" is one common word, not "didn")
    _TOKEN = re.compile(r"(?<![\w@.'’-])[A-Za-z0-9_][A-Za-z0-9_.'’-]*[A-Za-z0-9_](?![\w@'’])")
    _ORDINAL = re.compile(r"\d+(?:st|nd|rd|th|s|am|pm|k|m|kg|km|mm|cm|ft|lb|lbs|mph)?", re.IGNORECASE)

    def __init__(self, window: int = 100) -> None:
        self.window = window

    def _mixed(self, tok: str) -> bool:
        """Letters and digits in one token of 4+ characters that is not just a number with a unit."""
        return (len(tok) >= 4 and any(c.isdigit() for c in tok) and any(c.isalpha() for c in tok)
                and not self._ORDINAL.fullmatch(tok))

    def find(self, text: str, source: str) -> Iterator[Span]:
        for m in self._HANDLE.finditer(text):
            yield Span(m.start(), m.end(), self.label, source, 0.8)
        hot = [h.span() for h in self.HOT.finditer(text)]
        if not hot and not any(c.isdigit() for c in text):
            return
        for m in self._TOKEN.finditer(text):
            tok = m.group()
            is_near = bool(hot) and near(hot, m.start(), m.end(), self.window)
            if self._mixed(tok):
                yield Span(m.start(), m.end(), self.label, source, 0.9 if is_near else 0.6)
            elif (is_near and len(tok) >= 3 and any(c.isalpha() for c in tok)
                  and not inside(hot, m.start())
                  and tok.lower() not in common_words()):
                yield Span(m.start(), m.end(), self.label, source, 0.7)


_HONORIFIC = re.compile(r"\b(?:Mr|Mrs|Ms|Miss|Mister|Missus|Dr|Prof|Professor|Sir|Dame|Madam|Judge)\b\.?"
                        r"[ \t]+(?=[^\W\d_])")
_NAME_TOKEN = re.compile(r"(?:[^\W\d_]\.){1,3}|[^\W\d_][\w'’-]*")


class TitledNameDetector(Detector):
    """A person's name after an honorific: "Mr Oğuz Atakan Köseoğlu", "Mrs A. Demetriades".

    Catches names an English NER model misses (non-English spellings) where the title gives them
    away; takes up to four capitalised words or initials after the title (the title itself stays).
    """

    label = "PERSON_NAME"

    def find(self, text: str, source: str) -> Iterator[Span]:
        for m in _HONORIFIC.finditer(text):
            pos, end, words = m.end(), -1, 0
            while words < 4:
                t = _NAME_TOKEN.match(text, pos)
                if t is None or not t.group()[0].isupper():
                    break
                end, words = t.end(), words + 1
                ws = re.match(r"[ \t]+", text[t.end():t.end() + 3])
                pos = t.end() + (ws.end() if ws else 0)
                if not ws and not t.group().endswith("."):
                    break
            if end > m.end():
                yield Span(m.end(), end, self.label, source, 0.75)


@lru_cache(maxsize=4096)
def _non_latin_letter(c: str) -> bool:
    """A letter of another script than Latin (Hebrew, Cyrillic, Greek, Arabic, CJK, ...)."""
    import unicodedata

    return ord(c) >= 0x250 and c.isalpha() and not unicodedata.name(c, "LATIN").startswith("LATIN")


class NonLatinNameDetector(Detector):
    """Words in a non-Latin script inside (mostly) Latin-script text: "Mr שמעון פרס", "Иван Петров".

    An English NER model tags none of them, and in English corpora such words are names, places or
    quoted foreign terms: all worth masking. A run of such words (spaces between) is one span.
    The cost in precision is what a corpus holds in other scripts; it is measured in
    docs/detection_comparison.md (masked words on the English gold sets). Text in a non-Latin
    script as a whole needs a model for that language instead: this rule would mask all of it.
    """

    label = "NON_LATIN_NAME"
    _WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")

    def find(self, text: str, source: str) -> Iterator[Span]:
        if text.isascii():
            return
        start = end = -1
        for m in self._WORD.finditer(text):
            if m.group().isascii() or not any(_non_latin_letter(c) for c in m.group()):
                continue
            if start >= 0 and text[end:m.start()].isspace():
                end = m.end()
                continue
            if start >= 0:
                yield Span(start, end, self.label, source, 0.7)
            start, end = m.start(), m.end()
        if start >= 0:
            yield Span(start, end, self.label, source, 0.7)


def read_dictionary(path: str | Path, aliases: Mapping[str, str] | None = None) -> dict[str, str]:
    """``term<TAB>TYPE`` per line (TYPE optional, default CUSTOM); ``#`` comments and blank lines skipped.

    TYPE must be one of veil's placeholder labels (``veil.markers.LABELS``) after ``aliases``
    (a file's own short names, e.g. TAB's ``DEM`` for ``DEMOGRAPHIC``)."""
    path = Path(path)
    out: dict[str, str] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError(str(path), None, "no such dictionary file") from None
    except UnicodeDecodeError as e:
        raise InputError(str(path), None, f"not valid UTF-8 ({e.reason})") from None
    for lineno, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        term, _, kind = line.partition("\t")
        kind = kind.strip() or "CUSTOM"
        kind = (aliases or {}).get(kind, kind)
        if kind not in LABELS:
            raise InputError(str(path), lineno, f"type {kind!r} is not one of veil's placeholder labels "
                             f"(e.g. PERSON_NAME, ORGANIZATION_NAME, LOCATION, CUSTOM; `veil.markers.LABELS`)")
        out[term.strip()] = kind
    return out


class DictionaryDetector(Detector):
    """The custom dictionary: terms always masked with their type (case-insensitive, whole words)."""

    label = "CUSTOM"

    def __init__(self, terms: Mapping[str, str]) -> None:
        self.terms = {t.strip().lower(): check_label(k, f"the dictionary entry {t!r}")
                      for t, k in terms.items() if t.strip()}
        if not self.terms:
            raise VeilError("the custom dictionary is empty")
        alternatives = "|".join(re.escape(t) for t in sorted(self.terms, key=len, reverse=True))
        self._re = re.compile(r"(?<!\w)(?:" + alternatives + r")(?!\w)", re.IGNORECASE)

    def find(self, text: str, source: str) -> Iterator[Span]:
        for m in self._re.finditer(text):
            yield Span(m.start(), m.end(), self.terms.get(m.group().lower(), self.label), source, 1.0)
