"""Fill stage: substitutes of the right type for typed placeholders (``[PERSON_NAME]``, ``[EMAIL_ADDRESS]``).

Three kinds of label (:func:`label_kind`):

- **entity labels** (persons, places, organisations, groups, facilities, ...): by default drawn from
  public lists in the shape the mask stage recorded (:mod:`veil.fill.entities`: a first name for a
  first name, a city for a city, "... Bank" for a bank), optionally ranked by a language model in
  context (:mod:`veil.fill.loop`); or, with ``entities="propose"`` on a model filler, the model
  proposes words as for any mask and spaCy's NER keeps those it tags with a matching type
  (:class:`EntityVerifier`), a Faker draw where none passes;
- **format labels** (email, phone, URL, IP, card and social-security numbers, numbers, dates,
  spelled letters, user names, ids, street addresses): no language model should guess these, they
  are drawn in the recorded shape (:mod:`veil.fill.formats`); so are quasi-identifiers (occupations,
  health conditions, nationalities and religions), from the list of the kind their shape names
  (:func:`quasi_value`);
- any other label (``MASK``, ``WORD``, a user's ``CUSTOM``) is filled with a plain word.

Every draw comes from the document's RNG (:func:`veil.fill.base.doc_rng`), never from the value.

:func:`entity_type_agreement` is the check reported by ``veil fill --check-types``: the share of
person / place / organisation substitutes that spaCy, run on the filled text, tags with the same
type.
"""

from __future__ import annotations

import random
import re
from functools import lru_cache
from typing import Any, Callable, Iterable, Sequence

from veil.fill.entities import entity_kind, entity_value  # noqa: F401  (entity_kind re-exported)
from veil.fill.formats import FAKERS, _seeded_faker, person_mention, restyle, shaped_value  # noqa: F401  (re-exported)
from veil.markers import unescape
from veil.shapes import ADDRESS_LABELS, QUASI_SHAPED

#: our label (DLP-style, as the entity tagger writes it, or spaCy's own) -> spaCy labels accepted
ENTITY_LABELS: dict[str, frozenset[str]] = {
    "PERSON_NAME": frozenset({"PERSON"}),
    "PERSON": frozenset({"PERSON"}),
    "LOCATION": frozenset({"GPE", "LOC"}),
    "GPE": frozenset({"GPE", "LOC"}),
    "LOC": frozenset({"GPE", "LOC"}),
    "ORGANIZATION_NAME": frozenset({"ORG"}),
    "ORGANIZATION": frozenset({"ORG"}),
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
            "LOC": "place", "ORGANIZATION_NAME": "organisation", "ORGANIZATION": "organisation",
            "ORG": "organisation"}

_GROUPS = ("American", "Canadian", "Mexican", "Irish", "Italian", "German", "French", "Polish", "Korean",
           "Japanese", "Indian", "Brazilian", "Nigerian", "Swedish", "Greek", "Vietnamese")
_LANGUAGES = ("English", "Spanish", "French", "German", "Italian", "Portuguese", "Polish", "Korean",
              "Japanese", "Hindi", "Greek", "Swedish")

#: entity labels without a list of their own (:mod:`veil.fill.entities` has persons, places,
#: organisations and facilities) -> Faker draw
ENTITY_FALLBACK: dict[str, Callable[[Any], str]] = {
    "GROUP": lambda f: f.random_element(_GROUPS), "NORP": lambda f: f.random_element(_GROUPS),
    "LANGUAGE": lambda f: f.random_element(_LANGUAGES),
    "PRODUCT": lambda f: f.word().title(), "EVENT": lambda f: f"the {f.word().title()} Festival",
}


def plain_word(rng: random.Random) -> str:
    """A common English word drawn without context (Faker's word list): the model-free fill of ``[MASK]``."""
    return _seeded_faker(rng).word()


def label_kind(label: str) -> str:
    """``"format"`` (drawn in shape), ``"entity"`` (drawn from lists, or proposed by a model and checked
    by NER) or ``"word"`` (plain word)."""
    if label in FAKERS or label in ADDRESS_LABELS or label in QUASI_SHAPED:
        return "format"
    if label in ENTITY_LABELS:
        return "entity"
    return "word"


