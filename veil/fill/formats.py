"""Fill stage: values of format labels (phones, cards, dates, numbers, e-mails, spelled letters) in the original's shape.

The mask stage records the shape of a masked format value (:mod:`veil.shapes`); :func:`shaped_value`
draws a value of the label's type written in that shape (the same digits groups and separators, a
Luhn-valid card, a real calendar date, a North American phone number), :data:`FAKERS` one in the
type's usual layout where no shape was recorded. Every draw comes from the document's RNG; Faker's
generators run on a per-thread instance reseeded from it per draw, so threads cannot swap seeds.
"""

from __future__ import annotations

import random
import re
import threading
from functools import lru_cache
from typing import Any, Callable

from veil.shapes import DIGIT_WORDS
from veil.shapes import atoms as shape_atoms
from veil.shapes import tokens as shape_tokens

_ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"]
_UNITS = ["pounds", "miles", "feet", "gallons", "inches", "acres", "ounces"]
_DURATIONS = ["minutes", "hours", "days", "weeks", "months", "years"]


def _spelled(f: Any) -> str:
    return " ".join(f.random_uppercase_letter() for _ in range(f.random_int(3, 6)))


#: format label -> Faker draw. Keys are the DLP masker's and entity tagger's labels.
FAKERS: dict[str, Callable[[Any], str]] = {
    "EMAIL_ADDRESS": lambda f: f.free_email(),
    "URL": lambda f: f.url(),
    "IP_ADDRESS": lambda f: f.ipv4_public(),
    "PHONE_NUMBER": lambda f: f.numerify("###-###-####"),
    "CREDIT_CARD_NUMBER": lambda f: f.credit_card_number(),
    "US_SOCIAL_SECURITY_NUMBER": lambda f: f.ssn(),
    "NUMBER": lambda f: str(f.random_int(2, 99)),
    "CARDINAL": lambda f: str(f.random_int(2, 99)),
    "ORDINAL": lambda f: f.random_element(_ORDINALS),
    "DATE": lambda f: f.date("%B %-d, %Y"),
    "TIME": lambda f: f.time("%-I:%M"),
    "AGE": lambda f: str(f.random_int(18, 90)),
    "DURATION": lambda f: f"{f.random_int(2, 12)} {f.random_element(_DURATIONS)}",
    "MONEY": lambda f: f"${f.random_int(5, 999)}",
    "QUANTITY": lambda f: f"{f.random_int(2, 99)} {f.random_element(_UNITS)}",
    "PERCENT": lambda f: f"{f.random_int(2, 99)} percent",
    "SPELLED_WORD": _spelled,
    "USERNAME": lambda f: f.user_name(),
    "GENERIC_ID": lambda f: f.bothify("??-#####").upper(),
    "ZIP_CODE": lambda f: f.zipcode(),
}
_THREAD = threading.local()


def _faker() -> Any:
    """This thread's Faker: a draw reseeds it from the document's RNG and uses it at once, so an
    instance shared between threads could hand one thread's seed to another's draw."""
    f = getattr(_THREAD, "faker", None)
    if f is None:
        from faker import Faker  # lazy: Faker loads every provider on construction

        f = _THREAD.faker = Faker("en_US")
    return f


def _seeded_faker(rng: random.Random) -> Any:
    f = _faker()
    f.seed_instance(rng.getrandbits(64))
    return f


# --- shape-keeping draws (see veil.shapes for what a shape is and why it cannot reveal a value) ---

_TENS_TEENS = ("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
               "eighteen", "nineteen", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty",
               "ninety")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")
_ORDINAL_WORDS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
                  "tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth",
                  "seventeenth", "eighteenth", "nineteenth", "twentieth")
_NUMBERISH = frozenset({"NUMBER", "CARDINAL", "AGE", "DURATION", "MONEY", "QUANTITY", "PERCENT", "ZIP_CODE"})
_DATE_SHAPE = re.compile(r"^d{1,2}[/.-]d{2}(?:[/.-]d{2}(?:dd)?)?$|^dddd[/.-]dd[/.-]dd$")
_TIME_SHAPE = re.compile(r"^d{1,2}:dd(?::dd)?(?: ?\{[ap]m\})?$")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_WORD_CODES = ("w", "W", "U")
_MAIL_DOMAINS = ("gmail.com", "yahoo.com", "hotmail.com", "outlook.com", "aol.com", "icloud.com", "mail.com")


def _case(word: str, code: str) -> str:
    if code in ("L", "U"):
        return word.upper()
    if code == "W":
        return word[:1].upper() + word[1:]
    return word.lower()


