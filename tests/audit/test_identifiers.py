import pytest

from veil.audit.identifiers import (identifier_words, indirect_identifiers, ngrams, per_person_table,
                                    person_word_graph, sharing_table, summary)
from veil.errors import VeilError
from veil.types import Document

DOCS = [
    Document("1", "The cat sat on the mat.", person="ann"),
    Document("2", "The dog sat.", person="ann"),
    Document("3", "The cat ran, Vertebra!", person="bob"),
    Document("4", "the dog sat on a log", person="cat"),
]


def test_ngrams_do_not_cross_documents_and_respect_n():
    assert list(ngrams(["a", "b", "c"], 2)) == ["a", "b", "c", "a b", "b c"]
    g = person_word_graph(DOCS, max_n=2)
    assert "mat the" not in g.term_persons  # "mat." ends doc 1, "the" starts doc 2
    assert "sat on" in g.term_persons


def test_k2_words_used_by_one_person_only_lowercased():
    ind = indirect_identifiers(DOCS, k=2, max_n=1)
    assert ind == {"ann": {"mat"}, "bob": {"ran", "vertebra"}, "cat": {"a", "log"}}


def test_larger_k_adds_words_used_by_k_minus_one_persons():
    ind = indirect_identifiers(DOCS, k=3, max_n=1)
    # "cat" (ann, bob), "dog", "on", "sat" (ann, cat) are used by two persons
    assert ind["ann"] == {"mat", "cat", "dog", "on", "sat"}
    assert "the" not in ind["ann"]  # three persons


def test_bigrams_only_when_asked():
    one = indirect_identifiers(DOCS, k=2, max_n=1)
    assert all(" " not in t for ids in one.values() for t in ids)


def test_bigrams_semantics():
    two = indirect_identifiers(DOCS, k=2, max_n=2)
    assert "the cat" not in two["ann"]  # shared by ann and bob
    assert "dog sat" not in two["ann"]  # shared by ann and cat
    assert "cat sat" in two["ann"]
    assert "on a" in two["cat"] and "a log" in two["cat"]
    assert two["ann"] >= indirect_identifiers(DOCS, k=2, max_n=1)["ann"]


def test_graph_can_be_reused_for_smaller_n_not_larger():
    g = person_word_graph(DOCS, max_n=2)
    assert indirect_identifiers(g, max_n=1) == indirect_identifiers(DOCS, max_n=1)
    with pytest.raises(VeilError):
        indirect_identifiers(person_word_graph(DOCS), max_n=2)


def test_missing_person_and_bad_k_are_errors():
    with pytest.raises(VeilError, match="no person"):
        person_word_graph([Document("x", "hello")])
    with pytest.raises(VeilError):
        indirect_identifiers(DOCS, k=1)


def test_sharing_table_and_summary():
    g = person_word_graph(DOCS)
    rows = sharing_table(g)
    by_m = {r["persons"]: r for r in rows}
    # used by one person: mat, ran, vertebra, a, log -> 5 distinct, 5 occurrences
    assert by_m[1]["distinct_terms"] == 5 and by_m[1]["occurrences"] == 5
    assert rows[-1]["cum_share_distinct"] == pytest.approx(1.0)
    total_words = sum(len(d.text.split()) for d in DOCS)
    assert sum(r["occurrences"] for r in rows) == total_words
    ind = indirect_identifiers(g)
    people = {r["person"]: r for r in per_person_table(g, ind, {"ann": {"Mat"}, "bob": set(), "cat": set()})}
    assert people["ann"]["documents"] == 2 and people["ann"]["words"] == 9
    assert people["ann"]["indirect_also_direct"] == 1
    s = summary(g, ind, k=2)
    assert s["persons"] == 3 and s["distinct_words"] == 10
    assert s["share_distinct_words_one_person"] == pytest.approx(5 / 10)
    assert s["share_word_occurrences_one_person"] == pytest.approx(5 / total_words)


def test_identifier_words():
    assert identifier_words({"p": {"John Smith", "Acme-Corp"}}) == {"p": {"john", "smith", "acme", "corp"}}