#: the shape of letters spelled one by one ("L-O-P-E-Z", "s m i t h")
_SPELLED = re.compile(r"[Ll](?:[-. ][Ll]){2,}\.?")


def fake_value(label: str, rng: random.Random, shape: str | None = None, gender: str | None = None) -> str:
    """A substitute for ``label`` drawn from ``rng``, written in ``shape`` where the mask stage recorded
    one: names, places, organisations and addresses from :mod:`veil.fill.entities` (``gender`` for a
    person's first name), formats from :mod:`veil.fill.formats`, other entity labels from Faker."""
    if shape is not None and _SPELLED.fullmatch(shape) and entity_kind(label) in ("person", None):
        return shaped_value("SPELLED_WORD", shape, rng)  # a name spelled out ("L-O-P-E-Z"): another name, spelled
    if label in QUASI_SHAPED:
        return quasi_value(label, shape, rng)
    if entity_kind(label) is not None:
        return entity_value(label, shape, rng, gender)
    if shape is not None and label in FAKERS:
        return shaped_value(label, shape, rng)
    draw = FAKERS.get(label) or ENTITY_FALLBACK.get(label)
    if draw is None:
        raise KeyError(label)
    return draw(_seeded_faker(rng))


def has_fallback(label: str) -> bool:
    return label in ENTITY_FALLBACK or label in FAKERS or label in QUASI_SHAPED or entity_kind(label) is not None


@lru_cache(maxsize=None)
def _quasi_pool(kind: str) -> tuple[str, ...]:
    """The public list a quasi-identifier of ``kind`` is drawn from (``veil/data/quasi``; nationalities from
    countryinfo); letters said one by one ("c p a") are left out."""
    from veil.gazetteer import nationalities, quasi_lines

    files = {"job": "occupations_spoken.txt", "jobs": "occupations_spoken.txt", "field": "fields_of_work.txt",
             "health": "health_terms.txt"}
    if kind in files:
        terms = quasi_lines(files[kind])
    elif kind == "nationality":
        terms = [t.lower() for t in nationalities()]
    else:
        terms = [t.lower() for t in nationalities()] + quasi_lines("religions.txt")
    if kind in ("job", "jobs"):  # the detector's job titles: not an everyday word such as "model"
        from veil.gazetteer import occupation_terms, term_key

        terms = [t for t in terms if term_key(t) in occupation_terms()]
    return tuple(sorted({t for t in terms if all(len(w) > 1 for w in re.split(r"[ -]", t))}))


def _plural_of(term: str) -> str:
    if term.endswith("man"):
        return term[:-3] + "men"
    if term.endswith("y") and term[-2:-1] not in "aeiou":
        return term[:-1] + "ies"
    return term + ("es" if term.endswith(("s", "sh", "ch", "x")) else "s")


def quasi_value(label: str, shape: str | None, rng: random.Random) -> str:
    """Another value of a quasi-identifier's kind (its shape's tag: a job for a job, an illness for an
    illness, a nationality or religion for a group; untagged: a job, or a group), with the original's
    number of words where the list has one, plural for ``<jobs>``, and its case."""
    from veil.shapes import atoms, shape_tag

    tag = shape_tag(shape)
    kind = tag or ("job" if label == "OCCUPATION" else "nationality" if label == "NATIONALITY" else "group")
    codes = [a for a in atoms(shape or "") if a in ("W", "w", "U", "L", "l")]
    pool = _quasi_pool(kind)
    same = [t for t in pool if len(re.split(r"[ -]", t)) == len(codes)] or list(pool)
    term = rng.choice(same)
    if kind == "jobs":
        term = _plural_of(term)
    first = codes[0] if codes else "w"
    if first in ("U", "L"):
        return term.upper()
    if kind in ("group", "nationality") and first == "W":
        return " ".join(w[:1].upper() + w[1:] for w in term.split(" "))  # "Catholic", "New Zealander"
    # an illness is written lower-case ("[Alzheimer] -> lupus"); a job capitalised where its original was
    return term[:1].upper() + term[1:] if first == "W" and kind != "health" else term


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
        from veil.fill.base import LOAD_LOCK

        with LOAD_LOCK:
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


