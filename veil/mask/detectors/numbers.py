"""Detect and mask stage: DLP detectors for numbers (credit cards, US SSNs, digit runs, dates, ages)."""

from __future__ import annotations

import re
from typing import Iterator

from veil.mask.detectors.base import Detector, PatternDetector
from veil.shapes import DIGIT_WORDS
from veil.types import Span


def _luhn_sum(digits: str) -> int:
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = ord(c) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total


def luhn_ok(digits: str) -> bool:
    """Whether ``digits`` end in their Luhn check digit (card numbers)."""
    return _luhn_sum(digits) % 10 == 0


def luhn_check_digit(body: str) -> str:
    """The digit that makes ``body + digit`` pass :func:`luhn_ok`."""
    return str((10 - _luhn_sum(body + "0") % 10) % 10)


def _has_digit(text: str) -> bool:
    return any(c.isdigit() for c in text)


class _DigitsDetector(PatternDetector):
    """A pattern detector whose every hit holds a digit: texts without one are skipped before the regexes."""

    def may_match(self, text: str) -> bool:
        return _has_digit(text)


class CreditCardDetector(_DigitsDetector):
    label = "CREDIT_CARD_NUMBER"
    PATTERNS = ((r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])", 0.9),)
    CONTEXT = r"credit|card|visa|mastercard|amex|american express|discover|cc"
    CONTEXT_BOOST = 0.1

    def validate(self, surface: str) -> bool:
        digits = re.sub(r"\D", "", surface)
        return 13 <= len(digits) <= 19 and luhn_ok(digits) and len(set(digits)) > 1


class UsSsnDetector(_DigitsDetector):
    label = "US_SOCIAL_SECURITY_NUMBER"
    PATTERNS = (
        (r"(?<![\d-])\d{3}([- .])\d{2}\1\d{4}(?![\d-])", 0.8),
        (r"(?<![\d-])\d{9}(?![\d-])", 0.3),  # bare nine digits: only with a hot word nearby
    )
    CONTEXT = r"social security|social|ssn|ssns|ss#|ssid"
    CONTEXT_BOOST = 0.5

    def validate(self, surface: str) -> bool:
        d = re.sub(r"\D", "", surface)
        # never issued: area 000, 666, 9xx; group 00; serial 0000
        return not (d[:3] in ("000", "666") or d[0] == "9" or d[3:5] == "00" or d[5:] == "0000")


_UNITS = dict.fromkeys(("zero", "oh", "o", *DIGIT_WORDS[1:]), 1)
_TEENS = {w: 2 for w in ("ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen "
                         "nineteen").split()}
_TENS = {w: 2 for w in "twenty thirty forty fifty sixty seventy eighty ninety".split()}
_NUMBER_WORDS = {**_UNITS, **_TEENS, **_TENS, "double": 0, "triple": 0}
_NUM_TOKEN = r"(?:\d+(?:st|nd|rd|th|s)?|" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + r")"
# separators inside one run: spaces, hyphens, slashes, dots, commas, colons, brackets (at most 3)
# a token ends at a non-word character that does not start "'clock" ("ten o'clock" is no digit run)
_END = r"(?![\w]|['’]\w)"
_RUN_RE = re.compile(r"(?<![\w+])\+?" + _NUM_TOKEN + _END + r"(?:[\s\-/.,:()]{1,3}" + _NUM_TOKEN + _END + r")*",
                     re.IGNORECASE)
_TOKEN_RE = re.compile(r"\d+|[a-z]+", re.IGNORECASE)


