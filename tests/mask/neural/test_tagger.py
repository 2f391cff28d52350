"""The neural entity tagger: decoding word-piece labels into spans, and a tiny trained model behind the masker."""

from __future__ import annotations

from pathlib import Path

import pytest

from veil.errors import VeilError
from veil.mask.neural.tagger import NeuralTaggerMasker, widen


KINDS = ("LOC", "ORG", "PER")


def _rows(*pieces):
    """by_type rows from (P(O), type, its probability) per piece; the rest spread over the other types."""
    import numpy as np

    out = []
    for p_o, kind, p in pieces:
        row = [p_o] + [(1 - p_o - p) / 2] * len(KINDS)
        row[1 + KINDS.index(kind)] = p
        out.append(row)
    return np.array(out, dtype=np.float32)


def _decode(text, offsets, pieces, limit=0.15, name_limit=0.0):
    import numpy as np

    from veil.mask.neural.tagger import decode_words

    return [(text[s:e], k) for s, e, k, _ in
            decode_words(text, offsets, _rows(*pieces), np.full(len(KINDS), limit, np.float32), KINDS, name_limit)]


def test_a_word_takes_one_type_from_all_its_pieces():
    # "Vito" "rov" "ić": an address to its first piece, a person to the word
    text = "Amadeo Vitorovic from"
    offsets = [(0, 6), (7, 11), (11, 14), (14, 16), (17, 21)]
    pieces = [(0.01, "PER", 0.9), (0.09, "LOC", 0.5), (0.01, "PER", 0.9), (0.04, "PER", 0.8), (0.99, "ORG", 0.0)]
    assert _decode(text, offsets, pieces) == [("Amadeo Vitorovic", "PER")]


def test_one_piece_below_the_threshold_makes_its_word_an_entity():
    text = "said lepisto then"
    offsets = [(0, 4), (5, 8), (8, 10), (10, 12), (13, 17)]
    pieces = [(0.99, "PER", 0.0), (0.10, "PER", 0.8), (0.59, "PER", 0.3), (0.40, "PER", 0.5), (0.99, "PER", 0.0)]
    assert _decode(text, offsets, pieces) == [("lepisto", "PER")]
    # sentence punctuation after a word is a word of its own; special tokens (no characters) are skipped
    assert _decode("todd: hi", [(0, 0), (0, 4), (4, 5), (6, 8)],
                   [(0.99, "PER", 0.0), (0.05, "PER", 0.9), (0.99, "PER", 0.0), (0.99, "ORG", 0.0)]) == [("todd", "PER")]


def test_words_of_another_type_or_outside_break_a_run():
    text = "john smith in paris"
    offsets = [(0, 4), (5, 10), (11, 13), (14, 19)]
    pieces = [(0.01, "PER", 0.9), (0.02, "PER", 0.9), (0.99, "ORG", 0.0), (0.01, "LOC", 0.9)]
    assert _decode(text, offsets, pieces) == [("john smith", "PER"), ("paris", "LOC")]
    assert _decode("o o", [(0, 1), (2, 3)], [(0.9, "PER", 0.1), (0.9, "PER", 0.1)]) == []


@pytest.mark.parametrize("word, found", [
    ("melanie", True),  # a first name on the lists
    ("vasquez's", True),  # a last name, with its possessive
    ("sulphur", False),  # read as a person, but no name
    ("young", False),  # a surname, but an everyday word first ("i guess he's young")
])
def test_the_name_lists_back_a_persons_reading_between_the_thresholds(word, found):
    text = f"like this {word} you"
    s = text.index(word)
    offsets = [(0, 4), (5, 9), (s, s + len(word)), (s + len(word) + 1, len(text))]
    pieces = [(0.99, "PER", 0.0), (0.99, "PER", 0.0), (0.3, "PER", 0.6), (0.99, "ORG", 0.0)]
    assert _decode(text, offsets, pieces) == []  # above the person threshold
    assert _decode(text, offsets, pieces, name_limit=0.5) == ([(word, "PER")] if found else [])
    # the lists never start a reading: a name the model reads as an organisation is left to the thresholds
    org = [pieces[0], pieces[1], (0.3, "ORG", 0.6), pieces[3]]
    assert _decode(text, offsets, org, name_limit=0.5) == []


