"""The tagger's span rules one by one (``veil.mask.neural.rules``): a (text, spans in, spans out) table per rule,
and the switch that chooses them."""

from __future__ import annotations

import pytest

from veil.errors import VeilError
from veil.mask.neural.rules import REGISTRY, apply_rule, describe, select, tidy
from veil.types import Span


def _spans(text, marked):
    """``[("surface", TYPE), ...]`` -> spans at the first occurrence of each surface after the previous one
    (a surface given twice in a row is the same place twice: two pieces of one word)."""
    out, pos = [], 0
    for surface, kind in marked:
        i = text.find(surface, pos)
        if i < 0:
            i = text.rindex(surface, 0, pos + len(surface))
        out.append(Span(i, i + len(surface), kind, "neural_tagger", 0.9))
        pos = i + 1
    return out


# (rule, text, spans in, spans out[, written]); every rule has a row it changes and one it leaves alone
TABLE = [
    ("trim_edges", "Thanks Maria. Bye.", [("Thanks Maria.", "PER")], [("Maria", "PER")]),
    ("trim_edges", "My zip is 94110, ok", [("zip is 94110,", "ADDR")], [("94110", "ADDR")]),
    ("trim_edges", "send it to 22 Elm Dr. please", [("22 Elm Dr.", "ADDR")], [("22 Elm Dr.", "ADDR")]),
    ("spelled_acronym", "he works at G T E now", [("T", "ORG")], [("G T E", "ORG")]),
    ("spelled_acronym", "we got a V C R", [("V", "ORG")], [("V C R", "ORG")]),
    ("not_name_acronym", "we got a V C R", [("V C R", "ORG")], []),
    ("not_name_acronym", "he works at G T E", [("G T E", "ORG")], [("G T E", "ORG")]),
    ("initials_org", "i watch C N N", [("C N N", "PER")], [("C N N", "ORG")]),
    ("initials_org", "it is spelled C N N", [("C N N", "PER")], [("C N N", "PER")]),
    ("valid_type", "meet me at noon", [("at", "EMAIL")], []),
    ("valid_type", "it was as far as i know", [("as far as", "PER")], []),
    ("valid_type", "write to jo at mail dot com", [("jo at mail dot com", "EMAIL")], [("jo at mail dot com", "EMAIL")]),
    ("topic_nationality", "i like American cars", [("American", "MISC")], []),
    ("topic_nationality", "i like American cars", [("American", "MISC")], [("American", "MISC")], True),
    ("bare_number_date", "i have eighty of them", [("eighty", "DATE")], []),
    ("bare_number_date", "bought one in eighty-nine", [("eighty-nine", "DATE")], [("eighty-nine", "DATE")]),
    ("first_name_run", "i talked to liisa lepistö", [("liisa", "ORG")], [("liisa lepistö", "PER")]),
    ("first_name_run", "i talked to mary about it", [("mary", "PER")], [("mary", "PER")]),
    ("listed_person", "Call John Smith at 555-123-4560.", [("John Smith", "ORG")], [("John Smith", "PER")]),
    ("named_place", "I'm in an apartment in, uh, Plano.", [("Plano", "PER")], [("Plano", "LOC")]),
    ("named_place", "we went to, uh, Austin a while back", [("Austin", "PER")], [("Austin", "LOC")]),
    ("named_place", "we're about an hour away from Tyler.", [("Tyler", "PER")], [("Tyler", "LOC")]),
    ("named_place", "Austin called me back", [("Austin", "PER")], [("Austin", "PER")]),
    ("named_place", "I talked to Austin", [("Austin", "PER")], [("Austin", "PER")]),
    ("named_place", "we drove to Austin's house", [("Austin", "PER")], [("Austin", "PER")]),
    ("named_place", "I met Frank Plano there", [("Frank Plano", "PER")], [("Frank Plano", "PER")]),
    ("listed_person", "I bank with Credit Union", [("Credit Union", "ORG")], [("Credit Union", "ORG")]),
    ("listed_person", "we shop at John Lewis Partnership", [("John Lewis Partnership", "ORG")],
     [("John Lewis Partnership", "ORG")]),
    ("occupation", "she's a beautician", [("beautician", "PER")], [("beautician", "OCC")]),
    ("occupation", "ask Baker", [("Baker", "PER")], [("Baker", "PER")]),
    ("titled_name", "ms Melahat Filiz came", [("Melahat", "PER")], [("Melahat Filiz", "PER")]),
    ("titled_name", "Dr. Connor said so", [("Connor", "PER")], [("Connor", "PER")]),
    ("cased_name", "I met Sophie Lang there", [("Sophie", "PER")], [("Sophie Lang", "PER")]),
    ("cased_name", "I met Sophie There", [("Sophie", "PER")], [("Sophie", "PER")]),
    ("cased_entity", "fans of the Chicago Bulls", [("Chicago", "ORG")], [("Chicago Bulls", "ORG")]),
    ("cased_entity", "the Meech Lake Accord", [("Meech", "LOC"), ("Lake Accord", "MISC")], [("Meech Lake Accord", "MISC")]),
    ("possessive", "Sally's car", [("Sally's", "PER")], [("Sally", "PER")]),
    ("join_same_type", "Call John Smith now", [("John", "PER"), ("Smith", "PER")], [("John Smith", "PER")]),
    ("join_same_type", "Mijail C Adomo", [("Mijail", "PER"), ("Adomo", "PER")], [("Mijail C Adomo", "PER")]),
    ("join_same_type", "Tom, Judy and me", [("Tom", "PER"), ("Judy", "PER")], [("Tom", "PER"), ("Judy", "PER")]),
    ("organisation_kind", "Northwind Bank, hi", [("Northwind", "LOC"), ("Bank", "LOC")], [("Northwind Bank", "ORG")]),
    ("organisation_kind", "I work for Acme Inc now", [("Acme", "ORG")], [("Acme Inc", "ORG")]),
    ("organisation_kind", "we went to Dallas bank", [("Dallas", "LOC")], [("Dallas", "LOC")]),
    ("institution_of", "The appeal went to the House of Lords.", [("Lords", "ORG")], [("House of Lords", "ORG")], True),
    ("institution_of", "The appeal went to the House of Lords.", [("Lords", "ORG")], [("Lords", "ORG")]),
    ("one_name", "we went to san francisco", [("san", "ORG"), ("francisco", "LOC")], [("san francisco", "ORG")]),
    ("one_name", "bob and francisco", [("bob", "PER"), ("francisco", "LOC")], [("bob", "PER"), ("francisco", "LOC")]),
    ("kind_word_alone", "the credit Union there", [("Union", "ORG")], []),
    ("kind_word_alone", "Southwark Council", [("Southwark", "LOC"), ("Council", "ORG")],
     [("Southwark", "LOC"), ("Council", "ORG")]),
    ("breed", "we have a Golden Retriever", [("Golden Retriever", "PER")], []),
    ("breed", "our dog is part Collie", [("Collie", "PER")], []),
    ("breed", "Mr. Shepherd called", [("Shepherd", "PER")], [("Shepherd", "PER")]),
    ("everyday_word", "i ate watermelon", [("watermelon", "PER")], []),
    ("everyday_word", "at Texas Tech", [("Texas", "ORG"), ("Tech", "ORG")], [("Texas", "ORG"), ("Tech", "ORG")]),
    ("everyday_word", "raised in the south", [("south", "LOC")], [("south", "LOC")]),
    ("naming_context", "his last name is Weight", [], [("Weight", "PER")]),
    ("naming_context", "I spoke to Jack Russell yesterday.", [("Jack", "MISC")], [("Jack Russell", "PER")]),
    ("naming_context", "Doctor Collie said I should rest.", [], [("Collie", "PER")]),
    ("naming_context", "hi dawn how are you", [], [("dawn", "PER")]),
    ("naming_context", "this is will speaking", [], [("will", "PER")]),
    ("naming_context", "we named him buddy after my uncle", [], [("buddy", "PER")]),
    ("naming_context", "this is will be fine", [], []),
    ("naming_context", "this is great", [], []),
    ("naming_context", "my name is not important", [], []),
    ("naming_context", "my doctor appointment", [], []),
    ("naming_context", "I spoke to Jack Russell Terriers Inc", [("Jack Russell Terriers Inc", "ORG")],
     [("Jack Russell Terriers Inc", "ORG")]),
    ("acronym_institution", "I went to N C State.", [("N C", "ORG")], [("N C State", "ORG")]),
    ("acronym_institution", "the U S state department", [("U S", "LOC")], [("U S", "LOC")]),
]