def run_digits(surface: str) -> tuple[int, int, int]:
    """(digits the run stands for, offset of its first counted token, end of its last counted token)."""
    n = 0
    first = last = -1
    prev_tens = False
    repeat = 1  # "double five" is two digits
    for m in _TOKEN_RE.finditer(surface):
        tok = m.group().lower()
        if tok[0].isdigit():
            k, prev_tens = len(tok), False
        elif tok in ("st", "nd", "rd", "th", "s"):
            if first >= 0 and m.start() == last:
                last = m.end()  # the suffix of "1st", "1990s" belongs to the number
            continue
        elif tok in ("oh", "o") and first < 0:
            continue  # "oh, one two" starts with the interjection, not a zero
        elif tok in ("double", "triple"):
            repeat = 2 if tok == "double" else 3
            if first < 0:
                first = m.start()
            continue
        else:
            k = _NUMBER_WORDS[tok]
            if prev_tens and tok in _UNITS:
                k = 0  # "twenty one" is 21: two digits, not three
            prev_tens = tok in _TENS
        if first < 0:
            first = m.start()
        last = m.end()
        n += k * repeat
        repeat = 1
    return n, first, last


_HOURS = frozenset("one two three four five six seven eight nine ten eleven twelve".split())
_MINUTES = re.compile(r"(?:ten|fifteen|twenty|thirty|forty|fifty)(?:[\s-](?:one|two|three|four|five|six|seven|eight|nine))?"
                      r"|oh[\s-](?:one|two|three|four|five|six|seven|eight|nine)|eleven|twelve|thirteen|fourteen|sixteen|"
                      r"seventeen|eighteen|nineteen", re.IGNORECASE)


def _clock_or_price(text: str, start: int, run: str) -> bool:
    """"five thirty", "six fifteen", "two fifty": a time of day or a price said in words, not an id, unless a
    code word stands before it ("extension six fifteen")."""
    words = run.split(None, 1)
    if len(words) != 2 or words[0].lower() not in _HOURS or not _MINUTES.fullmatch(words[1]):
        return False
    return not re.search(r"\b(?:extension|ext|code|number|no|apartment|apt|room|suite|box|unit|flight|route)"
                         r"(?:\s+(?:is|was|number|no))?\W*$",
                         text[max(0, start - 20):start], re.IGNORECASE)


class NumberDetector(Detector):
    """Runs of 3+ digits, spelled out ("four five six"), written ("18403/91", "1,470,000") or mixed.

    The Dialpad paper's rule: a transcription engine leaves repeated or mis-heard digits
    unformatted, so any run standing for three or more digits is masked.
    """

    label = "NUMBER"

    def __init__(self, min_digits: int = 3, score: float = 0.6) -> None:
        self.min_digits = min_digits
        self.score = score

    def find(self, text: str, source: str) -> Iterator[Span]:
        for m in _RUN_RE.finditer(text):
            n, first, last = run_digits(m.group())
            if n >= self.min_digits and not _clock_or_price(text, m.start() + first, m.group()[first:last]):
                # the span is just the number: no leading "oh", no trailing separators; a "+" stays
                start = m.start() + first
                start -= start > 0 and text[start - 1] == "+"
                yield Span(start, m.start() + last, self.label, source, self.score)


_MONTHS = ("January|February|March|April|May|June|July|August|September|October|November|December|"
           "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec")
_DAY_NUM = r"(?:[12]\d|3[01]|0?[1-9])"
_DAY = _DAY_NUM + r"(?:st|nd|rd|th)?"


_UNIT_W = "|".join(DIGIT_WORDS[1:])
_ORD_UNIT_W = "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth"
# a day of the month as speech recognition writes it: "twenty two", "twenty-second", "the first"
_SPOKEN_DAY = (r"(?:(?:twenty|thirty)(?:[\s-](?:" + _UNIT_W + "|" + _ORD_UNIT_W + r"))?|twentieth|thirtieth|"
               r"ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|"
               r"tenth|eleventh|twelfth|(?:thir|four|fif|six|seven|eigh|nine)teenth|" + _UNIT_W + "|" + _ORD_UNIT_W + ")")
