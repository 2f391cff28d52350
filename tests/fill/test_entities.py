"""Typed draws of names, places, organisations and addresses (veil/fill/entities.py), their ranking and seeding."""

from __future__ import annotations

import random
import re

import pytest

import veil
from veil.fill import ranking
from veil.fill.entities import entity_value
from veil.fill.faker import FakerFiller
from veil.gazetteer import NAME_SUFFIXES, TITLES, first_names, last_names, place_kind
from veil.mask.placeholders import render
from veil.shapes import shape_of
from veil.types import Document, MaskedDocument, Span

NAMES = {n.lower() for g in ("f", "m") for n in first_names(g)} | {n.lower() for n in last_names()}


def _draws(label: str, surface: str, n: int = 30, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [entity_value(label, shape_of(label, surface), rng) for _ in range(n)]


@pytest.mark.parametrize("surface", ["Priya", "Maria Lopez", "john smith", "Mrs. Laura Anderson", "Mr. Smith",
                                     "J. R. Smith Jr.", "Dr. Ana Maria Lopez"])
def test_a_person_keeps_word_count_titles_and_suffixes_and_invents_none(surface):
    for v in _draws("PERSON_NAME", surface):
        words, orig = v.split(), surface.split()
        assert len(words) == len(orig), v
        for o, w in zip(orig, words):
            ol, wl = o.strip(".").lower(), w.strip(".").lower()
            if ol in TITLES or ol in NAME_SUFFIXES:
                assert w == o, v  # a title stays that title
            elif len(ol) == 1:
                assert len(wl) == 1 and w.endswith(".") == o.endswith("."), v
            else:
                assert wl in NAMES, v
                assert (w.islower(), w[:1].isupper()) == (o.islower(), o[:1].isupper()), v


def test_a_one_word_first_name_stays_a_first_name_and_a_title_gives_its_gender():
    firsts = {n for g in ("f", "m") for n in first_names(g)}
    assert all(v in firsts for v in _draws("PERSON_NAME", "Priya"))
    assert all(v.split()[1] in first_names("f") for v in _draws("PERSON_NAME", "Mrs. Laura Anderson"))
    assert all(v.split()[1] in last_names() for v in _draws("PERSON_NAME", "Mr. Smith"))


@pytest.mark.parametrize("surface, kind", [("Boston", "city"), ("Texas", "state"), ("Uruguay", "country"),
                                           ("Los Angeles", "city"), ("the Midwest", "region")])
def test_a_place_is_a_real_place_of_the_same_granularity(surface, kind):
    values = _draws("LOCATION", surface)
    assert all(place_kind(v) == kind for v in values), values
    assert len(set(values)) > 5


def test_a_state_code_stays_a_state_code_and_lower_case_stays_lower_case():
    assert all(re.fullmatch(r"[A-Z]{2}", v) and place_kind(v) == "state" for v in _draws("LOCATION", "CO"))
    assert all(v.islower() and place_kind(v) == "state" for v in _draws("LOCATION", "texas"))


@pytest.mark.parametrize("surface, kind_words", [("Northwind Bank", ["Bank"]), ("Lincoln Elementary", ["Elementary"]),
                                                 ("Bank of America", ["Bank", "of"]), ("Contoso Inc", ["Inc"])])
def test_an_organisation_keeps_its_kind_word(surface, kind_words):
    for v in _draws("ORGANIZATION_NAME", surface):
        assert len(v.split()) == len(surface.split()) and all(k in v.split() for k in kind_words), v


def test_a_street_address_keeps_its_layout():
    surface = "96 Fifth Avenue, Boston, MA 02110"
    for v in _draws("STREET_ADDRESS", surface):
        assert shape_of("STREET_ADDRESS", v) == shape_of("STREET_ADDRESS", surface), v


@pytest.mark.parametrize("text, gender", [
    ("My daughter [PERSON_NAME_1] is seven.", "f"),
    ("I spoke to my husband [PERSON_NAME_1] yesterday.", "m"),
    ("[PERSON_NAME_1] called, she wants a refund.", "f"),
    ("Ask [PERSON_NAME_1] whether he got the letter.", "m"),
    ("[PERSON_NAME_1] lives in [LOCATION_1].", None),
])
def test_gender_cues_come_from_the_words_around_the_placeholder(text, gender):
    s = text.index("[PERSON_NAME_1]")
    e = s + len("[PERSON_NAME_1]")
    nxt = text.find("[", e)
    assert ranking.gender_cue((text, s, e, nxt if nxt >= 0 else None)) == gender
    firsts = [veil.fill(text, seed=k).split()[2 if gender == "f" and "daughter" in text else 0] for k in range(8)]
    if gender == "f" and text.startswith("My daughter"):
        assert all(n in first_names("f") for n in firsts)


class _FakeScorer:
    """Scores a candidate by whether its first name is a woman's: a context that wants a woman."""

    sentence_end = "\n"

    def __init__(self):
        self.seen = []

    def score(self, contexts, candidates):
        self.seen.extend(c.left + "|" + c.right for c in contexts)
        return [[1.0 if c.split()[0] in first_names("f") else 0.0 for c in cands] for cands in candidates]


class _RankingFiller(FakerFiller):
    def __init__(self, scorer, **kw):
        super().__init__(rank_types=True, gender_cues=False, **kw)
        self._scorer = scorer

    @property
    def type_scorer(self):
        return self._scorer


def test_ranking_keeps_the_draw_the_scorer_prefers_and_sees_only_masked_text():
    scorer = _FakeScorer()
    docs = [MaskedDocument(str(i), "Yesterday [PERSON_NAME_1] met [PERSON_NAME_2] at [LOCATION_1].", (), "numbered")
            for i in range(20)]
    out = _RankingFiller(scorer).fill(docs)
    persons = [s.substitute for d in out for s in d.substitutions if s.label == "PERSON_NAME"]
    assert all(p.split()[0] in first_names("f") for p in persons)  # one of each gender drawn, the woman kept
    assert all("[" not in ctx.split("|")[0] for ctx in scorer.seen)  # earlier fills, no original text
    assert len(set(persons)) > 20


def test_draws_depend_on_the_seed_and_the_document_never_on_the_value():
    def fill(value: str, doc_id: str, seed: int = 0) -> str:
        text = f"This is {value} speaking."
        doc = render(Document(doc_id, text), [Span(8, 8 + len(value), "PERSON_NAME", "test")], "numbered")
        return FakerFiller(seed=seed).fill([doc])[0].substitutions[0].substitute

    # two different originals of one shape, same document id and seed: the same draw (the value is not an input)
    assert fill("Maria", "d1") == fill("Priya", "d1")
    # the same original in other documents or under another seed: other draws
    assert len({fill("Maria", f"d{i}") for i in range(10)}) >= 8
    assert len({fill("Maria", "d1", seed=s) for s in range(10)}) >= 8
