"""Detect and mask stage: DLP detectors for quasi-identifiers people say about themselves on the phone.

Ages, dates of life events, occupations, health and nationality / religion narrow down who a speaker
is ("my daughter's a nurse", "he's ninety", "we moved here a couple of years ago", "she had
chicken pox"). Said in passing they are everywhere in call transcripts; said about nobody ("nurses
are underpaid", "two years is a long time") they are not personal. These detectors read the words
around a term, case-insensitively, so they work alike on written, lower-cased and speech-recognised
text (numbers as words: "twenty-five years old", "in her mid eighties"):

- :class:`SpokenAgeDetector` (AGE): "a three year old", "five and a half years old", "he's ninety",
  "one is twenty-one", "in their seventies", "ten years older than me";
- :class:`LifeEventDateDetector` (DATE): "a few months ago", "last year", "this past summer", "next
  week", "on Sunday", "bought one in eighty-nine", "from seventy-six to eighty";
- :class:`OccupationDetector` (OCCUPATION): a job title after "I'm a", "she's a", "who's an", "works
  as a" ("school teacher", "quality manager"), a field after "I'm in", "worked in" ("construction",
  "public relations", "the retail milk business"); lexicons in ``veil/data/quasi``;
- :class:`HealthDetector` (DEMOGRAPHIC): a condition someone has, had, suffers from, is treated for
  or died of ("asthma", "chicken pox", "Alzheimer's disease", "a dialysis patient");
- :class:`NationalityDetector` (DEMOGRAPHIC): a nationality, ethnicity or religion said of a person
  ("she's Catholic", "I'm half Italian", "Spanish people", "a Mexican family");
- :class:`ServiceDetector` (ORGANIZATION_NAME): the armed service someone is in or served in ("my husband
  was in the Air Force");
- :class:`SpokenPriceDetector` (MONEY): a price in hundreds without its currency ("I sold it for
  forty-two hundred").
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterator

from veil.gazetteer import field_terms, group_terms, health_terms, occupation_terms  # noqa: F401
from veil.gazetteer import plural_keys as _plural  # noqa: F401  (read by the neural tagger's rules)
from veil.gazetteer import term_key as _key  # noqa: F401
from veil.mask.detectors.base import PatternDetector
from veil.mask.detectors.lexicon import LexiconDetector
from veil.types import Span


_UNITS = "one two three four five six seven eight nine".split()
_TEENS = "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
# a number a person's age can be: 1-110 in digits or words ("twenty-five", "twenty five", "a hundred and two")
_NUM = (r"(?:\d{1,3}|(?:" + "|".join(_TENS) + r")(?:[\s-](?:" + "|".join(_UNITS) + r"))?|"
        + "|".join(_TEENS + _UNITS) + r"|(?:a|one)\s+hundred(?:\s+and\s+(?:" + "|".join(_TEENS + _UNITS) + r"))?)")
_NUMS = _NUM + r"(?:\s+and\s+a\s+half)?(?:\s+(?:or|to)\s+" + _NUM + r")?"
#: the decades of a life ("in her late sixties"); `veil verify` reads them as number words
DECADES = ("twenties", "thirties", "forties", "fifties", "sixties", "seventies", "eighties", "nineties", "teens")
_DECADE = r"(?:" + "|".join(DECADES) + r")"
# fillers that may stand anywhere in speech ("he's, uh, ninety")
_FILL = r"(?:(?:,?\s+(?:uh|um|er|ah|oh|you\s+know|like|well|i\s+think|i\s+guess))*,?)"
# who can have an age: pronouns and the people one talks about
_PERSON = (r"(?:i|he|she|you|they|we|one|who|other|son|daughter|boy|girl|kid|baby|brother|sister|mother|father|"
           r"mom|mum|dad|husband|wife|grandmother|grandfather|grandma|grandpa|granddaughter|grandson|aunt|uncle|"
           r"niece|nephew|cousin|friend|neighbor|neighbour|oldest|youngest|eldest|middle\s+one|little\s+one)")
_BE = r"(?:'s|’s|'m|’m|'re|’re|\s+is|\s+am|\s+are|\s+was|\s+were|\s+turned|\s+turns|\s+turning|\s+will\s+be|'ll\s+be)"
_HEDGE = r"(?:(?:only|just|about|almost|nearly|over|under|probably|maybe|right\s+on|like|around|barely|now|still|already)\s+)*"
# what may follow an age said alone ("she's five," "he's ninety now"); never a unit ("he's five feet")
_AGE_END = (r"(?=\s*[,.?!;:]|\s*$|\s+(?:and|or|now|right|this|next|in|when|but|so|then|i|you|he|she|they|we|"
            r"already|yet|too|last|going|though|uh|um|and\s+a\s+half)\b)")


class SpokenAgeDetector(PatternDetector):
    """Ages of people, as said: "three year old", "five and a half years old", "he's ninety", "in her mid eighties"."""

    label = "AGE"
    FLAGS = re.IGNORECASE
    MERGE_OVERLAPS = True  # one span per stretch several patterns found
    PATTERNS = tuple((p, 0.75) for p in (
        # "a three year old", "twenty-five years old", "nine months old", "five and a half years old"
        r"(?<![\w-])(?P<hit>(?:a\s+couple\s+(?:of\s+)?|a\s+few\s+)?" + _NUMS +
        r"[\s-]+(?:years?|yrs?|months?|weeks?)[\s-]+olds?)\b",
        # "in her mid eighties", "in their seventies", "early twenties"
        r"\b(?:in\s+)?(?:his|her|their|my|your|our)\s+(?P<hit>(?:(?:early|mid|middle|late)[\s-]+)?" + _DECADE + r")\b",
        # "ten years older than me", "a couple years younger"
        r"(?<![\w-])(?P<hit>(?:a\s+couple\s+(?:of\s+)?|a\s+few\s+|" + _NUMS + r"\s+)(?:years?|months?)\s+(?:older|younger))\b",
        # "he's ninety", "she's only five", "one is twenty-one", "they're five and three and nineteen months"
        r"\b" + _PERSON + _BE + _FILL + r"\s+" + _HEDGE + r"(?P<hit>" + _NUMS +
        r"(?:\s+(?:years?|months?)(?:\s+old)?)?(?:(?:,\s*|\s+)(?:and\s+)?" + _NUMS + r"(?:\s+(?:years?|months?)"
        r"(?:\s+old)?)?)*)" + _AGE_END,
        # "two boys, twelve and sixteen", "the kids are seven and nine"
        r"\b(?:boys|girls|kids|children|sons|daughters|grandchildren|grandkids|ones)(?:,|\s+are|\s+who\s+are|\s+aged)?"
        r"\s+(?P<hit>" + _NUM + r"(?:(?:,\s*|\s+)(?:and\s+)?" + _NUM + r")+)\b",
        # "age of forty", "aged seven", "at age sixty-five", "turned fifty", "his age is 49"
        r"\b(?:aged?|age\s+of|ages\s+of|(?:his|her|my|their|your)\s+age\s+(?:is|was|being))\s+(?P<hit>" + _NUMS +
        r")\b(?!\s*(?:%|percent|dollars?|cents?|miles?|feet|foot))",
    ))

    #: an age said of a thing, not a person ("it was nine years old", "the house is thirty years old")
    _THING = re.compile(r"\b(?:it|it's|its|that's|car|cars|house|home|truck|building|cat|dog|puppy|kitten|horse|van)\b"
                        r"(?: [\w']+){0,5} $")
    #: an age before a thing is the thing's ("a four year old Subaru", "a two year old car")
    _THING_AFTER = re.compile(r"\s+(?:[A-Z][a-z]+|car|cars|truck|van|house|home|dog|cat|puppy|kitten|horse|computer|"
                              r"model|tires|building|bike|boat|tv|television|refrigerator|roof)\b")

    #: a cheap test first: most utterances hold no number at all
    _MAY = re.compile(r"\d|\b(?:" + "|".join(_UNITS + _TEENS + _TENS) + r"|" + _DECADE + r"|couple|few)", re.IGNORECASE)

    def may_match(self, text: str) -> bool:
        return self._MAY.search(text) is not None

    def fits(self, text: str, start: int, end: int, pattern: int) -> bool:
        # "N years old" of a thing is no one's age
        return pattern != 0 or not (self._THING.search(_before(text, start)) or self._THING_AFTER.match(text, end))


_DAYS = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_SEASONS = r"(?:summer|winter|spring|fall|autumn|christmas|thanksgiving|easter|semester|weekend)"
_MONTHS = (r"(?:january|february|march|april|may|june|july|august|september|october|november|december)")
_PERIOD = r"(?:days?|weeks?|weekends?|months?|years?|decades?|" + "mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays)"
_YEAR2 = r"(?:(?:" + "|".join(_TENS[3:]) + r")(?:[\s-](?:" + "|".join(_UNITS) + r"))?)"  # fifty .. ninety-nine
_YEAR4 = r"(?:(?:nineteen|twenty)\s+" + _YEAR2 + r"|(?:19|20)\d\d)"


class LifeEventDateDetector(PatternDetector):
    """When something happened in a speaker's life: "a few months ago", "last year", "this past summer", "in eighty-nine"."""

    label = "DATE"
    FLAGS = re.IGNORECASE
    MERGE_OVERLAPS = True
    PATTERNS = tuple((p, 0.7) for p in (
        # "a couple of years ago", "[about] ten months ago", "Christmas a year ago", "two and a half years ago",
        # "a year or two ago": the hedge ("about", "just") is no part of the date
        r"\b(?:(?:about|almost|nearly|over|just|only|maybe|probably|some)\s+)?(?P<hit>(?:" + _SEASONS + r"\s+)?"
        r"(?:a|an|one|a\s+few|a\s+couple(?:\s+of)?|several|many|" + _NUM + r")(?:\s+and\s+a\s+half)?\s+"
        + _PERIOD + r"(?:\s+and\s+a\s+half|\s+or\s+(?:two|three|so))?\s+ago)\b",
        # "last year", "next week", "this past summer", "this last weekend", "last night"
        r"\b(?P<hit>(?:last|next|this\s+past|this\s+coming|this\s+last|the\s+past)\s+(?:" + _SEASONS + r"|week|month|"
        r"year|night|" + _DAYS + r"|" + _MONTHS + r"))\b",
        # "on Sunday", "last Friday"
        r"\b(?:on|this|last|next|since|until|by)\s+(?P<hit>" + _DAYS + r")\b",
        # "in August", "since early March" (a month in any case: speech recognition writes "in august")
        r"\b(?:in|since|until|by|last|next|this)\s+(?P<hit>(?:early\s+|late\s+|mid\s+)?(?:january|february|march|april|"
        r"june|july|august|september|october|november|december))\b",
        # "in a couple of weeks", "in a few months": what is coming ("I get married in a couple of weeks")
        r"\bin\s+(?P<hit>(?:a\s+couple(?:\s+of)?|a\s+few|" + _NUM + r")\s+(?:weeks|months))\b",
        # a year of one's life, two-digit as people say it: "bought one in eighty-nine", "in ninety."
        r"\b(?:in|since|until|from|of|back\s+in)\s+(?P<hit>(?:" + _YEAR4 + r"|" + _YEAR2 + r")"
        r"(?:(?:\s*,\s*|\s+)(?:and\s+|or\s+)?(?:" + _YEAR4 + r"|" + _YEAR2 + r"))*"
        r"(?:\s+(?:to|through|till|until)\s+(?:" + _YEAR4 + r"|" + _YEAR2 + r"))?)(?=\s*[,.?!;]|\s*$|\s+(?:and|when|to|or|i|we|he|she|they)\b)",
        # "from seventy-six to eighty"
        r"\bfrom\s+(?P<hit>(?:" + _YEAR4 + r"|" + _YEAR2 + r")\s+(?:to|till|until)\s+(?:" + _YEAR4 + r"|" + _YEAR2 + r"))\b",
    ))

    _MAY = re.compile(r"\b(?:ago|last|next|past|weeks|months|" + _DAYS + r"|" + _MONTHS + r"|nineteen|twenty|fifty|"
                      r"sixty|seventy|eighty|ninety)|\b(?:19|20)\d\d\b", re.IGNORECASE)

    def may_match(self, text: str) -> bool:
        return self._MAY.search(text) is not None