_TENS_W = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
_TEEN_W = "ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen"
# a year as spoken: "nineteen ninety nine", "nineteen oh five", "two thousand and five", "twenty twenty"
_SPOKEN_YEAR = (r"(?:(?:eighteen|nineteen|twenty)\s+(?:hundred|o[h]?\s+(?:" + _UNIT_W + r")|" + _TEEN_W +
                r"|(?:" + _TENS_W + r")(?:[\s-](?:" + _UNIT_W + r"))?)"
                r"|two\s+thousand(?:\s+and)?(?:\s+(?:" + _TEEN_W + r"|twenty(?:[\s-](?:" + _UNIT_W + r"))?|"
                + _UNIT_W + r"))?)")
# month names in any case, but "may" only capitalised (the verb); the digit-only patterns below add it
_MONTH_I = r"(?:(?i:" + _MONTHS.replace("May|", "") + r")|May)"
_YEAR = r"(?:\d{4}|" + _SPOKEN_YEAR + r")"
_DAY_ANY = r"(?:" + _DAY + r"|" + _SPOKEN_DAY + r")"
# "14 and 27 July", "1 to 3 May": two days of one month
_DAYS = _DAY_ANY + r"(?:\s*(?:and|to|-|–)\s*" + _DAY_ANY + r")?"
# "beginning of", "first half of", "summer and autumn of": a part of a month or year
_PART = (r"(?:(?:the\s+)?(?:beginning|end|middle|start|course|first\s+half|second\s+half|spring|summer|autumn|"
         r"winter|early|late|mid)(?:\s+and\s+(?:spring|summer|autumn|winter))?(?:\s+of)?[\s-]+)?")


class DateDetector(PatternDetector):
    """Calendar dates: "22 June 2005", "June 22nd, 2005", "June 2005", "12/03/1999", "in March".

    Month names match in any case when a day or a year is beside them ("22 june 2005"); spoken days
    and years too ("twenty two june two thousand and five", "june nineteen ninety nine"), as
    speech recognition writes dates. Two days of one month ("14 and 27 July 1999") and a part of a
    month or year ("end of October 1997", "first half of 1993") are one date.
    """

    label = "DATE"
    MERGE_OVERLAPS = True
    PATTERNS = (
        (r"(?i:\b" + _PART + r")\b" + _DAYS + r"(?:\s+of)?\s+(?:the\s+)?" + _MONTH_I + r"\b\.?(?:,?\s+" + _YEAR + r"\b)?", 0.8),
        (r"(?i:\b" + _PART + r")\b" + _MONTH_I + r"\.?\s+(?:the\s+)?" + _DAYS + r"\b(?:,?\s+" + _YEAR + r"\b)?", 0.8),
        (r"(?i:\b" + _PART + r")\b" + _MONTH_I + r"\.?,?\s+" + _YEAR + r"\b", 0.8),
        (r"(?<![\d/.-])(?:" + _DAY_NUM + r"[/.-]" + _DAY_NUM + r"[/.-](?:\d{4}|\d{2})"
         r"|\d{4}-(?:0?[1-9]|1[0-2])-" + _DAY_NUM + r")(?![\d/.-])", 0.8),
        # "5 may", "may 2005": the verb never sits between digits like this, nor between a spoken
        # day and year ("twenty two may two thousand and two")
        (r"\b" + _DAY + r"(?:\s+of)?\s+(?i:may)\b(?:,?\s+" + _YEAR + r"\b)?", 0.8),
        (r"(?i:\b" + _SPOKEN_DAY + r"(?:\s+of)?\s+may\s+" + _SPOKEN_YEAR + r")\b", 0.8),
        # a year alone, spoken: "two thousand and seven", "nineteen ninety nine"; not a count ("two thousand
        # applications", "nineteen twenty dollars")
        (r"(?i:\b" + _SPOKEN_YEAR + r")\b(?:(?<!thousand)|(?!(?i:\s+(?:[a-z]+s|dollars?|bucks|percent|people|"
         r"hundred|million)\b)))", 0.6),
        (r"\b(?i:may)\s+" + _DAY + r"(?:,?\s+\d{4})?\b|\b(?i:may),?\s+\d{4}\b", 0.8),
        # a part of a year: "first half of 1993"
        (r"(?i:\b(?:the\s+)?(?:beginning|end|middle|start|first\s+half|second\s+half|spring|summer|autumn|winter)"
         r"(?:\s+and\s+(?:spring|summer|autumn|winter))?\s+of\s+)(?:\d{4}|(?i:" + _SPOKEN_YEAR + r"))\b", 0.8),
        # a month name alone ("in March"), capitalised; "May" alone is too often the verb
        (r"\b(?:January|February|March|April|June|July|August|September|October|November|December)\b", 0.55),
    )


