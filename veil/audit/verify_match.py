"""Audit stage: how ``veil verify`` finds a removed value in a text (normal forms, keys, one linear scan).

**Normal form.** Text and values are read through the same fold, character by character (offsets
kept, so a survivor points at the original characters): Unicode compatibility forms decomposed
(NFKD: fullwidth ``４１５`` is ``415``, ``ﬁ`` is ``fi``), accents and other combining marks dropped
(``José`` and ``Jose\\u0301`` are ``jose``), invisible format characters dropped (a soft hyphen inside
a name, as the masker's detection view drops it: :mod:`veil.mask.normalise`), a digit of any script
read as its ASCII digit (``٩٤١١٠`` is ``94110``), Cyrillic and Greek letters that look like Latin
ones read as those (:data:`LOOKALIKES`: ``Mаria`` with a Cyrillic ``а`` is ``maria``), case folded.
The folded text is cut into runs of letters and digits (tokens) and a spoken digit word is read as
its digit (``four 1 five`` is ``4 1 5``: written, spoken and mixed digits are one form).

**Keys.** A value is looked for as its tokens joined (``text``), its speech-recognition form from
:mod:`veil.textforms` (``spoken``: an e-mail said with "dot" and "at", a year as "nineteen ninety"),
and for a value of several words, its identifying words alone (``part``): each word of a person's
name (three letters or more, not a title or suffix the fill keeps), the user part of an e-mail
address (never its provider: "gmail" of "maria@gmail.com" names a mail service that millions
share), and of any other value the words rarer than :data:`veil.mask.value_words.RARE_ZIPF`; never a
word the fill writes of its own into substitutes ("Bank", "PLC", "Boulevard", "years old", a title) or a
number word, and never a word of an occupation, a person's group, an age or a date
(:data:`veil.mask.propagation.WHOLE_LABELS`: "disgruntled" of "disgruntled graduate student" names no one;
the masking carries these over a call as said, never by their words).

**Scan.** A key matches a run of consecutive tokens whose joined text equals it, so ``Maria Lopez``
is found as ``maria-lopez`` and spelled ``M-A-R-I-A L-O-P-E-Z``; no match starts at the tail of a
contraction ("don't, I think" holds no "T I"), and no match of several tokens holds a letter that is a
word: the one that begins a contraction ("G T, I'm sorry" holds no "T I" either), "I" before a word that
follows the pronoun ("T, I mean"), a lower-case "a" before a capital letter (the article of "a T M"). A
match of several tokens counts only where each is a digit run, a single letter or a word of the value as
written or said ("maria-lopez" is "Maria Lopez", "a, my" is no "Amy": ``veil.audit.verify``). All keys
of a document go into one table with every prefix of every key; each token starts a walk that stops as
soon as the tokens read so far are no key's prefix, so the scan costs the number of tokens times at most
the longest key: linear in the length of the text.

**Everyday words.** A match made only of everyday English words (the detectors' test,
:func:`veil.mask.allow_list.common_words`: "mark", "hope", "teaching", "ski resorts", "five or
six"; not spelled letters, not a number of three digits or more) counts only where it reads as the
value it was, a name (:func:`reads_as_name`): in cased text, its first word written with a capital
and not at a sentence start (where every word is capitalised); in uncased text, right after a
naming cue ("my name is mark", "thanks hope", "mr grant"). "mark my words" and "I hope so" are
not the caller Mark or Hope; "and then Hope called" is. A person's whole name of two words or more
("mark smith") is that person wherever it stands. In cased text, one word of a value the value writes
with a capital counts only written with one ("symphony" is not the "Symphony" of "Nitny Valley
Symphony"); a date, age, occupation or group the masking removed in lower case is no capitalised
word ("night" is not the "Night" of "Saturday Night Alive"), and a number word never reads as a name. Such
a value names someone only by where
it stands, and where the same words stand as ordinary words they name no one.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Iterator, Sequence

from veil.mask.propagation import WHOLE_LABELS
from veil.shapes import DIGIT_WORDS
from veil.mask.value_words import RARE_ZIPF, kept_words, number_words, rare_word  # noqa: F401 (RARE_ZIPF: verify's)

_TOKEN_RE = re.compile(r"[^\W_]+")
#: words that follow the pronoun "I" ("T, I mean"): an "I" before one is the pronoun, never a spelled letter
PRONOUN_VERBS = frozenset("""mean meant think thought guess know knew was am have had would will could can
 said say do did don didn just really believe suppose see saw want like got get go went wish hope feel""".split())
#: what follows the apostrophe of a contraction ("don't", "she's", "we'll")
_CONTRACTION_TAILS = frozenset({"t", "s", "d", "ll", "re", "ve", "m"})
#: a spoken digit, read as the digit ("oh" as zero: "five five five oh one")
DIGIT_WORD = {w: str(i) for i, w in enumerate(DIGIT_WORDS)} | {"oh": "0"}

#: letters of other scripts drawn like a Latin letter (Unicode TR39 confusables, the single-letter
#: Cyrillic and Greek ones), and Latin letters NFKD does not take apart ("ø", "ł")
LOOKALIKES = str.maketrans({
    **dict(zip("АВЕКМНОРСТХУЅІЈԚԜ", "ABEKMHOPCTXYSIJQW")),
    **dict(zip("аеорсухѕіјԁһӏԛԝ", "aeopcyxsijdhlqw")),
    **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "ABEZHIKMNOPTYX")),
    **dict(zip("οιρνυκ", "oipvuk")),
    "ø": "o", "Ø": "O", "ł": "l", "Ł": "L", "đ": "d", "Đ": "D", "ħ": "h", "ı": "i",
    "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "þ": "th", "Þ": "TH",
})

#: types whose every word is identifying alone (a first or last name)
NAME_LABELS = frozenset({"PERSON_NAME", "PERSON", "PER"})
#: how many of wordfreq's most frequent words are everyday words (the detectors' ordinary-English test)
EVERYDAY_TOP = 10000
#: words after which an everyday word is a name in uncased text ("name is mark", "thanks hope", "mr grant")
NAMING_CUES = frozenset("""mr mrs ms miss mister dr doctor sir madam named called name's this is i'm im am it's
 thanks thank you hi hello hey dear bye goodbye""".split())
_EMAIL_RE = re.compile(r"\s*([^@\s]+)@[^@\s]+\.[^\W\d_]{2,}\s*")


@lru_cache(maxsize=65536)
def _fold_char(c: str) -> str:
    """One non-ASCII character in the normal form (see the module docstring)."""
    d = unicodedata.decimal(c, None)
    if d is not None:
        return str(d)
    c = c.translate(LOOKALIKES)
    s = "".join(x for x in unicodedata.normalize("NFKD", c)
                if not unicodedata.combining(x) and unicodedata.category(x) != "Cf")
    return s.casefold().translate(LOOKALIKES)


def fold(text: str) -> tuple[str, list[int] | None]:
    """(the text in the normal form, the original offset of each of its characters; None: the same)."""
    if text.isascii():
        return text.lower(), None
    parts: list[str] = []
    pos: list[int] = []
    for i, c in enumerate(text):
        s = c.lower() if c.isascii() else _fold_char(c)
        parts.append(s)
        pos.extend([i] * len(s))
    return "".join(parts), pos


def norm_tokens(text: str) -> list[str]:
    """The normal-form tokens of ``text``, spoken digits as digits."""
    return [DIGIT_WORD.get(t, t) for t in _TOKEN_RE.findall(fold(text)[0])]


def canonical(text: str) -> str:
    """The text's normal-form tokens joined: two texts that are one value have one canonical form."""
    return "".join(norm_tokens(text))


