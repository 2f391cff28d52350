"""Detect and mask stage: DLP detectors for personal data as a transcript speaks it (spelled names, spoken e-mails and addresses).

Speech-recognition text has no capitals, digits or "@" to go by, so these read the words:

- :class:`SpelledNameDetector`: a name spelled out in any common form, with the word it spells
  when that stands beside it: "s m i t h", "s-m-i-t-h", "S. M. I. T. H.", "S as in Sam, M as in
  Mary", "m i double l e r", "smith that's s m i t h";
- :class:`SpokenEmailDetector`: "john dot smith at gmail dot com", "m-a-r-i-a dot gonzalez at
  yahoo dot co dot uk", "john smith eighty four at aol dot com" (the user name may be said
  as words, letters or digits);
- :class:`SpokenAddressDetector`: "twenty two baker street", "four twenty first boulevard",
  "one two three main st apartment four b".

Numbers said digit by digit or in groups ("five five five twelve thirty four", "double five",
"oh") are the number detector's (``numbers.NumberDetector``).
"""

from __future__ import annotations

import re
from typing import Iterator

from veil.mask.detectors.base import Detector
from veil.mask.detectors.numbers import _NUMBER_WORDS
from veil.types import Span

_LETTER = r"[^\W\d_]"
# one spelled letter: "s", "S.", "s as in sam", "double l"
_SPELL_ITEM = (r"(?:double\s+" + _LETTER + r"(?![\w'’])|" + _LETTER + r"(?:\s+(?:as|like)\s+in\s+[\w'’-]+|\s+for\s+[\w'’-]+)?\.?(?![\w'’]))")
_SPELL_SEP = r"(?:\s*[-,.]\s*|\s+(?:and\s+|then\s+)?)"
_SPELL_RE = re.compile(r"(?<![\w'’-])" + _SPELL_ITEM + r"(?:" + _SPELL_SEP + _SPELL_ITEM + r")+", re.IGNORECASE)
# one letter standing alone: the "a" of "and" between two spelled letters ("i and i") is no letter
_ITEM_RE = re.compile(r"(?<![\w'’])(double\s+)?(" + _LETTER + r")(?![\w'’])"
                      r"(?:\s+(?:as|like)\s+in\s+([\w'’-]+)|\s+for\s+([\w'’-]+))?\.?", re.IGNORECASE)
_UNDERSCORED_RE = re.compile(r"(?<![\w'’-])" + _LETTER + r"(?:_" + _LETTER + r"){2,}(?![\w'’-])")
# letter runs that are everyday acronyms, not spellings of a name
ACRONYMS = frozenset("""usa uk fbi cia atm dvd cnn nba nfl abc nbc cbs ibm ups irs ceo tv pc ok aka asap diy faq
 phd vcr cpa mba mfa bbc fda epa nasa aids hiv ira iras rv suv gmc bmw cd cds abs ac dc nyc cpr gpa ged rn emt ssn
 vip pta ymca aarp eds nfc afc mtv espn hbo pbs npr rca jfk""".split())
# words that may sit between a name and its spelling ("smith that's s m i t h")
#: talk of spelling: letters said one by one there spell a name ("it's spelled K I M")
SPELL_CUE = re.compile(r"\bspel(?:l|ls|led|lt|ling)\b|\bletters?\b|\binitials?\b", re.IGNORECASE)
_BRIDGE = frozenset("that's thats that is it's its spelled spelt spelling like as uh um er yes yeah so".split())
_WORD_RE = re.compile(r"[\w'’-]+")


def _letters(run: str) -> tuple[str, int]:
    """(the letters a run spells, where the run ends): "b for bravo" needs a word starting with b,
    so "s for the next" ends the run before "for"."""
    out = []
    end = 0
    for m in _ITEM_RE.finditer(run):
        letter = m.group(2).lower()
        word = m.group(4)
        if word is not None and not word.lower().startswith(letter):
            out.append(letter)
            end = m.start(2) + 1
            break
        out.append(letter * (2 if m.group(1) else 1))
        end = m.end()
    return "".join(out), end