class AgeDetector(_DigitsDetector):
    label = "AGE"
    PATTERNS = (
        (r"\b\d{1,3}(?:\s*-\s*|\s+)(?:years?|yrs?)(?:\s*-\s*|\s+)old\b", 0.8),
        (r"\b\d{1,3}\s?y/?o\b", 0.8),
        (r"\b(?:aged?|age\s+of|turn(?:s|ed|ing)?)\s+(?P<hit>\d{1,3})\b(?!\s*(?:%|[a-z]))", 0.8),
        (r"\b(?:i'?m|i\s+am|he'?s|she'?s|he\s+is|she\s+is)\s+(?P<hit>\d{1,2})\b(?![.,]?\s*(?-i:[a-z])|\s*[%$])", 0.6),
        (r"\bwhen\s+(?:i|he|she|they|we)\s+(?:was|were)\s+(?P<hit>\d{1,3})\b(?![.,]?\s*(?-i:[a-z])|\s*[%$])", 0.7),
    )
    FLAGS = re.IGNORECASE


class StreetAddressDetector(_DigitsDetector):
    """US-style street addresses: "14 Crown Street", "221B Baker St.", "Suite 501", "P.O. Box 12"."""

    label = "STREET_ADDRESS"
    PATTERNS = (
        (r"\b\d{1,6}[A-Za-z]?(?:\s+[A-Z][\w'’.-]*){1,4}\s+(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|"
         r"Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Square|Sq|Way|Terrace|Parkway|Pkwy|Highway|Hwy|Circle|Cir|"
         r"Trail|Alley|Plaza|Streets|Squares)\b\.?", 0.7),
        (r"\b(?:Apt|Apartment|Suite|Ste|Unit|Room|Floor)\.?\s*#?\s*\d+[A-Za-z]?\b", 0.6),
        (r"\b(?:P\.?\s?O\.?\s+Box|PSC|Box)\s+\d+\b", 0.6),
    )


_NUM_WORDS_RE = "|".join(sorted((w for w in _NUMBER_WORDS if w not in ("o", "oh", "double", "triple")),
                                key=len, reverse=True))
# an amount: digits ("1,470,000", "5,699.21") or number words ("twenty-four", "two hundred")
# Bounded on purpose: an amount is at most 32 characters of digits or 16 number words. Unbounded, a
# run of number words or dotted digits that no unit follows is tried from every word and given back
# word by word: time quadratic in the run (bench/bench_detector_linearity.py); bounded, linear.
# Number words in any case ("Three hundred dollars" starts a sentence).
_AMOUNT = (r"(?:\d[\d,.]{0,30}\d|\d|(?i:(?:" + _NUM_WORDS_RE + r"|hundred|thousand)(?:[\s-]+(?:"
           + _NUM_WORDS_RE + r"|hundred|thousand|million|billion|point|and)){0,16}))"
           r"(?:\s+(?i:thousand|million|billion|bn|m))?")
#: verbs ending in "s" that follow a number without counting anything ("the card ... expires")
_COUNTED_VERBS = r"(?:expires|ends|starts|begins|goes|comes|means|says|does|has|was|is|gets|makes|takes|works|runs)"
_UNIT = r"(?:years?|months?|weeks?|days?|hours?|minutes?|decades?)"


