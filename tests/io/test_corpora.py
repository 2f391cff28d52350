"""Whole corpora in memory (veil/io/corpora.py): any registered format, gzipped text, person checks, selection."""

from __future__ import annotations

import gzip
import json

import pytest

from veil.errors import InputError
from veil.io.corpora import load_corpus, read_lines, select_documents
from veil.io.formats import Fields, detect_format
from veil.types import Document


def test_gzipped_text_reads_as_its_inner_format(tmp_path):
    path = tmp_path / "corpus.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("first line\n\n  second line  \n")
    assert detect_format(path) == "txt"
    assert [(d.id, d.text) for d in load_corpus(path)] == [("1", "first line"), ("2", ""), ("3", "  second line  ")]
    assert read_lines(path) == ["first line", "second line"]


def test_a_gold_format_gives_its_documents_with_persons_from_metadata(tmp_path):
    path = tmp_path / "tab.jsonl"
    rec = {"metadata": {"provenance": {"doc_id": "001-1", "applicant": "John Smith", "annotator": "a1"}},
           "text": "The applicant John Smith.", "dataset_type": "dev",
           "entities": []}
    path.write_text(json.dumps(rec) + "\n")
    [doc] = load_corpus(path, "tab", Fields(person="applicant"), person_required=True)
    assert doc.id == "001-1" and doc.person == "John Smith"
    with pytest.raises(InputError, match="no person"):
        load_corpus(path, "tab", person_required=True)


def test_person_required_and_empty_corpora_are_errors(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "hello", "who": "p1"}\n{"text": "again"}\n')
    assert [d.person for d in load_corpus(path, "jsonl", Fields(person="who"))] == ["p1", None]
    with pytest.raises(InputError, match="document 2 has no person"):
        load_corpus(path, "jsonl", Fields(person="who"), person_required=True)
    with pytest.raises(InputError, match="no such file"):
        load_corpus(tmp_path / "missing.jsonl", "tab")


def test_select_documents_skips_short_and_excluded_then_limits():
    docs = [Document(str(i), t) for i, t in enumerate(["a b c", "a", "x <unk> y", "d e f", "g h i", "j k l"])]
    picked = select_documents(iter(docs), min_words=2, exclude_containing=["<unk>"], skip=1, limit=2)
    assert [d.id for d in picked] == ["3", "4"]