def test_a_run_that_cannot_be_its_type_is_read_with_the_next_type():
    from veil.mask.neural.hygiene import valid

    # "at acme": an e-mail to the model, but no e-mail can be without "@" or "at ... dot"
    text = "spoke to her at acme corporation today"
    offsets = [(m.start(), m.end()) for m in __import__("re").finditer(r"\S+", text)]
    o = (0.99, "PER", 0.0)
    rows = _rows(o, o, o, (0.05, "LOC", 0.5), (0.05, "LOC", 0.5), (0.05, "ORG", 0.9), o)
    email = __import__("numpy").zeros((len(offsets), 1), dtype="float32")
    email[3:5, 0] = 0.9  # "at" and "acme" read as an e-mail first, a place second
    import numpy as np

    from veil.mask.neural.tagger import decode_words
    kinds = KINDS + ("EMAIL",)
    by_type = np.concatenate([rows, email], axis=1)
    limit = np.full(len(kinds), 0.15, np.float32)
    plain = decode_words(text, offsets, by_type, limit, kinds)
    assert [(text[s:e], k) for s, e, k, _ in plain] == [("at acme", "EMAIL"), ("corporation", "ORG")]
    again = decode_words(text, offsets, by_type, limit, kinds, valid=valid)
    assert [(text[s:e], k) for s, e, k, _ in again] == [("at acme", "LOC"), ("corporation", "ORG")]


@pytest.mark.parametrize("text, found", [
    ("I miss Didga now", True),  # a capital inside a sentence of cased text backs a name of any kind
    ("Didga is here now", False),  # a sentence's first word has its capital anyway
    ("i miss didga now", False),  # no capitals in the text: nothing to read
    ("I MISS DIDGA NOW", False),
    ("I miss Pizza now", False),  # an everyday word
])
def test_a_capital_inside_a_sentence_backs_a_name(text, found):
    word = next(w for w in text.split() if w.lower() in ("didga", "pizza"))
    s = text.index(word)
    offsets = [(m.start(), m.end()) for m in __import__("re").finditer(r"\S+", text)]
    pieces = [(0.3, "ORG", 0.6) if o == (s, s + len(word)) else (0.99, "PER", 0.0) for o in offsets]
    assert _decode(text, offsets, pieces, name_limit=0.5) == ([(word, "ORG")] if found else [])


@pytest.mark.parametrize("text, start, end, expected", [
    ("gonzalez here", 3, 6, "gonzalez"),
    ("o'brien said", 0, 1, "o'brien"),
    ("john smith", 0, 10, "john smith"),
    ("call bob.", 5, 8, "bob"),
    ("zip 94110, card", 4, 10, "94110"),  # sentence punctuation at either end is left out
    ("say “anna” now", 4, 10, "anna"),
    ("1111, expiring", 0, 5, "1111"),
])
def test_widen_to_whole_words(text, start, end, expected):
    s, e = widen(text, start, end)
    assert text[s:e] == expected


@pytest.fixture(scope="module")
def tiny_detector(tmp_path_factory) -> Path:
    from veil.mask.neural.train import DetectorTrainConfig, build_model, train
    from veil.mask.neural.data import TYPES, Example

    out = tmp_path_factory.mktemp("det") / "tiny"
    names = ("john", "mary", "peter", "anna", "lucas", "emma")
    examples = [Example(f"my name is {n} thanks", ((11, 11 + len(n), "PER"),), frozenset(TYPES), "toy")
                for n in names] * 6
    config = DetectorTrainConfig(layers=2, steps=40, batch_size=6, lr=3e-3, warmup=3, dialogues=0, things=0,
                                 max_length=32, threads=1, log_every=60)
    tiny = {"vocab_size": 30522, "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2,
            "max_position_embeddings": 130}
    import torch

    torch.manual_seed(0)  # the model's initial weights: the test must not depend on the process's random seed
    train(config, out, None, model=build_model(2, config_overrides=tiny), extra=examples)
    return out


@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_masker_finds_what_the_tiny_model_learned(tiny_detector, precision):
    masker = NeuralTaggerMasker(model=str(tiny_detector), precision=precision, batch_size=2)
    texts = ["my name is mary thanks", "", "my name is mary thanks", "My name is John thanks"]
    out = masker.detect_batch(texts)
    assert [texts[0][s.start:s.end] for s in out[0]] == ["mary"]
    assert out[0] == out[2] and out[1] == []
    assert [texts[3][s.start:s.end] for s in out[3]] == ["John"]  # uncased: capitals change nothing
    assert {s.label for s in out[0]} == {"PERSON_NAME"} and out[0][0].source == "neural_tagger"


