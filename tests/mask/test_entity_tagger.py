import re
import sys

import pytest

from veil.errors import VeilError
from veil.mask.entity_tagger import _trimmed, extend, propagate
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
    # a case form whose lower case is longer ("İ" -> "i̇") matches without being a key of its own
    ("the istanbul court and the İstanbul court", ["istanbul"], ["istanbul", "İstanbul"]),
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
    ("in the District of Famagusta", "Famagusta", "LOCATION", "District of Famagusta"),
    ("in the municipality of Härjedalen", "Härjedalen", "LOCATION", "municipality of Härjedalen"),
    ("born in London. The United Kingdom Government", "London", "LOCATION", "London"),  # not across a sentence
    ("from the United Kingdom", "the United Kingdom", "LOCATION", "United Kingdom"),  # the article is dropped
    ("met Anna Smith. Later Bob", "Anna", "PERSON_NAME", "Anna Smith"),  # grown to the sentence end, not past
    ("occupied northern Cyprus", "Cyprus", "LOCATION", "northern Cyprus"),
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


# --- long documents: cut into overlapping pieces, batches bounded in characters (issue 19 case 10) ------

class _FakeEnt:
    def __init__(self, start, end, label):
        self.start_char, self.end_char, self.label_ = start, end, label


class _FakeDoc:
    def __init__(self, ents):
        self.ents = ents


@pytest.mark.parametrize("text, tagged, label, expected", [
    ("Hi Tom, how are you", "Hi Tom", "PERSON_NAME", "Tom"),  # the greeting is no part of the name
    ("Thank you Anna Smith.", "Thank you Anna Smith", "PERSON_NAME", "Anna Smith"),
    ("born 03/14/1985 in Ohio", "03/14/1985", "ORGANIZATION_NAME", None),  # no letter: no organisation
    ("Hi there", "Hi", "PERSON_NAME", "Hi"),  # nothing left after the greeting: kept as tagged
])
def test_trimmed_table(text, tagged, label, expected):
    i = text.index(tagged)
    got = _trimmed(text, i, i + len(tagged), label)
    assert (text[got[0]:got[1]] if got else None) == expected


def test_a_greeting_does_not_grow_a_name():
    text = "Hi Tom, this is Sarah"
    assert [text[s.start:s.end] for s in extend(text, spans_of(text, "Tom"))] == ["Tom"]


class FakeNER:
    """Tags runs of capitalised words as PERSON (a local rule, as a windowed tagger); records batches."""

    def __init__(self):
        self.batches = []

    def pipe(self, texts, batch_size=1, n_process=1):
        texts = list(texts)
        for i in range(0, len(texts), batch_size):
            group = texts[i:i + batch_size]
            self.batches.append(sum(len(t) for t in group))
            for t in group:
                yield _FakeDoc([_FakeEnt(m.start(), m.end(), "PERSON")
                                for m in re.finditer(r"[A-Z][a-z]+(?: [A-Z][a-z]+)*", t)])


@pytest.fixture
def fake_tagger(monkeypatch):
    import veil.mask.entity_tagger as et

    ner = FakeNER()
    monkeypatch.setattr(et, "load_ner", lambda model: ner)
    return et, ner


def _long_text(n_words, seed=0):
    import random

    rng = random.Random(seed)
    words = ["the", "court", "held", "that", "Anna", "Maria", "Smith", "went", "to", "Oslo", "and",
             "wrote\n", "x.", "Jean Luc Picard"]
    return " ".join(rng.choice(words) for _ in range(n_words))


@pytest.mark.parametrize("size, overlap", [(200, 40), (500, 100), (64, 20)])
def test_chunk_pieces_own_every_character_once(size, overlap):
    from veil.mask.entity_tagger import chunk

    text = _long_text(800)
    pieces = chunk(text, size, overlap)
    assert pieces[0].own_start == 0 and pieces[-1].own_end == len(text)
    for a, b in zip(pieces, pieces[1:]):
        assert a.own_end == b.own_start
    for p in pieces:
        assert p.start <= p.own_start < p.own_end <= p.end and p.end - p.start <= size + overlap


@pytest.mark.parametrize("size, overlap", [(300, 60), (1000, 200)])
def test_chunked_tagging_equals_unsplit_tagging(fake_tagger, size, overlap):
    et, ner = fake_tagger
    texts = [_long_text(3000, seed) for seed in range(3)] + ["Short text by Anna Smith.", ""]
    whole = et.EntityTaggerMasker(chunk_chars=10**9, overlap_chars=0, max_batch_chars=10**9).detect_batch(texts)
    ner.batches.clear()
    cut = et.EntityTaggerMasker(chunk_chars=size, overlap_chars=overlap, max_batch_chars=4 * size).detect_batch(texts)
    assert cut == whole and any(whole)
    assert len(ner.batches) > 3 and max(ner.batches) <= 4 * size  # a batch never holds more than its character budget


def test_bad_chunk_options_are_errors(fake_tagger):
    et, _ = fake_tagger
    with pytest.raises(VeilError):
        et.EntityTaggerMasker(chunk_chars=100, overlap_chars=60)


@pytest.mark.slow
def test_chunked_tagging_equals_unsplit_on_tab_documents(shared_data):
    from veil.mask.entity_tagger import EntityTaggerMasker
    from veil.mask.gold import read_gold

    texts = [g.doc.text for g in read_gold(shared_data / "tab" / "tab_train_dev.jsonl", "tab")[:6]]
    whole = EntityTaggerMasker(chunk_chars=10**9, overlap_chars=0, max_batch_chars=10**9).detect_batch(texts)
    cut = EntityTaggerMasker(chunk_chars=3000, overlap_chars=400).detect_batch(texts)
    assert cut == whole