class TextIndex:
    """A text's normal-form tokens (``norm``) and their offsets in the text (``tokens``)."""

    def __init__(self, text: str) -> None:
        self.text = text
        folded, pos = fold(text)
        self.tokens: list[tuple[int, int]] = []
        self.norm: list[str] = []
        self.spoken: list[bool] = []  # the token was a digit word
        self.words: list[str] = []  # the tokens before digit words are read as digits
        self.tail: list[bool] = []  # the token ends a contraction ("t" of "don't"): no value starts there
        self.head: list[bool] = []  # a letter that begins a contraction ("I" of "I'm"): a word, never spelled
        for m in _TOKEN_RE.finditer(folded):
            s, e = m.span()
            self.tokens.append((s, e) if pos is None else (pos[s], pos[e - 1] + 1))
            a = self.tokens[-1][0]
            self.tail.append(m.group().lower() in _CONTRACTION_TAILS and a >= 2 and text[a - 1] in "'’"
                             and text[a - 2].isalnum())
            if self.tail[-1] and self.words and len(self.words[-1]) == 1:
                self.head[-1] = True  # a letter before a contraction's tail: "I" of "I'm"
            d = DIGIT_WORD.get(m.group())
            self.norm.append(d or m.group())
            self.spoken.append(d is not None)
            self.words.append(m.group())
            self.head.append(False)
        for k, (s, e) in enumerate(self.tokens[:-1]):  # a letter that is a word: "I mean", "a T M"
            if e - s == 1 and (text[s] == "I" and self.words[k + 1] in PRONOUN_VERBS
                               or text[s] == "a" and self.tokens[k + 1][1] - self.tokens[k + 1][0] == 1
                               and text[self.tokens[k + 1][0]].isupper()):
                self.head[k] = True

    @property
    def joined(self) -> str:
        return "".join(self.norm)