class SpelledNameDetector(Detector):
    """Three or more letters said one by one (two with "as in"), and the word they spell beside them; three
    letters that spell nothing beside them, where nobody talks of spelling, are an acronym (an organisation).

    Runs made only of "a" and "i" ("i a i") are not taken: those are words, not spellings.
    """

    label = "PERSON_NAME"

    def find(self, text: str, source: str) -> Iterator[Span]:
        for m in _SPELL_RE.finditer(text):
            letters, cut = _letters(m.group())
            run = m.group()[:cut]
            pronoun = re.search(r",\s*[Ii]$", run)
            if pronoun and re.match(r"\s+(?:think|mean|guess|know|don't|do|did|was|am|have|had|can|could|will|would|"
                                    r"just|said|say|thought|really|never|also)\b" if run[-1] == "i" else r"\s+[a-z]",
                                    text[m.start() + cut:]):
                # "T V, I did not": the last "I" says who, it spells nothing
                cut, run, letters = pronoun.start(), run[:pronoun.start()], letters[:-1]
            explicit = " as in " in run.lower() or " like in " in run.lower() or " for " in run.lower()
            start, end = m.start(), m.start() + cut
            # "a C N N", "I R A s": an acronym after the article or the pronoun, maybe plural
            bare = letters[1:] if letters[:1] in ("a", "i") and re.match(r"[aAiI]\s", run) else letters
            if len(letters) < (2 if explicit else 3) or set(letters) <= {"a", "i"} or \
                    {letters, bare, letters[:-1] if letters.endswith("s") else letters,
                     bare[:-1] if bare.endswith("s") else bare} & ACRONYMS:
                continue
            if text[end - 1] == "." and not re.search(r"\.\s*" + _LETTER + r"\.$", run):
                end -= 1  # a sentence's full stop after plain letters
            if re.match(r"[ai]\s+[A-Z](?![\w'’])", run) and run[2:].strip().isupper():
                start += 2  # "a V W Rabbit": the article before capitals is a word of its own
            bounds = (start, end)
            start, end = self._with_spelled_word(text, start, end, letters)
            # three letters that spell no word beside them, with no talk of spelling, are an acronym ("S A E",
            # "A T I"): a company or a standard; a name of three letters is spelled as one ("Bob, B O B")
            acronym = len(letters) <= 3 and not explicit and (start, end) == bounds and not SPELL_CUE.search(text)
            yield Span(start, end, "ORGANIZATION_NAME" if acronym else self.label, source, 0.85)
        for m in _UNDERSCORED_RE.finditer(text):  # "S_M_I_T_H": letters joined by underscores, as in an identifier
            letters = m.group().replace("_", "").lower()
            if letters not in ACRONYMS and not set(letters) <= {"a", "i"}:
                yield Span(m.start(), m.end(), self.label, source, 0.85)

    @staticmethod
    def _with_spelled_word(text: str, start: int, end: int, letters: str) -> tuple[int, int]:
        """Widen to the word the letters spell when it stands within a few bridging words."""
        before = list(_WORD_RE.finditer(text, max(0, start - 60), start))
        for w in reversed(before[-4:]):
            word = w.group().lower().strip("'’-")
            if word.replace("-", "") == letters:
                start = w.start()
                break
            if word not in _BRIDGE:
                break
        after = _WORD_RE.finditer(text, end, min(len(text), end + 60))
        for k, w in enumerate(after):
            word = w.group().lower().strip("'’-")
            if word.replace("-", "") == letters:
                end = w.end()
                break
            if word not in _BRIDGE or k >= 3:
                break
        return start, end


_TLD = r"(?:com|net|org|edu|gov|mil|io|info|biz|co(?:\s+dot\s+uk)?|us|uk|ca|de|fr|nl|eu|au|in|me|tv|ai|app|dev)"
_USER_STOP = frozenset("""is it's its was email e-mail mail address my me the at to and or send it uh um er yeah yes
sure ok okay so that's thats your his her their our be can could you i please reach contact write on under
account name called""".split())
_SPOKEN_EMAIL_RE = re.compile(r"(?<![\w'’-])(?P<domain_start>at)\s+[\w-]+(?:\s+(?:dot|dash|hyphen)\s+[\w-]+)*"
                              r"\s+dot\s+" + _TLD + r"\b", re.IGNORECASE)