@lru_cache(maxsize=1)
def _names_by_length() -> dict[int, list[str]]:
    """Faker's en_US first and last names by length: the words people spell out on a call."""
    from faker.providers.person.en_US import Provider

    from veil.shapes import LITERAL_WORDS

    out: dict[int, list[str]] = {}
    for name in sorted(set(Provider.first_names) | set(Provider.last_names)):
        if name.isalpha() and name.lower() not in LITERAL_WORDS:  # "Miles" would read as a unit in a shape
            out.setdefault(len(name), []).append(name.lower())
    return out


def _luhn_digits(n: int, rng: random.Random) -> str:
    """A Luhn-valid card number of ``n`` digits with a real issuer prefix (Amex 37 for 15, Visa 4 else)."""
    from veil.mask.detectors.numbers import luhn_check_digit

    body = ["3", "7"] if n == 15 else (["5", str(rng.randint(1, 5))] if n == 16 and rng.random() < 0.4 else ["4"])
    body += [str(rng.randrange(10)) for _ in range(n - 1 - len(body))]
    return "".join(body) + luhn_check_digit("".join(body))


def _nanp(rng: random.Random) -> str:
    """Ten digits of a North American number: area and exchange start 2-9 and are not N11."""
    def three() -> str:
        while True:
            s = f"{rng.randint(2, 9)}{rng.randrange(10)}{rng.randrange(10)}"
            if s[1:] != "11":
                return s
    return three() + three() + f"{rng.randrange(10000):04d}"


def _digit_string(label: str, n: int, rng: random.Random) -> str | None:
    """Digits with the structure of the type (Luhn, phone, SSN), or None for free digits."""
    if label == "CREDIT_CARD_NUMBER" and 12 <= n <= 19:
        return _luhn_digits(n, rng)
    if label == "PHONE_NUMBER" and n in (7, 10, 11):
        d = _nanp(rng)
        return {7: d[3:], 10: d, 11: "1" + d}[n]
    if label == "US_SOCIAL_SECURITY_NUMBER" and n == 9:
        area = rng.choice([a for a in range(1, 900) if a != 666])
        return f"{area:03d}{rng.randint(1, 99):02d}{rng.randint(1, 9999):04d}"
    return None


def _word_for(label: str, code: str, rng: random.Random, before_digit: bool = False) -> str:
    if label in _NUMBERISH:
        # "thirty-[eight]": a word before a digit word is a tens word ("fifteen-eight" is no number)
        word = rng.choice(_TENS_TEENS[10:16] if label == "AGE" else _TENS_TEENS[10:]) if before_digit \
            else rng.choice(_TENS_TEENS)
    elif label in ("DATE", "TIME"):
        word = rng.choice(_MONTHS)
    elif code == "U":  # a code's letters ("AB-12345")
        word = "".join(rng.choice(_LETTERS) for _ in range(rng.randint(2, 3)))
    else:
        word = rng.choice(_names_by_length()[rng.randint(4, 7)])
    return _case(word, code)


def _ordinal_suffix(n: int) -> str:
    return "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def _render(parts: list[str], label: str, rng: random.Random, digits: str | None = None,
            groups: list[int] | None = None, letters: str | None = None, words: list[str] | None = None) -> str:
    """Fill the atoms of a shape: ``digits`` for its d/n atoms in order (else free digits, the first
    digit of a group not 0), ``groups`` numbers for its digit groups (dates), ``letters`` for its
    single-letter atoms (spelled words), ``words`` for its word atoms (else a word of the type)."""
    out: list[str] = []
    di = li = gi = wi = 0
    last_number = None
    i = 0
    while i < len(parts):
        a = parts[i]
        if a == "d" and groups is not None:
            j = i
            while j < len(parts) and parts[j] == "d":
                j += 1
            width = j - i
            value = groups[gi] if gi < len(groups) else rng.randrange(10 ** width)
            gi += 1
            out.append(str(value).zfill(width)[-width:])
            last_number = value
            i = j
            continue
        if a in ("d", "n"):
            if digits is not None and di < len(digits):
                ch = digits[di]
            else:
                first = i == 0 or parts[i - 1] not in ("d", "n")
                after_word = a == "n" and i >= 2 and parts[i - 2] in _WORD_CODES  # "thirty [eight]", not "thirty zero"
                ch = str(rng.randint(1, 9) if after_word or (first and a == "d" and i + 1 < len(parts)
                                                             and parts[i + 1] == "d") else rng.randrange(10))
            di += 1
            out.append(ch if a == "d" else DIGIT_WORDS[int(ch)])
            if a == "d":
                last_number = int(ch) if i == 0 or parts[i - 1] != "d" else (last_number or 0) * 10 + int(ch)
        elif a in ("l", "L"):
            ch = letters[li] if letters is not None and li < len(letters) else rng.choice(_LETTERS)
            li += 1
            out.append(_case(ch, a))
        elif a in _WORD_CODES:
            if words is not None and wi < len(words):
                out.append(_case(words[wi], a))
            else:
                out.append(_word_for(label, a, rng, i + 2 < len(parts) and parts[i + 1] in " -"
                                     and parts[i + 2] == "n"))
            wi += 1
        elif a.startswith("{"):
            word = a[1:-1]
            if word in ("st", "nd", "rd", "th") and last_number is not None:
                word = _ordinal_suffix(last_number)
            out.append(word)
        elif a != "?":  # an unknown character is left out rather than guessed
            out.append(a)
        i += 1
    return "".join(out)