# --- lexicon detectors (veil.mask.detectors.lexicon; the lists live in veil.gazetteer) ---------------------

def _before(text: str, start: int, chars: int = 60) -> str:
    """The lower-cased text before ``start`` (fillers and commas squeezed out) to test a context pattern on."""
    left = text[max(0, start - chars):start].lower().replace("’", "'")
    left = re.sub(r"\b(?:uh|um|er|ah|you know|i mean|well|like)\b", " ", left)
    return re.sub(r"[\s,]+", " ", left)


_COPULA = (r"(?:i'm|i am|i was|i've been|i'd been|he's|she's|he is|she is|he was|she was|he's been|she's been|"
           r"who's|who is|who was|is|was|'s|are|were|we're|they're|be|been|become|became|becoming|being|"
           r"work as|works as|worked as|working as|job as|career as|trained as|employed as|hired as|post of|"
           r"position of|post as|position as)")
# words that may stand between "a" and a job title without being part of it
_MODIFIERS = frozenset("""full part time good great little big old new young very real really pretty former retired
 professional successful busy lousy terrible wonderful nice fine excellent bad""".split())


class OccupationDetector(LexiconDetector):
    """A job title said of someone ("I'm a nurse", "my sister's a principal") or a field one works in ("I'm in construction")."""

    label = "OCCUPATION"
    MAX_WORDS = 4
    _A_TITLE = re.compile(r"\b" + _COPULA + r"(?: (?:still|now|also|just|really|actually|currently|basically|"
                          r"always|only|both|all|once|then|originally))? (?:a|an|the)(?: \w+){0,2} $")
    # plural titles need no article ("a lot of us are engineers", "they're both nurses")
    _PLURAL_TITLE = re.compile(r"\b(?:are|were|we're|they're|both|all|as)(?: (?:both|all|still|now))? (?:\w+ )?$")
    # someone one works for ("I baby-sat for a dentist", "she cleans for a lawyer")
    _FOR_A = re.compile(r"\b(?:for|with) (?:a|an|the|my|our|his|her)(?: \w+)? $")
    _IN_FIELD = re.compile(r"\b(?:i'm|i am|i was|he's|she's|he is|she is|he was|she was|we're|we were|i've been|\w+'s|"
                           r"he's been|she's been|work|works|worked|working|job|jobs|career|been|back)"
                           r"(?: (?:in|into|at))?(?: the)? $")
    _FIELD_PHRASE = re.compile(r"\b(?:i'm|i am|i was|he's|she's|he is|she is|he was|she was|we're|we were|i've been|"
                               r"work|works|worked|working)(?:,? uh)? in the(?P<hit>(?: [a-z]+){1,3} (?:business|industry|field))\b",
                               re.IGNORECASE)
    _TEACH = re.compile(r"\b(?:i|he|she|i'm|i am|he's|she's|am back|back to|still)(?P<hit> (?:substitute[ -])?teach(?:ing|es)?)\b",
                        re.IGNORECASE)

    def terms(self) -> frozenset[tuple[str, ...]]:
        return occupation_terms() | field_terms()

    def accept(self, text: str, words: list[tuple[int, int, str]], i: int, j: int) -> tuple[int, int] | None:
        run = tuple(w for _, _, w in words[i:j])
        field = any(k in field_terms() for k in _plural(run))
        title = any(k in occupation_terms() for k in _plural(run))
        left = _before(text, words[i][0])
        plural = run not in occupation_terms()
        if title and (self._A_TITLE.search(left) or self._FOR_A.search(left) or
                      (plural and self._PLURAL_TITLE.search(left))):
            start = i
            # one modifier that belongs to the title ("quality manager", "licensed teacher")
            if i > 0 and words[i - 1][2] not in _MODIFIERS and words[i - 1][2] not in ("a", "an", "the") and \
                    re.search(r"\b(?:a|an|the) $", _before(text, words[i - 1][0])):
                start = i - 1
            return words[start][0], words[j - 1][1]
        if field and self._IN_FIELD.search(left):
            return words[i][0], words[j - 1][1]
        return None

    def find(self, text: str, source: str) -> Iterator[Span]:
        out = list(super().find(text, source))
        low = text.lower()
        for pattern, cue in ((self._FIELD_PHRASE, ("business", "industry", "field")), (self._TEACH, ("teach",))):
            if not any(c in low for c in cue):
                continue
            for m in pattern.finditer(text):
                s, e = m.span("hit")
                while s < e and text[s] == " ":
                    s += 1
                out.append(Span(s, e, self.label, source, self.SCORE))
        from veil.mask.placeholders import merge_spans

        yield from merge_spans(out)


