"""Detect-and-mask evaluation: rewrite a text into the form a call transcript has, remapping gold spans.

``transform(text, spans, form)`` returns the rewritten text and the spans moved onto it, so that
every gold mention still points at its (rewritten) words. Three forms:

- ``none``: the text as it is;
- ``lower``: lower-cased (offsets change only where lower-casing changes a character's length, "İ");
- ``asr``: what speech recognition writes: lower case, no punctuation, digits and symbols spoken as
  words. Phone, card, SSN and other long digit groups are read digit by digit
  ("555-1234" -> "five five five one two three four"), short numbers as numbers ("22" -> "twenty
  two"), four-digit numbers as years ("1990" -> "nineteen ninety"), amounts with their currency
  ("$25" -> "twenty five dollars"), ordinals, decades, percentages, times and dates as spoken;
  e-mail addresses and domains are spoken ("john dot smith at gmail dot com"); letters glued to
  digits in codes are spelled ("SW1A" -> "s w one a"); symbols become words ("&" -> "and").
  Whitespace becomes one space, or one newline where the original had a line break (a transcript
  keeps one utterance per line).

The rewriting is deterministic (no sampling), so an evaluation run on ``asr`` text is repeatable.
Spans are any objects with ``start`` / ``end`` fields that ``dataclasses.replace`` accepts
(``veil.types.Span``, ``veil.mask.gold.GoldSpan``) or ``(start, end, ...)`` tuples; a span whose
characters all vanish (a mention that is only punctuation) is dropped.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from functools import lru_cache
from typing import Any, Sequence, TypeVar

from veil.errors import VeilError
from veil.shapes import DIGIT_WORDS

FORMS = ("none", "lower", "asr")

T = TypeVar("T")

SYMBOL_WORDS = {"&": "and", "@": "at", "%": "percent", "+": "plus", "=": "equals", "#": "number",
                "°": "degrees", "§": "section", "$": "dollars", "€": "euros", "£": "pounds", "¥": "yen"}
CURRENCY_WORDS = {"$": "dollars", "€": "euros", "£": "pounds", "¥": "yen"}
SCALE_WORDS = {"k": "thousand", "m": "million", "bn": "billion", "thousand": "thousand", "million": "million",
               "billion": "billion"}
URL_SYMBOLS = {".": "dot", "@": "at", "_": "underscore", "-": "dash", "/": "slash", ":": "colon",
               "+": "plus", "%": "percent", "?": "question mark", "=": "equals", "&": "and", "#": "hash",
               "~": "tilde"}

_TLDS = ("com|org|net|edu|gov|mil|int|info|biz|io|co|us|uk|ca|de|fr|nl|eu|au|in|ru|ch|se|no|es|it|"
         "jp|cn|br|me|tv|ly|app|dev|ai")

# One alternation scanned left to right; earlier groups win at the same position.
_ASR_RE = re.compile(
    r"(?P<email>[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})"
    r"|(?P<url>(?:https?://|www\.)[^\s<>\"'()]*[^\s<>\"'().,;:!?]"
    r"|(?<![\w@.])[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.(?:" + _TLDS + r")\b(?![.@-]\w)(?:/[^\s<>\"'()]*[^\s<>\"'().,;:!?])?)"
    r"|(?P<phone>(?<![\w.])(?:\+\d{1,3}[ .-]?)?(?:\(\d{3}\)[ .-]?|\d{3}[ .-])\d{3}[ .-]\d{4}(?![\w])"
    r"|(?<![\w.])\+\d{1,3}(?:[ .-]\(?\d+\)?){2,}(?![\w])"
    r"|(?<![\w.])\d{4}[ -]\d{4}[ -]\d{4}[ -]\d{1,7}(?![\w])"
    r"|(?<![\w.])\d{3} \d{2} \d{4}(?![\w]))"
    r"|(?P<date>(?<![\w./-])(?:\d{1,2}[/.-]\d{1,2}[/.-](?:\d{4}|\d{2})|\d{4}-\d{1,2}-\d{1,2})(?![\w/-]|\.\d))"
    r"|(?P<money>[$€£¥]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:thousand|million|billion|bn|k|m)\b)?)"
    r"|(?P<time>(?<![\w.:])\d{1,2}:\d{2}(?::\d{2})?(?:\s?(?P<ampm>[ap])\.?m\b\.?)?)"
    r"|(?P<ordinal>(?<![\w.])\d+(?:st|nd|rd|th)\b)"
    r"|(?P<decade>(?<![\w.])\d{4}s\b)"
    r"|(?P<percent>(?<![\w.])\d+(?:\.\d+)?\s?%)"
    r"|(?P<thousands>(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,]))"
    r"|(?P<decimal>(?<![\w.])\d+\.\d+(?![\w.]|\.\d))"
    r"|(?P<cluster>\d+(?:[-./]\d+)+)"
    r"|(?P<number>\d+)"
    r"|(?P<numero>\b[Nn]os?\.(?=\s*\d))"
    r"|(?P<word>[^\W\d_]+(?:['’][^\W\d_]+)*)"
    r"|(?P<symbol>[&@%+=#°§$€£¥])"
)
_VOWELS = frozenset("aeiouy")


def _words(phrase: str) -> list[str]:
    """num2words output as plain words: no hyphens or commas ("twenty-one," -> twenty one)."""
    return phrase.replace("-", " ").replace(",", " ").split()


@lru_cache(maxsize=4096)
def cardinal(n: int) -> tuple[str, ...]:
    from num2words import num2words  # lazy: only the asr form needs it

    return tuple(_words(num2words(n)))


@lru_cache(maxsize=4096)
def year(n: int) -> tuple[str, ...]:
    from num2words import num2words

    return tuple(_words(num2words(n, to="year")))


def ordinal(n: int) -> tuple[str, ...]:
    from num2words import num2words

    return tuple(_words(num2words(n, to="ordinal")))


def digits(s: str) -> list[str]:
    return [DIGIT_WORDS[ord(c) - 48] for c in s if "0" <= c <= "9"]


def spoken_number(s: str) -> list[str]:
    """A bare digit string as people say it: 1-3 digits a number, 4 a year, longer or 0-led digit by digit."""
    if len(s) > 1 and s[0] == "0" or len(s) > 4:
        return digits(s)
    if len(s) == 4:
        return list(year(int(s)))
    return list(cardinal(int(s)))


def _plural(word: str) -> str:
    return word[:-1] + "ies" if word.endswith("y") else word + "s"


class _Builder:
    """Collects output words, each with the source characters it stands for."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.out: list[str] = []
        self.len = 0
        self.last_src_end = 0
        # (src_start, src_end, out_start, out_end, charwise): charwise words map character by character
        self.segments: list[tuple[int, int, int, int, bool]] = []

    def add(self, word: str, src_start: int, src_end: int, charwise: bool = False) -> None:
        if self.out:
            sep = "\n" if "\n" in self.text[self.last_src_end:src_start] else " "
            self.out.append(sep)
            self.len += 1
        self.out.append(word)
        self.segments.append((src_start, src_end, self.len, self.len + len(word), charwise))
        self.len += len(word)
        self.last_src_end = max(self.last_src_end, src_end)

    def add_all(self, words: Sequence[str], src_start: int, src_end: int) -> None:
        for w in words:
            self.add(w, src_start, src_end)

    def add_digits(self, s: str, offset: int) -> None:
        """Each digit of ``s`` (found at ``offset``) spoken on its own, mapped to its own character."""
        for i, c in enumerate(s):
            if "0" <= c <= "9":
                self.add(DIGIT_WORDS[ord(c) - 48], offset + i, offset + i + 1)
            elif c == "+":
                self.add("plus", offset + i, offset + i + 1)

    def text_out(self) -> str:
        return "".join(self.out)