# --- corpus readers and the CLI ----------------------------------------------------------------------------

def _switchboard(root):
    (root / "train").mkdir(parents=True)
    (root / "speakers").mkdir()
    (root / "speakers" / "call_con_tab.csv").write_text(
        "id_conv,id_caller,id_speaker,Unk_1\n2001,A,1020,x\n2001,B,1044,x\n2002,A,1044,x\n2002,B,1077,x\n")
    (root / "train" / "2001.txt").write_text(
        "A|Okay, I live in Dallas.|sd\nB|Uh-huh. My dog Rex|b\nA|Write me at al@example.com|sd\n")
    (root / "train" / "2002.txt").write_text("A|My dog barks.|sd\nB|Okay, okay.|b\n")
    return root


def read_switchboard(path):
    from veil.io.corpora import load_corpus

    return load_corpus(path, "switchboard", person_required=True)


def test_read_switchboard_persons_are_callers(tmp_path):
    docs = read_switchboard(_switchboard(tmp_path / "swb"))
    assert [(d.id, d.person, d.group) for d in docs] == [
        ("2001:A:1", "1020", "2001"), ("2001:B:2", "1044", "2001"), ("2001:A:3", "1020", "2001"),
        ("2002:A:1", "1044", "2002"), ("2002:B:2", "1077", "2002")]
    assert docs[1].text == "Uh-huh. My dog Rex"
    ind = indirect_identifiers(docs)
    # caller 1044 said "dog" in two conversations: still one person, so an identifier
    assert {"rex", "dog", "my"} <= ind["1044"] and "okay" not in ind["1020"]
    assert ind["1077"] == set()  # "okay" is shared with caller 1020


def test_read_switchboard_bad_line_and_unknown_side(tmp_path):
    from veil.errors import InputError

    root = _switchboard(tmp_path / "swb")
    (root / "train" / "2003.txt").write_text("A|hello|sd\n")
    with pytest.raises(InputError, match="2003"):
        read_switchboard(root)
    (root / "train" / "2003.txt").write_text("no separators\n")
    with pytest.raises(InputError, match="2003.txt:1"):
        read_switchboard(root)


def test_cli_identifiers_writes_tables_and_plot(tmp_path, capsys):
    import json

    from veil.cli import main

    root = _switchboard(tmp_path / "swb")
    out = tmp_path / "out"
    assert main(["audit", "identifiers", str(root / "train"), "--format", "switchboard", "--k", "2",
                 "--max-n", "2", "--masker", "dlp", "--out", str(out), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["persons"] == 3 and s["documents"] == 5 and s["max_n"] == 2 and s["k"] == 2
    assert s["direct_total"] == 1  # the DLP masker finds the email address only
    for name in ("per_person.csv", "sharing.csv", "sweep.csv", "summary.json", "identifiers.md", "identifiers.png"):
        assert (out / name).stat().st_size > 0
    assert "| persons | 3 |" in (out / "identifiers.md").read_text()


def test_cli_identifiers_sweep_over_k_and_n(tmp_path, capsys):
    import csv

    from veil.cli import main

    root = _switchboard(tmp_path / "swb")
    out = tmp_path / "out"
    assert main(["audit", "identifiers", str(root), "--format", "switchboard", "--no-direct",
                 "--sweep-k", "2,3", "--sweep-n", "2", "--out", str(out)]) == 0
    assert "| persons | 3 |" in capsys.readouterr().out
    rows = list(csv.DictReader(open(out / "sweep.csv")))
    assert [(r["k"], r["max_n"]) for r in rows] == [("2", "1"), ("3", "1"), ("2", "2"), ("3", "2")]
    totals = [int(r["indirect_total"]) for r in rows]
    assert totals[1] >= totals[0] and totals[2] > totals[0]  # larger k or n: more identifiers
    people = list(csv.DictReader(open(out / "per_person.csv")))
    assert "indirect_2gram" not in people[0]  # the headline stays at --max-n 1