class HealthDetector(LexiconDetector):
    """A health condition someone has, had, suffers from, is treated for or died of ("she had chicken pox")."""

    label = "DEMOGRAPHIC"
    _CONTEXT = re.compile(r"\b(?:has|had|have|having|got|gets|get|getting|contracted|caught|catch|develop|developed|"
                          r"diagnosed with|suffering from|suffers from|suffered from|died of|died from|dying of|"
                          r"recovering from|recovered from|treated for|treatment for|battling|fighting|on|to|for|"
                          r"from|with)(?: (?:a|an|the|some|bad|severe|progressive|chronic|terminal|advanced|early|"
                          r"mild|real|really|very|this|that|his|her|my|their|its|bad case of|case of|touch of|"
                          r"form of|kind of|type of|bout of|stage|of|onset)){0,3} $")

    def terms(self) -> frozenset[tuple[str, ...]]:
        return health_terms()

    def accept(self, text: str, words: list[tuple[int, int, str]], i: int, j: int) -> tuple[int, int] | None:
        end = words[j - 1][1]
        after = text[end:end + 12].lower()
        if re.match(r"\s+(?:patients?|victims?|sufferers?)\b", after):
            return words[i][0], end + len(re.match(r"\s+\w+", after).group())
        if self._CONTEXT.search(_before(text, words[i][0])):
            return words[i][0], end
        return None