class SpokenEmailDetector(Detector):
    """An e-mail address read out: "<user> at <domain> dot <tld>".

    The user part is taken back to the first word that cannot belong to it ("my email is ...");
    it may be words, spelled letters ("m-a-r-i-a"), digit words and "dot" / "underscore" / "dash".
    """

    label = "EMAIL_ADDRESS"
    max_user_words = 8

    def find(self, text: str, source: str) -> Iterator[Span]:
        low = text.lower()
        if " at " not in low or " dot " not in low:
            return
        for m in _SPOKEN_EMAIL_RE.finditer(text):
            at = m.start()
            words = list(_WORD_RE.finditer(text, max(0, at - 120), at))
            start = at
            taken = 0
            for w in reversed(words):
                if "\n" in text[w.end():start]:
                    break
                word = w.group().lower()
                if word in _USER_STOP or taken >= self.max_user_words:
                    break
                start, taken = w.start(), taken + 1
            if taken:
                yield Span(start, m.end(), self.label, source, 0.9)


_NUM_WORD = r"(?:\d+[a-z]?|" + "|".join(sorted((w for w in _NUMBER_WORDS if w not in ("double", "triple")),
                                               key=len, reverse=True)) + r"|hundred|thousand|double|triple)"
_ORDINAL_WORD = (r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
                 r"\w+teenth|\w+tieth|\d+(?:st|nd|rd|th))")
_SUFFIX = (r"(?:street|st|avenue|ave|road|rd|boulevard|blvd|lane|ln|drive|dr|court|ct|place|pl|square|sq|way|"
           r"terrace|parkway|pkwy|highway|hwy|circle|cir|trail|alley|plaza|crescent|close|grove|row|walk)")
_UNIT = r"(?:apartment|apt|suite|unit|room|floor|number)"
_STREET_NAME_STOP = frozenset("""the a an and or of in on at to for is was my our your his her their this that it
i we you he she they live lives living moved from near by with minute minutes hour hours mile miles block blocks foot
feet hundred thousand certain other same long right wrong different only whole day days year years week weeks
square inch inches yard yards""".split())
_ADDRESS_RE = re.compile(
    r"(?<![\w'’-])(?P<num>" + _NUM_WORD + r"(?:[\s-]+(?:and\s+)?" + _NUM_WORD + r"){0,5})\s+"
    r"(?P<name>(?:" + _ORDINAL_WORD + r"|[^\W\d_][\w'’-]*)(?:\s+[^\W\d_][\w'’-]*){0,2})\s+" + _SUFFIX + r"\b\.?"
    r"(?P<unit>\s+" + _UNIT + r"\s+(?:" + _NUM_WORD + r"|[a-z]\b)(?:\s+(?:" + _NUM_WORD + r"|[a-z]\b)){0,3})?",
    re.IGNORECASE)


class SpokenAddressDetector(Detector):
    """A street address said aloud: house number (digits or number words), street name, street type.

    "twenty two baker street", "one two three main st apartment four b", "4 twenty first boulevard".
    Case-blind, unlike the written-address pattern of ``numbers.StreetAddressDetector``.
    """

    label = "STREET_ADDRESS"

    def find(self, text: str, source: str) -> Iterator[Span]:
        for m in _ADDRESS_RE.finditer(text):
            name_words = m.group("name").lower().split()
            if any(w in _STREET_NAME_STOP for w in name_words):
                continue  # "five of them walk" is no address
            end = m.end()
            if text[end - 1] == "." and not re.search(r"\b(?:st|ave|rd|blvd|ln|dr|ct|pl|sq|pkwy|hwy|cir)\.$",
                                                      m.group(), re.IGNORECASE):
                end -= 1
            yield Span(m.start(), end, self.label, source, 0.8)