def _add_spelled(b: _Builder, s: str, offset: int) -> None:
    """A URL or e-mail address spoken: words kept, digits one by one, symbols named ("dot", "at")."""
    for m in re.finditer(r"[^\W\d_]+|\d+|\S", s):
        tok, start = m.group(), offset + m.start()
        if tok[0].isdigit():
            if len(tok) <= 2:
                b.add_all(cardinal(int(tok)), start, start + len(tok))
            else:
                b.add_digits(tok, start)
        elif tok[0].isalpha():
            low = tok.lower()
            b.add(low, start, start + len(tok), charwise=len(low) == len(tok))
        elif tok in URL_SYMBOLS:
            for w in URL_SYMBOLS[tok].split():
                b.add(w, start, start + 1)


def _add_word(b: _Builder, text: str, start: int, end: int) -> None:
    tok = text[start:end]
    low = tok.lower().replace("’", "'")
    glued = (start > 0 and text[start - 1].isdigit()) or (end < len(text) and text[end].isdigit())
    if glued and (len(tok) <= 2 or not _VOWELS.intersection(low)):
        # a code's letters are read out one by one: "SW1A" -> "s w one a", "10am" -> "ten a m"
        for i, c in enumerate(low):
            b.add(c, start + i, start + i + 1)
    else:
        b.add(low, start, end, charwise=len(low) == len(tok))