@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_spans_do_not_depend_on_the_batch(tiny_detector, precision):
    """A document's spans must not depend on which other documents share its batch (int8 too: its
    activation scales are calibrated once, not measured per batch)."""
    import inspect

    texts = [f"my name is {n} thanks and " + "so on " * k for k, n in enumerate(["mary", "john", "emma"] * 3)]
    one = [NeuralTaggerMasker(model=str(tiny_detector), precision=precision, batch_size=1).detect(t) for t in texts]
    assert NeuralTaggerMasker(model=str(tiny_detector), precision=precision, batch_size=64).detect_batch(texts) == one
    assert inspect.signature(NeuralTaggerMasker).parameters["precision"].default == "int8"


def test_masker_cuts_long_texts_into_windows(tiny_detector):
    """A model that calls every piece B-PER: every name of a text ten windows long comes back, in place (the
    commas keep them apart; edge words such as "my" or "thanks" would be trimmed off)."""
    import numpy as np

    from veil.mask.neural.train import LABELS

    def every_piece_a_person(ids, mask):
        logits = np.zeros((*ids.shape, len(LABELS)), dtype=np.float32)
        logits[..., LABELS.index("B-PER")] = 1.0
        return logits

    masker = NeuralTaggerMasker(model=str(tiny_detector), precision="fp32", threads=1, max_length=8, batch_size=3)
    masker.logits = every_piece_a_person
    names = ["anna", "maria", "lopez", "garcia", "okafor"] * 10
    text = ", ".join(names)
    assert [text[s.start:s.end] for s in masker.detect(text)] == names


def test_masker_options_are_checked(tiny_detector):
    with pytest.raises(VeilError, match="precision"):
        NeuralTaggerMasker(model=str(tiny_detector), precision="int4")
    with pytest.raises(VeilError, match="unknown type"):
        NeuralTaggerMasker(model=str(tiny_detector), types="PER,NAME")
    only_loc = NeuralTaggerMasker(model=str(tiny_detector), types="LOC", threads=1)
    assert only_loc.detect("my name is mary thanks") == []
    with pytest.raises(VeilError, match="register"):
        NeuralTaggerMasker(model=str(tiny_detector), register="speech")


def test_register_picks_the_thresholds(tiny_detector):
    """A short text is conversation by default; ``register="written"`` gives it the written thresholds."""
    text = "we saw mary there thanks"  # (no naming context: "my name is mary" is a name whatever the model says)
    picked = {}
    for register in ("auto", "written", "conversation"):
        masker = NeuralTaggerMasker(model=str(tiny_detector), register=register, name_threshold=0.0)
        masker.thresholds = {t: 1e-9 for t in masker.thresholds}  # conversation: nothing is an entity
        masker.written_thresholds = {t: 1.0 for t in masker.written_thresholds}  # written: every piece is
        picked[register] = bool(masker.detect(text))
    assert picked == {"auto": False, "written": True, "conversation": False}


@pytest.mark.slow
@pytest.mark.parametrize("text, expected", [
    ("hi this is john smith calling about my account", ["john smith"]),
    ("Hi, this is John Smith calling about my account.", ["John Smith"]),
    ("yeah i spoke to maria gonzalez at acme corporation in chicago last week",
     ["maria gonzalez", "acme corporation", "chicago"]),
])
def test_shipped_detector_finds_names_in_any_case(text, expected):
    """The weights in veil/data/detector: names, organisations and places with or without capitals."""
    spans = NeuralTaggerMasker().detect(text)
    surfaces = [text[s.start:s.end] for s in spans]
    for e in expected:
        assert any(e in s or s in e and len(s) > 3 for s in surfaces), (e, surfaces)


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_shipped_detector_spans_do_not_depend_on_the_batch(precision):
    """The shipped int8 copy has static activation scales: batch 1 and batch 64 give the same spans."""
    texts = ["hi this is john smith calling about my account", "My card is 4111 1111 1111 1111.",
             "yeah i spoke to maria gonzalez at acme corporation in chicago last week", "uh-huh",
             "my zip is nine four one one oh and my email is j smith at gmail dot com"] * 3
    alone = [NeuralTaggerMasker(precision=precision, batch_size=1).detect(t) for t in texts]
    assert NeuralTaggerMasker(precision=precision, batch_size=64).detect_batch(texts) == alone