class DurationDetector(PatternDetector):
    """Spans of time: "three years and nine months", "14 years", "two and a half years", "42 days".

    Written documents only (``WRITTEN_ONLY``): in a court case "14 years" is a sentence served, in a
    phone call "two years" is how long someone had a car.
    """

    label = "DURATION"
    WRITTEN_ONLY = True
    PATTERNS = ((r"\b" + _AMOUNT + r"(?:\s+and\s+a\s+half)?[\s-]+" + _UNIT + r"\b"
                 r"(?:\s+and\s+" + _AMOUNT + r"[\s-]+" + _UNIT + r"\b)?", 0.6),)
    FLAGS = re.IGNORECASE


_CURRENCY_CODES = ("EUR|USD|GBP|CHF|TRY|TRL|YTL|ATS|DEM|FRF|ITL|ESP|NLG|BEF|PLN|SEK|NOK|DKK|ISK|RUB|UAH|"
                   "HUF|CZK|SKK|BGN|RON|HRK|SIT|GRD|CYP|MTL|LTL|LVL|EEK|AMD|AZN|GEL|MDL|RSD|MKD|ALL|BAM|"
                   "JPY|CNY|INR|CAD|AUD")
#: the codes a speech recogniser writes lower-case after the amount ("liras try"); "all" is the word, not the lek
_CODES_SAID = "|".join(c for c in _CURRENCY_CODES.split("|") if c != "ALL")
# "pounds" only as sterling: alone it weighs far more often than it pays ("a hundred pound dog")
_CURRENCY_WORDS = (r"(?:(?i:new|old)\s+)?(?:(?i:[a-z]+)\s+)?(?i:euros?|dollars?|pounds?\s+sterling|"
                   r"liras?|lire|marks?|schillings?|francs?|zlotys?|kronor|kroner|kronur|kronas?|roubles?|"
                   r"rubles?|hryvnias?|forints?|korunas?|lei|levs?|kunas?|dinars?|drachmas?|cents?|bucks)")
_MEASURES = (r"(?:km/h|mph|kilometres?|kilometers?|km|metres?|meters?|square\s+met(?:re|er)s?|sq\.?\s?m|m²|"
             r"hectares?|ha|acres?|miles?|feet|ft|inches|kilograms?|kilos?|kg|grams?|g|tonnes?|tons?|"
             r"litres?|liters?|per\s+cent|percent|%)")


# "approximately EUR 1,800": the hedge belongs to the amount
_APPROX = r"(?:\b(?i:approx(?:imately|\.)?|about|around|some|nearly|almost|over|under)\s+)?"


class MoneyDetector(PatternDetector):
    """Amounts of money: "EUR 1,470,000", "$25", "200,000 Turkish liras (TRY)", "thirty thousand dollars"."""

    label = "MONEY"
    PATTERNS = (
        (_APPROX + r"(?:[$€£¥]\s?|\b(?:" + _CURRENCY_CODES + r")\s?)\d[\d,.]{0,30}\d?\b", 0.7),
        (_APPROX + r"\b" + _AMOUNT + r"\s*(?:\b(?:" + _CURRENCY_CODES + r")\b|" + _CURRENCY_WORDS + r"\b)"
         r"(?:\s*\((?:" + _CURRENCY_CODES + r")\)|\s+(?-i:" + _CURRENCY_CODES + r")\b|\s+(?i:" + _CODES_SAID + r")\b)?", 0.7),
    )

    def __init__(self) -> None:
        super().__init__()
        # as speech recognition writes it: "eur four thousand", "trl thirty million". A lower-case code
        # counts only where it is no common English word ("try", "all" stay words)
        from veil.mask.allow_list import common_words

        codes = "|".join(c.lower() for c in _CURRENCY_CODES.split("|") if c.lower() not in common_words())
        self._patterns.append((re.compile(_APPROX + r"\b(?:" + codes + r")\s+" + _AMOUNT + r"\b"
                                          r"|\b" + _AMOUNT + r"\s+(?:" + codes + r")\b"), 0.7))