_TIME_UNITS = frozenset("day week weekend month year summer winter spring fall autumn semester".split())


_RELATIVE = frozenset("last next this past coming".split())
_DURATION_UNITS = ("day", "week", "month", "year")
_NAMED_TIMES = ("summer", "winter", "spring", "fall", "christmas", "thanksgiving", "easter", "monday", "tuesday",
                "wednesday", "thursday", "friday", "saturday", "sunday") + _MONTHS
_CAPITALISED_TIMES = frozenset(_NAMED_TIMES[4:])
_COUNT_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")


def _ago_value(parts: list[str], rng: random.Random) -> str:
    """A time said as a duration before now ("a couple of years ago", "five months ago", "a year and a half
    ago"), in the original's unit of time (its scale: a week ago stays days or weeks ago) and its writing
    (digits or words); a name of a time before it stays one ("Christmas a year ago" -> "Easter two years ago")."""
    lits = [a[1:-1].lower() for a in parts if a.startswith("{")]
    unit = next((u for lit in lits for u in _DURATION_UNITS if lit in (u, u + "s")), "year")
    most = {"day": 6, "week": 4, "month": 11, "year": 12}[unit]
    n = rng.randint(2, most)
    count = str(n) if "d" in parts else _COUNT_WORDS[n - 2]
    ago = " ago" if "ago" in lits else ""  # "(in) a couple of months": a time to come, said the same way
    phrase = rng.choice((f"a {unit}{ago}", f"a couple of {unit}s{ago}", f"a few {unit}s{ago}", f"{count} {unit}s{ago}",
                         f"{count} {unit}s{ago}", f"a {unit} and a half{ago}", f"a {unit} or two{ago}"))
    words = [a for a in parts if a in _WORD_CODES or a in ("l", "L", "n", "d")]
    if len(words) > 1 and words[0] in _WORD_CODES and parts[0] in _WORD_CODES:
        phrase = _time_name(parts[0], rng, _NAMED_TIMES[:7]) + " " + phrase  # "Christmas a year ago"
    elif parts and parts[0] in ("W", "L"):
        phrase = phrase[:1].upper() + phrase[1:]
    return phrase


def _time_name(code: str, rng: random.Random, names: tuple[str, ...] = _NAMED_TIMES) -> str:
    """A season, holiday, weekday or month in the case the original's word had (a season stays lower-case
    where the original was capitalised: "last March" -> "last winter")."""
    word = rng.choice(names)
    if code == "U":
        return word.upper()
    return word.capitalize() if code == "W" and word in _CAPITALISED_TIMES else word


#: a year said in two words ("eighty-nine", "seventy six"): its tens and its units
_SPOKEN_YEAR = re.compile(r"^w([ -])n$")


def _relative_date_value(parts: list[str], rng: random.Random) -> str:
    """A date said relative to now keeps its relative words, so its tense ("last summer" -> "last winter",
    "this past March" -> "this past fall"); its named times are drawn, and where it has none another unit
    takes its unit's place ("next week" -> "next month", never itself)."""
    if not any(a in _WORD_CODES for a in parts):
        # "last month", "next week": nothing to draw in the layout, so another unit of the same tense
        units = [u for u in ("week", "month", "year", "weekend", "summer", "winter", "spring", "fall")
                 if "{" + u + "}" not in parts]
        parts = [a for a in parts if not (a.startswith("{") and a[1:-1] in _TIME_UNITS)]
        while parts and parts[-1] == " ":
            parts.pop()
        parts += [" ", "{" + rng.choice(units) + "}"]
    out = []
    for a in parts:
        if a in _WORD_CODES:
            out.append(_time_name(a, rng))
        elif a.startswith("{"):
            out.append(a[1:-1])
        elif a in ("d", "n", "l", "L"):
            out.append(_render([a], "DATE", rng))
        elif a != "?":
            out.append(a)
    return "".join(out)


