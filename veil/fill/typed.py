"""Fill stage: substitutes of the right type for typed placeholders (``[PERSON_NAME]``, ``[EMAIL_ADDRESS]``).

Two kinds of label:

- **entity labels** (persons, places, organisations, groups, facilities, ...): the model proposes
  words as for any mask, each candidate is put into the sentence and kept only if spaCy's NER tags
  it with a matching type (:class:`EntityVerifier`); when no candidate passes, Faker draws one
  (a name, a city, a company) so the placeholder still gets a substitute of its type;
- **format labels** (email, phone, URL, IP, card and social-security numbers, numbers, dates,
  spelled letters, user names, ids): no language model should guess these, Faker draws them
  (:func:`fake_value`), seeded from the document's RNG so a run is reproducible.

Any other label (``MASK``, ``WORD``, a user's ``CUSTOM``) is filled with a plain word.

:func:`entity_type_agreement` is the check reported by ``veil fill --check-types``: the share of
person / place / organisation substitutes that spaCy, run on the filled text, tags with the same
type.
"""

from __future__ import annotations

import random
from functools import lru_cache
from typing import Any, Callable, Iterable, Sequence

from veil.markers import unescape

#: our label (DLP-style, as the entity tagger writes it, or spaCy's own) -> spaCy labels accepted
ENTITY_LABELS: dict[str, frozenset[str]] = {
    "PERSON_NAME": frozenset({"PERSON"}),
    "PERSON": frozenset({"PERSON"}),
    "LOCATION": frozenset({"GPE", "LOC"}),
    "GPE": frozenset({"GPE", "LOC"}),
    "LOC": frozenset({"GPE", "LOC"}),
    "ORGANIZATION_NAME": frozenset({"ORG"}),
    "ORG": frozenset({"ORG"}),
    "GROUP": frozenset({"NORP"}),
    "NORP": frozenset({"NORP"}),
    "FACILITY": frozenset({"FAC", "ORG", "GPE", "LOC"}),
    "FAC": frozenset({"FAC", "ORG", "GPE", "LOC"}),
    "EVENT": frozenset({"EVENT"}),
    "PRODUCT": frozenset({"PRODUCT", "ORG"}),
    "WORK_OF_ART": frozenset({"WORK_OF_ART"}),
    "LANGUAGE": frozenset({"LANGUAGE", "NORP"}),
    "LAW": frozenset({"LAW"}),
}
#: the labels whose agreement :func:`entity_type_agreement` reports (persons, places, organisations)
REPORTED = {"PERSON_NAME": "person", "PERSON": "person", "LOCATION": "place", "GPE": "place",
            "LOC": "place", "ORGANIZATION_NAME": "organisation", "ORG": "organisation"}

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
    "STREET_ADDRESS": lambda f: f.street_address(),
    "ZIP_CODE": lambda f: f.zipcode(),
}
def _place(f: Any) -> str:
    # real states and countries are places spaCy knows; invented city names often are not tagged
    return f.random_element((f.city, f.state, f.country, f.state, f.country))()


#: entity label -> Faker draw used when no model candidate passes the type check
ENTITY_FALLBACK: dict[str, Callable[[Any], str]] = {
    "PERSON_NAME": lambda f: f.name(), "PERSON": lambda f: f.name(),
    "LOCATION": lambda f: _place(f), "GPE": lambda f: _place(f), "LOC": lambda f: _place(f),
    "ORGANIZATION_NAME": lambda f: f.company(), "ORG": lambda f: f.company(),
    "FACILITY": lambda f: f.street_name(), "FAC": lambda f: f.street_name(),
}


def label_kind(label: str) -> str:
    """``"format"`` (Faker), ``"entity"`` (model proposal checked by NER) or ``"word"`` (plain word)."""
    if label in FAKERS:
        return "format"
    if label in ENTITY_LABELS:
        return "entity"
    return "word"


