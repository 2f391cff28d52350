"""Train stage: generated call-centre dialogues with spoken and spelled personal data, for the neural detector.

Faker supplies names (several Latin-script locales: call centres hear international names),
streets, cities, companies, e-mail users and numbers; the templates speak them the way callers do:
names said and spelled ("s m i t h", "s-m-i-t-h", "S as in Sam, M as in Mary", "m-a-r-i-a dot
gonzalez"), e-mail addresses spoken ("john dot smith at gmail dot com"), phone / card / SSN /
account / zip numbers digit by digit or in groups ("five five five, twelve thirty four",
"double five", "oh"), street addresses spoken ("twenty two baker street"), dates of birth and ages.
Each dialogue is one text, one utterance a line, with character spans of ``detector_data.TYPES``.
Everything is drawn from one seeded ``random.Random``, so a seed gives the same dialogues.
"""

from __future__ import annotations

import random
from typing import Callable

from veil.textforms import DIGIT_WORDS, cardinal, ordinal, year

NAME_LOCALES = ("en_US", "en_GB", "en_IE", "en_IN", "es_ES", "es_MX", "de_DE", "fr_FR", "it_IT", "pl_PL",
                "tr_TR", "pt_BR", "nl_NL", "sv_SE", "cs_CZ", "hu_HU", "ro_RO", "fi_FI", "da_DK", "en_NZ")
MONTHS = ("january february march april may june july august september october november "
          "december").split()
# NATO and everyday words callers spell with ("S as in Sam")
SPELL_WORDS = {
    "a": ["alpha", "apple", "adam"], "b": ["bravo", "boy", "bob"], "c": ["charlie", "cat"], "d": ["delta", "david", "dog"],
    "e": ["echo", "edward"], "f": ["foxtrot", "frank"], "g": ["golf", "george"], "h": ["hotel", "henry"],
    "i": ["india", "ida"], "j": ["juliet", "john"], "k": ["kilo", "king"], "l": ["lima", "larry"],
    "m": ["mike", "mary"], "n": ["november", "nancy"], "o": ["oscar", "ocean"], "p": ["papa", "peter"],
    "q": ["quebec", "queen"], "r": ["romeo", "robert"], "s": ["sierra", "sam", "sugar"], "t": ["tango", "tom"],
    "u": ["uniform", "umbrella"], "v": ["victor", "victory"], "w": ["whiskey", "william"], "x": ["x-ray"],
    "y": ["yankee", "yellow"], "z": ["zulu", "zebra"],
}
DOMAINS = ("gmail", "yahoo", "hotmail", "outlook", "aol", "icloud", "comcast", "protonmail")
TLDS = ("com", "net", "org", "co dot uk", "edu")
STREET_SUFFIXES = ("street", "avenue", "road", "lane", "drive", "court", "boulevard", "way", "place", "circle")


# everyday call-centre talk with no personal data: words a tagger trained on spoken e-mails and addresses
# mistakes for them ("at", "dot", "from", "bank", "card", "new", "small", "school"); {x} is one of THINGS
CHATTER = (
    "i'm calling from work so i might have to go", "i'm at home right now", "we were at the store when it happened",
    "i got a new {x} the other day", "the new {x} stopped working", "it's a small {x} nothing fancy",
    "the card reader at the bank was broken", "my card got declined at the pump", "i dropped the kids at school",
    "the school called about the bus", "can you hold on a second", "let me grab a pen", "sorry the dog is barking",
    "there's a little red dot on the screen", "click on the dot in the corner", "we'll be at the lake this weekend",
    "i just got back from the gym", "he's out at the park with the kids", "the {x} is making a weird noise",
    "i bought a small {x} from the hardware store", "it came from the warehouse yesterday", "is that the new model",
    "the bank is closed on sundays", "i'll stop by the bank after lunch", "it's a new account i think",
    "um yeah i can do that", "uh i'm not sure", "oh okay that makes sense", "hmm let me think", "uh huh yeah",
    "we had a flat tire on the way", "the {x} in the kitchen leaks", "i fixed the {x} myself", "that's all i needed",
    "thanks for your help", "hi how are you today", "good morning", "you're welcome have a nice day",
    "i'll check on that for you", "what's the new due date", "the old {x} still works fine", "we moved the {x} upstairs",
    "i need a new {x} for the garage", "my daughter wants a bike for school", "he's at practice until six",
    "i'll be at my desk all afternoon", "we ordered pizza from that place downtown", "i read it online somewhere",
    "the {x} from the other company was cheaper", "the new one is smaller", "this is the second time i've called",
)
THINGS = ("freezer", "treadmill", "heater", "dishwasher", "router", "printer", "microwave", "washer", "dryer",
          "thermostat", "vacuum", "fridge", "lawn mower", "phone charger", "coffee maker", "garage door", "sink",
          "toaster", "furnace", "air conditioner", "tablet", "laptop", "tv", "blender", "bike", "car seat")