def _date_value(parts: list[str], rng: random.Random) -> str:
    """A real calendar date in the layout of ``parts``. The shape cannot say which reading order the
    original used (MM/DD, DD/MM, MM/YY), so numbers are chosen to be valid in every one of them. A date said
    relative to now keeps its tense: a duration "ago" stays one (:func:`_ago_value`), "last" / "next" / "this
    past" stay (:func:`_relative_date_value`)."""
    lits = {a[1:-1].lower() for a in parts if a.startswith("{")}
    if "ago" in lits or (lits & {"couple", "few", "several"} and lits & {u + "s" for u in _DURATION_UNITS}):
        return _ago_value(parts, rng)
    if lits & _RELATIVE:
        return _relative_date_value(parts, rng)
    spoken_year = _SPOKEN_YEAR.match("".join(parts))
    if spoken_year:  # "in eighty-nine" -> "in sixty-four", never "july-six"
        tens = rng.choice(("fifty", "sixty", "seventy", "eighty", "ninety"))
        word = tens.capitalize() if parts[0] == "W" else tens.upper() if parts[0] == "U" else tens
        return word + spoken_year.group(1) + DIGIT_WORDS[rng.randint(1, 9)]
    widths: list[int] = []
    ordinal: list[bool] = []  # the group is followed by "st" / "nd" / "rd" / "th": it is a day
    prev = None
    for a in parts:
        if a == "d":
            if prev == "d":
                widths[-1] += 1
            else:
                widths.append(1)
                ordinal.append(False)
        elif prev == "d" and a in ("{st}", "{nd}", "{rd}", "{th}"):
            ordinal[-1] = True
        prev = a
    n_words = sum(1 for a in parts if a in _WORD_CODES)
    small = [rng.randint(1, 12), rng.randint(1, 12), rng.randint(1, 28)]
    if n_words:  # "September 27, 2024": the numbers are a day and a year
        small = [rng.randint(1, 28)] + small
    groups: list[int] = []
    k = 0
    for w, is_day in zip(widths, ordinal):
        if is_day and w <= 2:
            groups.append(rng.randint(1, 9) if w == 1 else rng.randint(10, 28))
        elif w == 4:  # a year: of a birth or a past event more often than not, never far in the future
            groups.append(rng.randint(1950, 2026))
        elif w <= 2:
            v = small[k] if k < len(small) else rng.randint(1, 12)
            k += 1
            groups.append(v if w == 2 else min(v, 9))
        else:
            groups.append(rng.randrange(10 ** w))
    # words: a month, then a spoken ordinal day ("september twenty seventh"); before a unit of time the shape
    # kept ("last {month}", "next {week}") a word that says which one
    relative = any(a.strip("{}").lower() in _TIME_UNITS for a in parts if a.startswith("{"))
    words = ([rng.choice(("last", "next", "this"))] if relative else [rng.choice(_MONTHS)]) if n_words else []
    word_codes = [a for a in parts if a in _WORD_CODES]
    if word_codes == ["w", "W"]:  # "last March", "next Tuesday": a relative word, then a month
        words = [rng.choice(("last", "next", "this")), rng.choice(_MONTHS)]
    elif n_words == 2:
        words.append(_ORDINAL_WORDS[rng.randint(1, 20) - 1])
    elif n_words >= 3:
        words += ["twenty", _ORDINAL_WORDS[rng.randint(1, 9) - 1]]
    return _render(parts, "DATE", rng, groups=groups, words=words)


def _time_value(parts: list[str], rng: random.Random) -> str:
    widths = [len(g) for g in "".join(p if p == "d" else " " for p in parts).split()]
    hour = rng.randint(1, 9) if widths[0] == 1 else rng.randint(10, 12)
    return _render(parts, "TIME", rng, groups=[hour] + [rng.randint(0, 59) for _ in widths[1:]])