class NationalityDetector(LexiconDetector):
    """A nationality, ethnicity or religion said of a person ("she's Catholic", "I'm half Italian", "Spanish people",
    "a [Turkish national]")."""

    label = "DEMOGRAPHIC"
    _SAID_OF = re.compile(r"\b(?:i'm|i am|i was|he's|she's|he is|she is|he was|she was|we're|we are|we were|they're|"
                          r"they are|they were|who's|who is|who are|who were|"
                          r"my|his|her|our|their)(?: (?:half|part|full|very|really|devout|practicing|"
                          r"practising|born|all|mostly|strict|good|young|old|little))? $")
    _PEOPLE = re.compile(r"\s+(?:people|person|family|families|friends?|wife|husband|girls?|guys?|man|men|woman|women|"
                         r"lady|ladies|descent|background|heritage|origin|ancestry|neighbors?|neighbours?|students?|"
                         r"kids?|boyfriend|girlfriend|immigrants?|grandparents?|parents?|mother|father|church|"
                         r"upbringing|community|couple|nationals?|citizens?)\b", re.IGNORECASE)

    def terms(self) -> frozenset[tuple[str, ...]]:
        return group_terms()

    _NATIONAL = re.compile(r"\s+(?:nationals?|citizens?)\b", re.IGNORECASE)

    def accept(self, text: str, words: list[tuple[int, int, str]], i: int, j: int) -> tuple[int, int] | None:
        end = words[j - 1][1]
        if m := self._NATIONAL.match(text, end):
            return words[i][0], m.end()  # "a Turkish national" names the person by the nationality: one span
        if self._PEOPLE.match(text, end) or self._SAID_OF.search(_before(text, words[i][0])):
            return words[i][0], end
        return None