@pytest.mark.parametrize("row", TABLE, ids=[f"{r[0]}-{i}" for i, r in enumerate(TABLE)])
def test_rule_table(row):
    name, text, given, expected = row[:4]
    written = row[4] if len(row) > 4 else False
    got = apply_rule(name, text, _spans(text, given), written)
    assert [(text[s.start:s.end], s.label) for s in got] == expected


def test_every_rule_has_a_row_it_changes():
    changed = {r[0] for r in TABLE if [(s, k) for s, k in r[2]] != r[3]}
    assert set(REGISTRY) - changed == set()
    assert all(doc for _, _, doc in describe())


def test_the_switch_chooses_rules_in_registry_order():
    names = list(REGISTRY)
    defaults = [n for n in names if REGISTRY[n].default]
    assert [r.name for r in select("default")] == defaults == [r.name for r in select(None)]
    assert [r.name for r in select("all")] == names
    assert select("none") == ()
    assert [r.name for r in select("-breed,-everyday_word")] == [n for n in defaults if n not in ("breed", "everyday_word")]
    assert [r.name for r in select(["everyday_word", "breed", "trim_edges"])] == ["trim_edges", "breed", "everyday_word"]
    with pytest.raises(VeilError, match="unknown rule.*brede.*trim_edges"):
        select("-brede")
    with pytest.raises(VeilError, match="not both"):
        select("trim_edges,-breed")
    with pytest.raises(VeilError):
        select(False)


def test_switching_a_rule_off_keeps_what_it_would_drop():
    text = "we have a Golden Retriever"
    spans = _spans(text, [("Golden Retriever", "PER")])
    assert tidy(text, spans, False) == []
    assert [(text[s.start:s.end], s.label) for s in tidy(text, spans, False, "-breed")] == [("Golden Retriever", "PER")]
    assert tidy(text, spans, False, "none") == spans
