import pytest

from veil.errors import InputError, VeilError
from veil.mask.allow_list import AllowListMasker
from veil.mask.vocab_threshold import VocabThresholdMasker


def masked(masker, text):
    return [text[s.start:s.end] for s in masker.detect(text)]


@pytest.mark.parametrize("text,expected", [
    ("The cat sat", ["sat"]),
    ("THE CAT, the Cat!", []),  # case-insensitive; punctuation is never a word
    ("don't vs don’t vs won't", ["vs", "vs", "won't"]),  # both apostrophes
    ("İstanbul cat Straße", ["İstanbul", "Straße"]),  # non-ASCII: offsets stay on the original
    ("", []),
    ("cat_dog 42", ["dog", "42"]),  # "_" separates words
])
def test_allow_list_table(text, expected):
    m = AllowListMasker(words=["the", "cat", "don't"])
    assert masked(m, text) == expected
    assert all(s.label == "WORD" and s.source == "allow_list" for s in m.detect(text))


@pytest.mark.parametrize("text,expected", [
    ("it do n't matter", ["it", "matter"]),  # PTB splits don't into do + n't: both pieces are listed
    ("ca n’t go", ["go"]),  # can't -> ca + n't, curly apostrophe too
    ("wo n't", ["wo"]),  # won't is not listed, so neither piece is
    ("n't", []),
])
def test_allow_list_lists_split_contraction_pieces(text, expected):
    m = AllowListMasker(words=["don't", "can't"])
    assert masked(m, text) == expected


def test_default_lists_keep_ptb_negation():
    assert masked(AllowListMasker(), "it is n't clear they do n't") == []
    assert masked(VocabThresholdMasker(), "it is n't clear they wo n't") == []


def test_allow_list_default_is_wordfreq_top_5000():
    m = AllowListMasker()
    assert "the" in m.vocabulary and "because" in m.vocabulary
    assert 5000 <= len(m.vocabulary) < 5200  # apostrophe variants added
    assert all(w == w.lower() for w in m.vocabulary)
    assert masked(m, "The applicant Zorblax lives in Tulsa.") == ["applicant", "Zorblax", "Tulsa"]


def test_allow_list_user_file_overrides(tmp_path):
    p = tmp_path / "allow.txt"
    p.write_text("# safe words\nhello\n\nWorld\n", encoding="utf-8")
    m = AllowListMasker(path=p)
    assert m.vocabulary == frozenset({"hello", "world"})
    assert masked(m, "Hello big world") == ["big"]


def test_word_list_errors(tmp_path):
    with pytest.raises(InputError):
        AllowListMasker(path=tmp_path / "missing.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n", encoding="utf-8")
    with pytest.raises(InputError):
        AllowListMasker(path=empty)
    with pytest.raises(VeilError):
        AllowListMasker(top_n=0)


def test_vocab_threshold_default_and_batch():
    m = VocabThresholdMasker()
    assert len(m.vocabulary) >= 10000 and "government" in m.vocabulary
    texts = ["The government lives in Tulsa.", "Zyxqv"]
    assert [[t[s.start:s.end] for s in spans] for t, spans in zip(texts, m.detect_batch(texts))] == \
        [["Tulsa"], ["Zyxqv"]]
    assert m.detect_batch(texts)[0][0].source == "vocab_threshold"


def test_vocab_threshold_from_corpus_and_counts(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat the dog\nthe cat bird\n", encoding="utf-8")
    m = VocabThresholdMasker(top_n=2, corpus=corpus)
    assert m.vocabulary == frozenset({"the", "cat"})
    counts = tmp_path / "counts.tsv"
    counts.write_text("apple 5\nbanana\t9\ncherry 1\n", encoding="utf-8")
    assert VocabThresholdMasker(top_n=2, counts=counts).vocabulary == frozenset({"banana", "apple"})


def test_vocab_threshold_errors(tmp_path):
    bad = tmp_path / "counts.tsv"
    bad.write_text("apple 5\nbanana many\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        VocabThresholdMasker(counts=bad)
    assert e.value.line == 2
    broken = tmp_path / "corpus.txt"
    broken.write_bytes(b"fine line\nbad \xff line\n")
    with pytest.raises(InputError) as e:
        VocabThresholdMasker(corpus=broken)
    assert e.value.line == 2
    with pytest.raises(VeilError):
        VocabThresholdMasker(corpus=broken, counts=bad)