def _asr(text: str) -> _Builder:
    b = _Builder(text)
    for m in _ASR_RE.finditer(text):
        kind, s, e = m.lastgroup, m.start(), m.end()
        tok = m.group()
        if kind == "ampm":  # only a sub-group of "time"
            kind = "time"
        if kind == "word":
            _add_word(b, text, s, e)
        elif kind in ("email", "url"):
            if kind == "url":
                tok = re.sub(r"^https?://", "", tok)
                s = e - len(tok)
                if tok.lower().startswith("www."):
                    b.add_all(("w", "w", "w"), s, s + 3)
                    tok, s = tok[3:], s + 3
            _add_spelled(b, tok, s)
        elif kind == "numero":  # "no. 18403/91" is said "number ..."
            b.add("numbers" if tok[:3].lower() == "nos" else "number", s, e)
        elif kind == "phone":
            b.add_digits(tok, s)
        elif kind == "cluster":
            groups = list(re.finditer(r"\d+", tok))
            if sum(len(g.group()) for g in groups) >= 7:
                b.add_digits(tok, s)  # an account, case or phone number: "18403/91"
            else:
                for g in groups:
                    b.add_all(spoken_number(g.group()), s + g.start(), s + g.end())
        elif kind == "date":
            for g in re.finditer(r"\d+", tok):
                v = g.group()
                words = year(int(v)) if len(v) == 4 else cardinal(int(v))
                b.add_all(words, s + g.start(), s + g.end())
        elif kind == "number":
            b.add_all(spoken_number(tok), s, e)
        elif kind == "thousands":
            whole, _, frac = tok.partition(".")
            b.add_all(cardinal(int(whole.replace(",", ""))), s, e)
            if frac:
                b.add_all(["point", *digits(frac)], s, e)
        elif kind == "decimal":
            whole, _, frac = tok.partition(".")
            b.add_all([*cardinal(int(whole)), "point", *digits(frac)], s, e)
        elif kind == "percent":
            num = tok.rstrip("% ")
            whole, _, frac = num.partition(".")
            b.add_all([*cardinal(int(whole)), *(["point", *digits(frac)] if frac else []), "percent"], s, e)
        elif kind == "ordinal":
            b.add_all(ordinal(int(tok[:-2])), s, e)
        elif kind == "decade":
            words = list(year(int(tok[:-1])))
            b.add_all(words[:-1] + [_plural(words[-1])], s, e)
        elif kind == "money":
            b.add_all(_money(tok), s, e)
        elif kind == "time":
            _add_time(b, m)
        elif kind == "symbol":
            b.add_all(SYMBOL_WORDS[tok].split(), s, e)
    return b