def _email_value(parts: list[str], rng: random.Random) -> str:
    at_atom = "{at}" if "{at}" in parts else "@" if "@" in parts else None
    if at_atom is None:  # the span held no address ("Bank" labelled an e-mail): its shape, not an address
        return _render(parts, "EMAIL_ADDRESS", rng)
    # the local part and the domain in the original's layout ("john dot smith at gmail dot com" spoken)
    at = parts.index(at_atom)
    local = _render(parts[:at], "EMAIL_ADDRESS", rng)
    domain = parts[at + 1:]
    if at_atom == "{at}":
        if [a for a in domain if a != " "] == ["w", "{dot}", "w"]:
            return local.rstrip() + " at " + rng.choice(_MAIL_DOMAINS).replace(".", " dot ")
        return local + _render(parts[at:], "EMAIL_ADDRESS", rng)
    if domain == ["w", ".", "w"]:
        return local + "@" + rng.choice(_MAIL_DOMAINS)
    last = max((i for i, a in enumerate(domain) if a in _WORD_CODES), default=None)
    words = [rng.choice(("com", "net", "org")) if i == last else rng.choice(_names_by_length()[rng.randint(4, 7)])
             for i, a in enumerate(domain) if a in _WORD_CODES]
    return local + "@" + _render(domain, "EMAIL_ADDRESS", rng, words=words)


def _spelled_value(parts: list[str], rng: random.Random) -> str:
    n = sum(1 for a in parts if a in ("l", "L"))
    pool = _names_by_length().get(n)
    letters = rng.choice(pool) if pool else "".join(rng.choice(_LETTERS) for _ in range(n))
    return _render(parts, "SPELLED_WORD", rng, letters=letters)


def shaped_value(label: str, shape: str, rng: random.Random) -> str:
    """A substitute of type ``label`` written in ``shape`` (see :mod:`veil.shapes`), drawn from ``rng``."""
    parts = shape_atoms(shape)
    core = "".join(a for a in parts if a != " ")
    if label == "EMAIL_ADDRESS":
        return _email_value(parts, rng)
    if label == "SPELLED_WORD":
        return _spelled_value(parts, rng)
    if label == "TIME" or (label in _NUMBERISH | {"DATE"} and _TIME_SHAPE.match(shape)):
        return _time_value(parts, rng)
    if label == "DATE" or (label in _NUMBERISH and _DATE_SHAPE.match(core)):
        return _date_value(parts, rng)
    if label == "IP_ADDRESS" and core.count(".") == 3 and set(core) <= {"d", "."}:
        octets = [len(g) for g in core.split(".")]
        return ".".join(str(rng.randint(*{1: (1, 9), 2: (10, 99)}.get(w, (100, 254)))) for w in octets)
    n_digits = sum(1 for a in parts if a in ("d", "n"))
    digits = _digit_string(label, n_digits, rng)
    if label == "AGE" and digits is None and (n_digits == 1 or (n_digits == 2 and "d" in parts)):
        digits = str(rng.randint(18, 85) if n_digits == 2 else rng.randint(2, 9))  # an adult's age, a child's
    return _render(parts, label, rng, digits=digits)


_WORD_ATOMS = ("W", "w", "U")


def person_mention(value: str, value_shape: str | None, shape: str | None, after_title: bool = False) -> str | None:
    """Another mention of a person whose substitute is ``value`` (drawn for a mention of ``value_shape``),
    written as ``shape`` says: a first name alone takes the substitute's first name, a title with one name
    its last name ("Maria Lopez" ... "Maria" ... "Mrs. Lopez" -> "Sally Horton" ... "Sally" ... "Mrs.
    Horton"; ``after_title``: the title stands before the placeholder); None when the mention has as many
    names as the substitute, or initials to match."""
    if shape is None:
        return None
    want = shape_atoms(shape)
    n = sum(a in _WORD_ATOMS for a in want)
    literals = {a[1:-1] for a in shape_atoms(value_shape or "") if a.startswith("{")}
    names = [t for c, t in shape_tokens(value) if c in _WORD_ATOMS and t not in literals]
    if not n or n >= len(names) or any(a in ("L", "l") for a in want):
        return None
    chosen = iter(names[-n:] if after_title or any(a.startswith("{") for a in want) else names[:n])
    return "".join(a[1:-1] if a.startswith("{") else _case(next(chosen), a) if a in _WORD_ATOMS else a for a in want)


def restyle(value: str, shape: str | None) -> str:
    """``value`` written with the letter case of ``shape`` when the two have the same atoms up to case
    (the same entity mentioned as "Maria" and "maria", or "M-A-R-I-A" and "m-a-r-i-a"); else unchanged."""
    if shape is None:
        return value
    fold = {"L": "l", "W": "w", "U": "w"}
    toks = [(c, t) for c, t in shape_tokens(value) if c != " "]
    want = [a for a in shape_atoms(shape) if a != " "]
    if len(toks) != len(want) or any(fold.get(c, c) != fold.get(a, a) for (c, _), a in zip(toks, want)):
        return value
    it = iter(want)
    out = []
    for c, t in shape_tokens(value):
        out.append(t if c == " " else (_case(t, a) if (a := next(it)) in fold or a in ("l", "w") else t))
    return "".join(out)