# the armed services and the like: an employer when someone is in, joins or serves in them
_SERVICES = (r"(?:air\s+force|army|navy|marines|marine\s+corps|coast\s+guard|national\s+guard|peace\s+corps|"
             r"reserves?|air\s+national\s+guard|military)")


class ServiceDetector(PatternDetector):
    """The armed service (or Peace Corps) someone is in, joined, served in or works for: "my husband was in the Air Force"."""

    label = "ORGANIZATION_NAME"
    FLAGS = re.IGNORECASE
    PATTERNS = ((r"\b(?:in|into|joined|join|joining|for|with|from|left|served|serve|serving|out\s+of|"
                 r"retired\s+from|enlisted\s+in|at)\s+(?:the\s+)?(?:u\s*s\s+|us\s+)?(?P<hit>" + _SERVICES +
                 r")\b(?!\s+(?:base|surplus|boots|jacket|knife|style))", 0.7),)
    #: "military" is a service only after being in it ("he was in the military"), not in "for military history"
    _SERVED = re.compile(r"\b(?:was|were|am|is|i'm|he's|she's|been|joined|served)\b[^.]{0,20}$", re.IGNORECASE)

    def may_match(self, text: str) -> bool:
        low = text.lower()
        return any(w in low for w in ("force", "army", "navy", "marine", "guard", "corps", "reserve", "military"))

    def fits(self, text: str, start: int, end: int, pattern: int) -> bool:
        return text[start:end].lower() != "military" or self._SERVED.search(text[:start]) is not None


_HUNDREDS = (r"(?:(?:" + "|".join(_TENS) + r")(?:[\s-](?:" + "|".join(_UNITS) + r"))?|" + "|".join(_TEENS + _UNITS) +
             r")[\s-]+hundred")


class SpokenPriceDetector(PatternDetector):
    """A price said in hundreds without the currency: "I sold it myself for forty-two hundred", "it was twenty-five hundred"."""

    label = "MONEY"
    FLAGS = re.IGNORECASE
    PATTERNS = ((r"\b(?:for|paid|pay|pays|cost|costs|costing|charged|offer(?:ed)?|price|sold\s+it\s+for|got|was|"
                 r"about|around|only|spend|spent|make|made|earn|earned)\s+(?:about\s+|around\s+|only\s+|like\s+)?"
                 r"(?P<hit>" + _HUNDREDS + r")\b(?!\s+(?:and|miles?|feet|foot|people|pounds?|square|years?|"
                 r"hours?|dollars?|bucks|percent|kids|students|acres?|times|of)\b)", 0.6),)

    def may_match(self, text: str) -> bool:
        return "hundred" in text.lower()