class _Dialogue:
    """Builds one text from pieces; a piece with a type becomes a span."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.len = 0
        self.spans: list[tuple[int, int, str]] = []

    def say(self, *pieces: str | tuple[str, str]) -> None:
        if self.parts:
            self.parts.append("\n")
            self.len += 1
        for p in pieces:
            text, kind = (p, None) if isinstance(p, str) else p
            if kind is not None and text:
                self.spans.append((self.len, self.len + len(text), kind))
            self.parts.append(text)
            self.len += len(text)

    def text(self) -> str:
        return "".join(self.parts)


class DialogueGenerator:
    """``DialogueGenerator(seed).dialogue()`` -> (text, spans)."""

    def __init__(self, seed: int = 0) -> None:
        from faker import Faker

        self.rng = random.Random(seed)
        self.fakers = {loc: Faker(loc) for loc in NAME_LOCALES}
        for i, f in enumerate(self.fakers.values()):
            f.seed_instance(seed * 1000 + i)
        self.us = self.fakers["en_US"]

    # --- spoken forms -----------------------------------------------------------------------
    def name(self) -> tuple[str, str]:
        # two in three names English-speaking, the rest from the other locales
        loc = "en_US" if self.rng.random() < 0.45 else self.rng.choice(NAME_LOCALES)
        f = self.fakers[loc]
        first, last = f.first_name(), f.last_name()
        return first.split()[0], last.split()[0]

    def digit(self, c: str) -> str:
        if c == "0":
            return self.rng.choice(("zero", "oh", "oh", "o"))
        return DIGIT_WORDS[int(c)]

    def digits(self, s: str) -> str:
        """Digit by digit with "double" / "triple" and "oh" as people say them."""
        out, i = [], 0
        while i < len(s):
            run = 1
            while i + run < len(s) and s[i + run] == s[i] and run < 3:
                run += 1
            if run >= 2 and self.rng.random() < 0.5:
                out.append(("double " if run == 2 else "triple ") + self.digit(s[i]))
                i += run
                continue
            out.append(self.digit(s[i]))
            i += 1
        return " ".join(out)

    def pairs(self, s: str) -> str:
        """Two digits at a time where they do not start with 0 ("twelve thirty four")."""
        out, i = [], 0
        while i < len(s):
            chunk = s[i:i + 2]
            if len(chunk) == 2 and chunk[0] != "0" and self.rng.random() < 0.7:
                out.append(" ".join(cardinal(int(chunk))))
            else:
                out.append(" ".join(self.digit(c) for c in chunk))
            i += 2
        return " ".join(out)

    def number(self, s: str) -> str:
        """A digit string spoken digit by digit, in pairs, or written as digits (the asr form speaks those)."""
        r = self.rng.random()
        if r < 0.5:
            return self.digits(s)
        if r < 0.8:
            return self.pairs(s)
        return s

    def grouped(self, groups: list[str], seps: str = " -") -> str:
        sep = self.rng.choice((", ", " ", " ... ")) if self.rng.random() < 0.5 else " "
        if self.rng.random() < 0.2:
            return self.rng.choice(seps).strip().join(groups) if "-" in seps else " ".join(groups)
        return sep.join(self.number(g) for g in groups)

    def spelled(self, word: str) -> str:
        letters = [c for c in word.lower() if c.isalpha()]
        r = self.rng.random()
        if r < 0.35:
            return " ".join(letters)
        if r < 0.65:
            return "-".join(letters)
        if r < 0.8:
            return "-".join(letters).upper()
        # "s as in sam m as in mary ..."
        return " ".join(f"{c} as in {self.rng.choice(SPELL_WORDS.get(c, [c]))}" if self.rng.random() < 0.6 else c
                        for c in letters)

    def email(self, first: str, last: str) -> str:
        f, l = _ascii(first), _ascii(last)
        user = self.rng.choice((f"{f} dot {l}", f"{f}{l}", f"{f[0]} {l}", f"{f} underscore {l}",
                                f"{l} {self.digits(str(self.rng.randint(1, 99)))}", f"{'-'.join(f)} dot {l}",
                                f"{f}.{l}", self.us.user_name()))
        domain = self.rng.choice(DOMAINS)
        tld = self.rng.choice(TLDS)
        if "." in user and self.rng.random() < 0.5:
            return f"{user}@{domain}.{tld.replace(' dot ', '.')}"
        return f"{user} at {domain} dot {tld}"

    def house_number(self) -> str:
        n = self.rng.choice((self.rng.randint(1, 99), self.rng.randint(100, 999), self.rng.randint(1000, 9999),
                             self.rng.randint(10000, 99999)))
        s = str(n)
        r = self.rng.random()
        if r < 0.3:
            return s
        if len(s) <= 2:
            return " ".join(cardinal(n))
        if len(s) == 4 and r < 0.7:
            return " ".join(year(n))
        if len(s) == 3 and r < 0.7:
            return f"{DIGIT_WORDS[int(s[0])]} {self.pairs(s[1:])}"
        return self.digits(s)

    def street(self) -> str:
        name = self.us.street_name().split()[0].lower() if self.rng.random() < 0.6 else self.us.last_name().lower()
        if self.rng.random() < 0.15:
            name = " ".join(ordinal(self.rng.randint(1, 40)))
        return f"{self.house_number()} {name} {self.rng.choice(STREET_SUFFIXES)}"

    def date(self) -> str:
        d, m, y = self.rng.randint(1, 28), self.rng.choice(MONTHS), self.rng.randint(1935, 2012)
        r = self.rng.random()
        if r < 0.4:
            return f"{m} {' '.join(ordinal(d))} {' '.join(year(y))}"
        if r < 0.7:
            return f"the {' '.join(ordinal(d))} of {m} {' '.join(year(y))}"
        if r < 0.85:
            return f"{self.rng.randint(1, 12)}/{d}/{y}"
        return f"{' '.join(cardinal(self.rng.randint(1, 12)))} {' '.join(cardinal(d))} {self.pairs(str(y))}"

    # --- one dialogue -------------------------------------------------------------------------
    def dialogue(self) -> tuple[str, list[tuple[int, int, str]]]:
        d = _Dialogue()
        agent, _ = self.name()
        first, last = self.name()
        company = self.us.company().split(",")[0]
        greet = self.rng.choice(("thank you for calling {c} this is {a} how can i help you",
                                 "hi you've reached {c} my name is {a}", "{c} customer service {a} speaking"))
        pre, _, rest = greet.partition("{c}")
        mid, _, post = rest.partition("{a}")
        d.say(pre, (company.lower() if self.rng.random() < 0.7 else company, "ORG"), mid, (agent.lower(), "PER"), post)
        steps: list[Callable[[_Dialogue, str, str], None]] = [self._name_turn, self._spell_turn, self._email_turn,
                                                               self._phone_turn, self._address_turn, self._dob_turn,
                                                               self._number_turn, self._filler_turn, self._chatter_turn,
                                                               self._chatter_turn]
        self.rng.shuffle(steps)
        for step in steps[:self.rng.randint(3, len(steps))]:
            step(d, first, last)
        d.say(self.rng.choice(("ok thank you ", "great thanks ", "alright ")),
              (first.lower(), "PER"), self.rng.choice((" have a good day", " bye now", "")))
        return d.text(), d.spans

    def _name_turn(self, d: _Dialogue, first: str, last: str) -> None:
        full = f"{first} {last}"
        full = full.lower() if self.rng.random() < 0.8 else full
        d.say("can i get your name please")
        d.say(self.rng.choice(("yeah it's ", "my name is ", "sure ", "it's ", "this is ")), (full, "PER"))

    def _spell_turn(self, d: _Dialogue, first: str, last: str) -> None:
        word = last if self.rng.random() < 0.7 else first
        d.say(self.rng.choice(("could you spell that for me", "how do you spell your last name", "spell that please")))
        if self.rng.random() < 0.4:
            d.say((word.lower(), "PER"), " ", (self.spelled(word), "PER"))
        else:
            d.say(self.rng.choice(("sure it's ", "yes ", "", "that's ")), (self.spelled(word), "PER"))

    def _email_turn(self, d: _Dialogue, first: str, last: str) -> None:
        d.say(self.rng.choice(("and what's the email on the account", "can i have your email address")))
        d.say(self.rng.choice(("it's ", "yeah ", "")), (self.email(first, last), "EMAIL"))

    def _phone_turn(self, d: _Dialogue, first: str, last: str) -> None:
        digits = f"{self.rng.randint(201, 989)}{self.rng.randint(200, 999)}{self.rng.randint(0, 9999):04d}"
        d.say(self.rng.choice(("what's the best number to reach you", "can i get a callback number")))
        d.say(self.rng.choice(("it's ", "sure ", "", "you can reach me at ", "call me at ", "i'm at ")),
              (self.grouped([digits[:3], digits[3:6], digits[6:]]), "PHONE"))

    def _address_turn(self, d: _Dialogue, first: str, last: str) -> None:
        d.say(self.rng.choice(("and the address on file", "what's your street address", "where should we ship it")))
        city = self.us.city().lower()
        zip_ = self.us.postcode()[:5]
        if self.rng.random() < 0.5:
            d.say("i live at ", (self.street(), "ADDR"), " in ", (city, "LOC"))
        else:
            d.say((self.street(), "ADDR"), " ", (city, "LOC"), " ", (self.us.state().lower(), "LOC"),
                  " zip code ", (self.number(zip_), "ADDR"))

    def _dob_turn(self, d: _Dialogue, first: str, last: str) -> None:
        d.say(self.rng.choice(("can you verify your date of birth", "and your birthday")))
        d.say(self.rng.choice(("it's ", "sure ", "")), (self.date(), "DATE"))

    def _number_turn(self, d: _Dialogue, first: str, last: str) -> None:
        kind = self.rng.choice(("card", "ssn", "account", "member"))
        if kind == "card":
            digits = "".join(str(self.rng.randint(0, 9)) for _ in range(16))
            d.say("can i have the card number")
            d.say(self.rng.choice(("yes it's ", "", "ok ")), (self.grouped([digits[i:i + 4] for i in range(0, 16, 4)]), "ID"))
        elif kind == "ssn":
            digits = "".join(str(self.rng.randint(0, 9)) for _ in range(9))
            if self.rng.random() < 0.5:
                d.say("and the last four of your social")
                d.say(self.rng.choice(("", "it's ")), (self.number(digits[5:]), "ID"))
            else:
                d.say("can you confirm your social security number")
                d.say((self.grouped([digits[:3], digits[3:5], digits[5:]]), "ID"))
        else:
            n = "".join(str(self.rng.randint(0, 9)) for _ in range(self.rng.randint(6, 12)))
            d.say(f"what's your {kind} number")
            d.say(self.rng.choice(("it's ", "", "um ")), (self.number(n), "ID"))

    def _chatter_turn(self, d: _Dialogue, first: str, last: str) -> None:
        line = self.rng.choice(CHATTER).replace("{x}", self.rng.choice(THINGS))
        if self.rng.random() < 0.4:
            line = self.rng.choice(("uh ", "um ", "oh ", "well ", "yeah ", "so ")) + line
        d.say(line if self.rng.random() < 0.6 else line[0].upper() + line[1:] + ".")

    def _filler_turn(self, d: _Dialogue, first: str, last: str) -> None:
        d.say(self.rng.choice(("one moment while i pull that up", "ok i see the account here",
                               "i'm gonna put you on a brief hold", "my wife mary said i should call",
                               "yeah i called last week and spoke to someone named " + self.name()[0].lower())))
        # the last choice names someone: mark it
        text = d.parts[-1]
        if text.startswith("yeah i called"):
            who = text.rsplit(" ", 1)[1]
            d.spans.append((d.len - len(who), d.len, "PER"))
            when = d.len - len(text) + len("yeah i called ")
            d.spans.append((when, when + len("last week"), "DATE"))
        elif text.startswith("my wife mary"):
            start = d.len - len(text) + len("my wife ")
            d.spans.append((start, start + 4, "PER"))


def _ascii(s: str) -> str:
    import unicodedata

    return "".join(c for c in unicodedata.normalize("NFKD", s.lower()) if c.isascii() and c.isalpha()) or "x"


def generate(n: int, seed: int = 0) -> list[tuple[str, list[tuple[int, int, str]]]]:
    if n <= 0:
        return []
    gen = DialogueGenerator(seed)
    return [gen.dialogue() for _ in range(n)]