@lru_cache(maxsize=1)
def _faker() -> Any:
    from faker import Faker  # lazy: Faker loads every provider on construction

    return Faker("en_US")


def fake_value(label: str, rng: random.Random) -> str:
    """A Faker draw for ``label`` (a format label, or an entity label's fallback), seeded from ``rng``."""
    draw = FAKERS.get(label) or ENTITY_FALLBACK.get(label)
    if draw is None:
        raise KeyError(label)
    f = _faker()
    f.seed_instance(rng.getrandbits(64))
    return draw(f)


def has_fallback(label: str) -> bool:
    return label in ENTITY_FALLBACK or label in FAKERS


def as_entity(word: str) -> str:
    """An entity candidate's surface: a lower-case proposal (uncased models) is capitalised."""
    return word[:1].upper() + word[1:] if word.islower() else word


class EntityVerifier:
    """Keeps the candidates that spaCy's NER tags with the wanted type inside their sentence."""

    def __init__(self, model: str | None = None, context_chars: int = 300) -> None:
        self.model_name = model
        self.context_chars = context_chars
        self._nlp: Any = None

    @property
    def nlp(self) -> Any:
        if self._nlp is None:
            from veil.mask.entity_tagger import DEFAULT_MODEL, load_ner

            self._nlp = load_ner(self.model_name or DEFAULT_MODEL)
        return self._nlp

    def verify(self, items: Sequence[tuple[str, str, str, Sequence[str]]]) -> list[list[str]]:
        """``items``: (left, right, label, candidates) with ``left``/``right`` the (unescaped) text
        around the marker; returns, per item, the candidates that pass, in their original order."""
        texts: list[str] = []
        owners: list[tuple[int, str, int, int]] = []
        for i, (left, right, _, cands) in enumerate(items):
            left, right = left[-self.context_chars:], right[:self.context_chars]
            for c in cands:
                texts.append(left + c + right)
                owners.append((i, c, len(left), len(left) + len(c)))
        out: list[list[str]] = [[] for _ in items]
        if not texts:
            return out
        for (i, c, s, e), doc in zip(owners, self.nlp.pipe(texts, batch_size=256)):
            wanted = ENTITY_LABELS[items[i][2]]
            if any(ent.label_ in wanted and ent.start_char <= s and ent.end_char >= e for ent in doc.ents):
                out[i].append(c)
        return out


def entity_type_agreement(filled: Iterable[Any], model: str | None = None) -> dict[str, dict[str, float]]:
    """Per reported type (person / place / organisation) and overall: substitutes, agreeing, share.

    A substitute agrees when spaCy, run on the whole filled text, puts an entity of a matching
    type over all of it. ``filled`` holds ``FilledDocument`` objects (no original text is needed).
    """
    verifier = EntityVerifier(model)
    jobs: list[tuple[str, list[tuple[str, int, int]]]] = []
    for d in filled:
        subs = [(s.label, s.start, s.end) for s in d.substitutions if s.label in REPORTED]
        if subs:
            jobs.append((d.text, subs))
    counts: dict[str, list[int]] = {}
    for (text, subs), doc in zip(jobs, verifier.nlp.pipe([t for t, _ in jobs], batch_size=64)):
        for label, s, e in subs:
            ok = any(ent.label_ in ENTITY_LABELS[label] and ent.start_char <= s and ent.end_char >= e
                     for ent in doc.ents)
            for key in (REPORTED[label], "all"):
                c = counts.setdefault(key, [0, 0])
                c[0] += 1
                c[1] += ok
    return {k: {"n": n, "agree": a, "share": a / n if n else 0.0} for k, (n, a) in sorted(counts.items())}


def context_around(text: str, start: int, end: int, next_marker: int | None) -> tuple[str, str]:
    """The unescaped text left of a marker and right of it up to the next marker (not yet filled)."""
    right = text[end:next_marker] if next_marker is not None else text[end:]
    return unescape(text[:start]), unescape(right)