def value_keys(value: str, label: str = "") -> list[tuple[str, str]]:
    """``(key, kind)`` pairs a value is looked for as: ``text``, ``spoken``, ``part`` (module docstring)."""
    words = norm_tokens(value)
    plain = "".join(words)
    keys = [(plain, "text")]
    if any(c.isdigit() or not (c.isalnum() or c.isspace()) for c in value):
        from veil.textforms import transform

        spoken = canonical(transform(value, [], "asr")[0])
        if spoken and spoken != plain:
            keys.append((spoken, "spoken"))
    user = _email_user(value, label)
    if user is not None:  # the user part identifies; the provider ("gmail", "yahoo") is shared by millions
        cands = (["".join(user)] if len(user) > 1 else []) + user
    elif len(words) > 1 and label not in WHOLE_LABELS:
        cands = words  # never a word of an occupation, a group, an age or a date alone ("disgruntled")
    else:
        cands = []
    kept = kept_words(label, value)
    for w in cands:
        if len(w) < 3 or w.isdigit() or w in kept or any(w == k for k, _ in keys):
            continue
        if user is not None or label in NAME_LABELS or rare_word(w, kept):
            keys.append((w, "part"))
    return keys


def _email_user(value: str, label: str) -> list[str] | None:
    """The tokens of an e-mail address's user part, written ("maria.lopez@gmail.com") or said ("maria dot
    lopez at gmail dot com"); None for any other value."""
    m = _EMAIL_RE.fullmatch(value)
    if m:
        return norm_tokens(m.group(1))
    if "EMAIL" in label.upper():
        said = re.split(r"\s+at\s+", value.strip(), flags=re.IGNORECASE)
        if len(said) > 1:
            return [t for t in norm_tokens(" ".join(said[:-1])) if t not in _SAID_SYMBOLS]
    return None


_SAID_SYMBOLS = frozenset({"dot", "underscore", "dash", "hyphen", "period"})


def everyday(word: str) -> bool:
    """An everyday English word (wordfreq's :data:`EVERYDAY_TOP`, as the detectors count them, plural too;
    a number word)."""
    from veil.mask.allow_list import common_words

    if not word.isalpha():
        return False
    common = common_words(EVERYDAY_TOP)
    return (word in common or word[:-1] in common and word.endswith("s") or word[:-2] in common
            and word.endswith("es") or word in number_words())