def _money(tok: str) -> list[str]:
    """``$1,250.50`` -> one thousand two hundred and fifty dollars and fifty cents; ``£2.5m`` -> two point five million pounds."""
    m = re.fullmatch(r"([$€£¥])\s?(\d[\d,]*)(?:\.(\d+))?(?:\s?([a-z]+))?", tok)
    if m is None:  # cannot happen for the group's own matches; speak it digit by digit rather than fail
        return digits(tok)
    sym, whole, frac, scale = m.groups()
    words = list(cardinal(int(whole.replace(",", ""))))
    currency = CURRENCY_WORDS[sym]
    if scale:
        if frac:
            words += ["point", *digits(frac)]
        return words + [SCALE_WORDS[scale], currency]
    words.append(currency)
    if frac and int(frac):
        cents = int(frac[:2].ljust(2, "0"))
        words += ["and", *cardinal(cents), "cents"]
    return words


def _add_time(b: _Builder, m: re.Match) -> None:
    tok, s = m.group(), m.start()
    parts = re.findall(r"\d+", tok)
    hour, minute = int(parts[0]), int(parts[1])
    words = list(cardinal(hour))
    if minute:
        words += (["oh", *cardinal(minute)] if minute < 10 else list(cardinal(minute)))
    if m.group("ampm"):
        words += [m.group("ampm").lower(), "m"]
    elif not minute:
        words.append("o'clock")
    b.add_all(words, s, m.end())


def _lower(text: str) -> _Builder:
    """Lower-cased, character by character (a few characters change length when lower-cased)."""
    b = _Builder(text)
    low = text.lower()
    if len(low) == len(text):
        b.out = [low]
        b.segments = [(0, len(text), 0, len(text), True)] if text else []
        return b
    pos = 0
    for i, c in enumerate(text):
        lc = c.lower()
        b.segments.append((i, i + 1, pos, pos + len(lc), len(lc) == 1))
        b.out.append(lc)
        pos += len(lc)
    return b


def _remap(segments: list[tuple[int, int, int, int, bool]], starts: list[int], start: int,
           end: int) -> tuple[int, int] | None:
    """The output range the source range ``[start, end)`` became, or None if none of it is left.

    ``segments`` are sorted by source range; two ranges are disjoint or equal (one source range can give
    several words), so the segments that meet ``[start, end)`` are the run just before the first one
    starting at or after ``end``.
    """
    new_start = new_end = None
    i = bisect.bisect_left(starts, end) - 1
    while i >= 0:
        ss, se, os_, oe, charwise = segments[i]
        i -= 1
        if se <= start:
            break
        if oe == os_:
            continue
        lo = os_ + (start - ss) if charwise and start > ss else os_
        hi = oe - (se - end) if charwise and end < se else oe
        new_start = lo if new_start is None else min(new_start, lo)
        new_end = hi if new_end is None else max(new_end, hi)
    if new_start is None or new_end <= new_start:
        return None
    return new_start, new_end


def _move(span: T, start: int, end: int) -> T:
    if isinstance(span, tuple):
        return (start, end, *span[2:])  # type: ignore[return-value]
    return dataclasses.replace(span, start=start, end=end)  # type: ignore[type-var]


def check_form(form: str) -> str:
    if form not in FORMS:
        raise VeilError(f"unknown text form {form!r}; choose from {', '.join(FORMS)}")
    return form


def transform(text: str, spans: Sequence[T], form: str) -> tuple[str, list[T]]:
    """``(text in the given form, spans remapped onto it)``; see the module docstring for the forms."""
    check_form(form)
    if form == "none":
        return text, list(spans)
    b = _lower(text) if form == "lower" else _asr(text)
    out: list[T] = []
    segments = sorted(b.segments)
    starts = [seg[0] for seg in segments]
    for span in spans:
        start, end = (span[0], span[1]) if isinstance(span, tuple) else (span.start, span.end)  # type: ignore[attr-defined]
        moved = _remap(segments, starts, start, end)
        if moved is not None:
            out.append(_move(span, *moved))
    return b.text_out(), out


def transform_documents(golds: Sequence[Any], form: str) -> list[Any]:
    """Gold documents (``.doc.text`` and ``.spans``, e.g. ``veil.mask.gold.GoldDocument``) in another form."""
    check_form(form)
    if form == "none":
        return list(golds)
    out = []
    for g in golds:
        text, spans = transform(g.doc.text, g.spans, form)
        out.append(dataclasses.replace(g, doc=dataclasses.replace(g.doc, text=text), spans=spans))
    return out