class QuantityDetector(PatternDetector):
    """Measured quantities: "50 metres", "26 km/h", "3.5 hectares", "12 per cent"; counted things: "79 packages".

    Written documents only (``WRITTEN_ONLY``): conversation is full of "two dogs" and "forty miles".
    """

    label = "QUANTITY"
    WRITTEN_ONLY = True
    MERGE_OVERLAPS = True
    PATTERNS = ((r"\b" + _AMOUNT + r"\s?" + _MEASURES + r"(?![\w/])", 0.6),
                # counted things: "79 packages", "seven other persons", "fifty-five hearings"; not the
                # last group of a longer number followed by a verb ("4111 1111 1111 1111 expires":
                # the card number is the number detectors', and "1111 expires" counts nothing)
                (r"\b(?<!\d[\s\-./])" + _AMOUNT + r"\s+(?:other\s+|more\s+|separate\s+|further\s+)?"
                 r"(?!" + _COUNTED_VERBS + r"\b)(?:[a-z]+\s+)?(?!" + _COUNTED_VERBS + r"\b)[a-z]{3,}s\b", 0.55))
    FLAGS = re.IGNORECASE


# a code: letters and digits joined by "/", ".", "-" with a digit somewhere ("18403/91", "24/59W2",
# "33/21.2.3", "E.1", "D-4840", "11/2345-A")
_CODE = r"(?=[\w./-]*\d)[A-Za-z0-9]+(?:[/.\-][A-Za-z0-9]+)+"
_CODE_KEYWORDS = (r"(?:application|case|file|ref(?:erence)?|account|registration|reg|docket|record|claim|"
                  r"complaint|decision|judgment|policy|customer|member|order|ticket|id|no|nos|nr|number|n°)")


# short words that stand between a keyword and its number in a sentence ("account is 4471",
# "number was 2", "case of 12"): not a code's letter prefix
_SENTENCE_WORDS = r"(?:is|was|are|were|be|been|of|to|in|on|at|for|the|an?|it|its|my|your|our|his|her|as|by|and|or)"


class CaseCodeDetector(_DigitsDetector):
    """Codes that identify a case, an application or an account, masked whole.

    A number detector masks the digit runs of "11/2345-A" or "no. 2" and leaves the rest, which a
    risk audit scores as a partly masked ID. This detector takes the whole code: a token joining
    letters and digits with ``/ . -`` ("18403/91", "E.1", "33/21.2.3"), any code or number after a
    keyword ("application no. 2", "case No. 12-345", "account #4471"), and law-report citations
    ("NJA 2005 p. 884", "[2001] 3 WLR 206").
    """

    label = "GENERIC_ID"
    MERGE_OVERLAPS = True
    PATTERNS = (
        # not a plain decimal ("3.5")
        (r"(?<![\w/.\-])(?!\d+\.\d+(?![\w/.\-]|\.\w))" + _CODE + r"(?![\w/\-]|\.\w)", 0.6),
        # the optional letter prefix is a code's ("AB-123", "E 1"), never a word of the sentence
        # ("my number is 415-555-0132" must not take "is" into the code)
        (r"\b" + _CODE_KEYWORDS + r"\b\.?\s*(?:no\.?\s*|number\s+)?[:#]?\s*"
         r"(?P<hit>(?:(?!" + _SENTENCE_WORDS + r"\b)[A-Za-z]{0,4}[\s-]?)?\d(?:[\w/.\-]*\w)?)", 0.7),
        (r"(?P<hit>\b[A-Z]{2,5}\s\d{4}\s[ps]\.?\s?\d+)", 0.8),
        (r"(?P<hit>\[\d{4}\]\s+\d{1,4}\s+[A-Z][A-Za-z]{1,5}\s+\d+)", 0.8),
    )
    FLAGS = re.IGNORECASE
