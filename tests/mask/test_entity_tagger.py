import sys

import pytest

from veil.errors import VeilError
from veil.mask.entity_tagger import extend, propagate
from veil.types import Span


def spans_of(text, *surfaces, label="PERSON_NAME"):
    out = []
    for s in surfaces:
        i = text.index(s)
        out.append(Span(i, i + len(s), label, "entity_tagger"))
    return out


def surfaces(text, spans):
    return sorted((s.start, text[s.start:s.end]) for s in spans)


@pytest.mark.parametrize("text,tagged,expected", [
    ("Gretchen met Bob. Later GRETCHEN and gretchen left; Gretchenx stayed.", ["Gretchen"],
     ["Gretchen", "GRETCHEN", "gretchen"]),
    ("US troops; tell us. The US.", ["US"], ["US", "US"]),  # lower-case common word is not the entity
    ("dallas is big, Dallas too", ["dallas"], ["dallas", "Dallas"]),  # tagged lower case: all cases
    ("A. Smith and a cat", ["A."], ["A."]),  # one letter would match every "a"
])
def test_propagate_table(text, tagged, expected):
    spans = spans_of(text, *tagged)
    assert [s for _, s in surfaces(text, propagate(text, spans, "entity_tagger"))] == expected


@pytest.mark.parametrize("text,tagged,label,expected", [
    ("the Brandenburg Regional Labour Court ruled", "Brandenburg Regional Labour", "ORGANIZATION_NAME",
     "Brandenburg Regional Labour Court"),
    ("by Mehmet Ali Ege (“the applicant”)", "Mehmet", "PERSON_NAME", "Mehmet Ali Ege"),
    ("the Moers District Court (Amtsgericht) held", "Moers District Court", "ORGANIZATION_NAME",
     "Moers District Court (Amtsgericht)"),
    ("The Paris office", "Paris", "LOCATION", "Paris"),  # "The" is not part of a name
    ("Then John I think left", "John", "PERSON_NAME", "John"),
    ("Turkish lawyers", "Turkish", "GROUP", "Turkish"),  # groups are not grown over words ...
    ("a Turkish national, Mr X", "Turkish", "GROUP", "Turkish national"),  # ... but nationality is kept
])
def test_extend_table(text, tagged, label, expected):
    span = max(extend(text, spans_of(text, tagged, label=label)), key=len)
    assert text[span.start:span.end] == expected


def test_import_does_not_load_spacy():
    import subprocess
    code = "import sys, veil.mask.entity_tagger, veil.mask.dlp; assert 'spacy' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.slow
def test_entity_tagger_with_real_spacy():
    from veil.mask.entity_tagger import EntityTaggerMasker

    m = EntityTaggerMasker()
    text = ("Angela Merkel visited Paris with officials from Siemens. Later, merkel flew home; "
            "the Germans were pleased.")
    found = {(text[s.start:s.end], s.label) for s in m.detect(text)}
    assert ("Angela Merkel", "PERSON_NAME") in found and ("Paris", "LOCATION") in found
    assert all(s.source == "entity_tagger" for s in m.detect(text))
    batch = m.detect_batch(["Call Microsoft in Seattle.", "", "nothing here"])
    assert len(batch) == 3 and batch[1] == [] and batch[0]
    only_people = EntityTaggerMasker(labels="PERSON")  # as `--set entity_tagger.labels=PERSON` gives it
    assert {s.label for s in only_people.detect(text)} == {"PERSON_NAME"}
    with pytest.raises(VeilError):
        EntityTaggerMasker(labels=["PEOPLE"])
    with pytest.raises(VeilError):
        EntityTaggerMasker(model="no_such_model_xyz")