def is_cased(texts: Iterable[str]) -> bool:
    """Whether the texts are written in mixed case: some word inside a sentence starts with a capital."""
    for text in texts:
        for m in _TOKEN_RE.finditer(text):
            w = m.group()
            if w[0].isupper() and w not in ("I", "O") and not _sentence_start(text, m.start()):
                return True
    return False


def _sentence_start(text: str, start: int) -> bool:
    before = text[:start].rstrip(" \t\"'“‘(")
    return not before or before[-1] in ".!?\n:;"


def everyday_phrase(idx: TextIndex, a: int, b: int) -> bool:
    """Whether tokens ``a..b`` are everyday words only ("mark", "ski resorts", "five or six"), not spelled
    letters and not a number of three digits or more (a phone said digit by digit is no everyday phrase)."""
    if b > a and all(e - s == 1 for s, e in idx.tokens[a:b + 1]):
        return False
    digits = sum(len(t) for t in idx.norm[a:b + 1] if t.isdigit())
    return digits < 3 and all(everyday(w) or w.isdigit() and len(w) < 3 for w in idx.words[a:b + 1])


def reads_as_name(idx: TextIndex, i: int, cased: bool) -> bool:
    """Whether the single token ``i`` reads as a name there (see the module docstring); a number word never
    does ("the Fifth Special Forces Group" holds no date "fifth")."""
    s, _ = idx.tokens[i]
    if idx.words[i] in number_words():
        return False
    if cased:
        return idx.text[s].isupper() and not _sentence_start(idx.text, s)
    return i > 0 and idx.norm[i - 1] in NAMING_CUES


@dataclass(frozen=True, slots=True)
class Removed:
    """One value the masking removed, and the keys it is looked for as."""

    label: str
    value: str
    keys: tuple[tuple[str, str], ...]


def removed(values: Iterable[tuple[str, str]], min_chars: int = 2) -> tuple[list[Removed], int]:
    """``(label, value)`` pairs -> (the values to look for, one per normal form; number skipped)."""
    out: dict[str, Removed] = {}
    skipped = 0
    for label, value in values:
        plain = canonical(value)
        # as written ("two" has three) and as read ("two" is "2"): a value a digit long is in every number
        if min(sum(len(t) for t in _TOKEN_RE.findall(fold(value)[0])), len(plain)) < min_chars:
            skipped += 1
            continue
        if plain not in out:
            out[plain] = Removed(label, value, tuple(value_keys(value, label)))
    return list(out.values()), skipped


class Matcher:
    """Every key of a set of values, with every prefix of every key, for :meth:`scan`."""

    def __init__(self, values: Sequence[Removed]) -> None:
        self.values = values
        self.keys: dict[str, list[tuple[Removed, str]]] = {}
        self.prefixes: set[str] = set()
        for v in values:
            for key, kind in v.keys:
                if not key:
                    continue
                self.keys.setdefault(key, []).append((v, kind))
                self.prefixes.update(key[:n] for n in range(1, len(key)))
        kind_order = {"text": 0, "spoken": 1, "part": 2}  # a whole match over a part of another value
        for entries in self.keys.values():
            entries.sort(key=lambda e: kind_order[e[1]])

    def scan(self, idx: TextIndex) -> Iterator[tuple[int, int, list[tuple[Removed, str]]]]:
        """(first token, last token, the values and kinds) of every key matched at token boundaries."""
        norm, keys, prefixes = idx.norm, self.keys, self.prefixes
        n = len(norm)
        for i in range(n):
            if idx.tail[i]:
                continue  # "don't, I think" is no "T I"
            acc, j = norm[i], i
            while True:
                hit = keys.get(acc)
                if hit:
                    yield i, j, hit
                if j + 1 == n or acc not in prefixes or idx.head[j] or idx.head[j + 1]:
                    break  # "the G T, I'm sorry": the "I" of "I'm" is a word, no spelled letter of "T I"
                j += 1
                acc += norm[j]
