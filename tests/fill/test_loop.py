"""The shared fill loop (CandidateFiller) with fake back-ends: merging, order, strategies, types, privacy."""

from __future__ import annotations

import re

import pytest

from veil.errors import VeilError
from veil.fill.base import document_slots
from veil.fill.loop import CandidateFiller
from veil.markers import find_markers
from veil.mask.placeholders import render
from veil.types import Document, MaskedDocument, Placeholder, Span


class ListFiller(CandidateFiller):
    """Proposes the same ranked list for every marker and records what it was shown."""

    def __init__(self, words, **kw):
        super().__init__(**kw)
        self.words = list(words)
        self.seen: list[tuple[str, tuple[int, int]]] = []
        self.calls = 0

    def propose_batch(self, texts, targets, k):
        self.calls += 1
        self.seen.extend(zip(texts, targets))
        return [[(w, -i) for i, w in enumerate(self.words[:k])] for _ in texts]


class CountingFiller(CandidateFiller):
    """Proposes ``w<N>`` where N counts the words left of the marker: a left-context-dependent model."""

    def propose_batch(self, texts, targets, k):
        return [[(f"w{len(t[:s].split())}c{i}", -i) for i in range(k)] for t, (s, _) in zip(texts, targets)]


class EchoFiller(CandidateFiller):
    """Proposes the words of the text it is shown: it would copy any original word that leaked in."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.shown: list[str] = []

    def propose_batch(self, texts, targets, k):
        self.shown.extend(texts)
        out = []
        for t in texts:
            words = [w for w in re.findall(r"[A-Za-z]+", t) if w not in ("MASK", "PERSON", "NAME", "WORD")]
            out.append([(w, 0.0) for w in (words or ["x"])][:k])
        return out


def masked(text: str, words: list[str], style: str = "mask", label: str = "WORD", source: str = "allow_list",
           doc_id: str = "d") -> MaskedDocument:
    spans = [Span(m.start(), m.end(), label, source)
             for w in words for m in re.finditer(r"\b" + re.escape(w) + r"\b", text)]
    return render(Document(doc_id, text), spans, style)


def test_consecutive_masks_are_merged_into_one_marker():
    doc = masked("we met John Smith in town", ["John", "Smith"])
    assert doc.text == "we met [MASK] [MASK] in town"
    f = ListFiller(["Bob"])
    out = f.fill([doc])[0]
    assert out.text == "we met Bob in town"
    assert len(out.substitutions) == 1 and out.substitutions[0].placeholder == "[MASK] [MASK]"
    assert f.calls == 1 and f.seen[0][1] == (7, 20)


def test_non_adjacent_masks_are_not_merged_and_merge_can_be_turned_off():
    doc = masked("John and Smith", ["John", "Smith"])
    assert len(document_slots(doc)) == 2
    doc2 = masked("John Smith", ["John", "Smith"])
    assert len(document_slots(doc2, merge_masks=False)) == 2


def test_markers_are_filled_left_to_right_one_at_a_time():
    doc = masked("alpha beta gamma delta", ["alpha", "gamma", "delta"])
    f = ListFiller(["X"])
    f.fill([doc])
    shown = [t for t, _ in f.seen]
    assert shown == ["[MASK] beta [MASK] [MASK]", "X beta [MASK] [MASK]"]  # gamma delta merged


def test_left_context_model_sees_earlier_fills():
    doc = masked("a b c d e", ["b", "d"])
    out = CountingFiller().fill([doc])[0]
    assert out.text == "a w1c0 c w3c0 e"


def test_batched_steps_cover_every_document():
    docs = [masked(f"one two {i} three four", ["two", "four"], doc_id=str(i)) for i in range(5)]
    f = ListFiller(["Y"])
    out = f.fill(docs)
    assert f.calls == 2  # step t fills the t-th marker of all five documents at once
    assert all(d.text.startswith("one Y ") and d.text.endswith(" three Y") for d in out)


def test_topk_is_reproducible_per_seed_and_independent_of_batch_composition():
    words = [f"v{i}" for i in range(10)]
    docs = [masked(f"doc {i} has ONE and TWO", ["ONE", "TWO"], doc_id=f"id{i}") for i in range(30)]
    a = ListFiller(words, strategy="topk", seed=3).fill(docs)
    b = ListFiller(words, strategy="topk", seed=3).fill(docs)
    c = ListFiller(words, strategy="topk", seed=4).fill(docs)
    alone = ListFiller(words, strategy="topk", seed=3, group_size=1).fill(docs[7:8])
    assert [d.text for d in a] == [d.text for d in b]
    assert [d.text for d in a] != [d.text for d in c]
    assert alone[0].text == a[7].text
    assert len({s.substitute for d in a for s in d.substitutions}) > 5  # uniform among the top K


def test_top1_takes_the_best_candidate():
    out = ListFiller(["best", "second"], strategy="top1").fill([masked("a b", ["b"])])[0]
    assert out.text == "a best"


def test_topk_avoids_the_techniques_word_list():
    words = ["the", "house", "zorbl", "car", "quux"]
    avoid = {"allow_list": {"the", "house", "car"}}
    docs = [masked(f"{i} is ONE", ["ONE"], doc_id=str(i)) for i in range(40)]
    out = ListFiller(words, strategy="topk", k=5, avoid=avoid).fill(docs)
    subs = {s.substitute for d in out for s in d.substitutions}
    assert subs == {"zorbl", "quux"}
    # a technique without a list is not constrained
    docs_dlp = [masked(f"{i} is ONE", ["ONE"], source="dlp", doc_id=str(i)) for i in range(40)]
    subs2 = {s.substitute for d in ListFiller(words, strategy="topk", k=5, avoid=avoid).fill(docs_dlp)
             for s in d.substitutions}
    assert {"the", "house", "car"} & subs2


def test_topk_keeps_a_draw_when_every_candidate_is_on_the_list():
    out = ListFiller(["the", "a"], strategy="topk", k=2, avoid={"allow_list": {"the", "a"}}).fill(
        [masked("x ONE", ["ONE"])])[0]
    assert out.substitutions[0].substitute in {"the", "a"}


def test_top1_avoidance_is_opt_in():
    doc = masked("x ONE", ["ONE"])
    avoid = {"allow_list": {"the"}}
    assert ListFiller(["the", "zorbl"], avoid=avoid).fill([doc])[0].text == "x the"
    assert ListFiller(["the", "zorbl"], avoid=avoid, avoid_in_top1=True).fill([doc])[0].text == "x zorbl"


def test_default_avoid_lists_come_from_the_maskers():
    from veil.mask.allow_list import AllowListMasker

    f = ListFiller(["the"], strategy="topk")
    assert f.avoid_list("allow_list") == AllowListMasker().vocabulary
    assert f.avoid_list("entity_tagger") == frozenset()
    from veil.fill.base import default_avoid

    assert default_avoid("allow_list") == AllowListMasker().vocabulary and default_avoid("dlp") == frozenset()


def test_numbered_placeholders_are_consistent_within_and_independent_across_documents():
    text = "Alice met Bob. Later Alice called Bob and Carol."
    names = ["Zed", "Yan", "Xia", "Wes", "Vic", "Uma", "Tom", "Sam", "Roy", "Qin"]
    docs = [masked(text, ["Alice", "Bob", "Carol"], style="numbered", label="CUSTOM", doc_id=f"d{i}")
            for i in range(25)]
    assert docs[0].text == "[CUSTOM_1] met [CUSTOM_2]. Later [CUSTOM_1] called [CUSTOM_2] and [CUSTOM_3]."
    out = ListFiller(names, strategy="topk").fill(docs)
    firsts = []
    for d in out:
        by_key: dict[str, set[str]] = {}
        for s in d.substitutions:
            by_key.setdefault(s.key, set()).add(s.substitute)
            assert d.text[s.start:s.end] == s.substitute
        assert all(len(v) == 1 for v in by_key.values())  # same substitute at every occurrence
        values = [next(iter(v)) for v in by_key.values()]
        assert len(set(values)) == 3  # different keys get different substitutes
        firsts.append(values[0])
    assert len(set(firsts)) > 3  # drawn anew in every document


def test_format_labels_get_faker_values_of_their_type():
    doc = MaskedDocument("d", "mail [EMAIL_ADDRESS] or call [PHONE_NUMBER] from [IP_ADDRESS]",
                         (), "typed")
    f = ListFiller(["word"])
    out = f.fill([doc])[0]
    subs = {s.label: s.substitute for s in out.substitutions}
    assert re.fullmatch(r"[^@\s]+@[^@\s]+\.\w+", subs["EMAIL_ADDRESS"])
    assert re.fullmatch(r"\d{3}-\d{3}-\d{4}", subs["PHONE_NUMBER"])
    assert re.fullmatch(r"\d+\.\d+\.\d+\.\d+", subs["IP_ADDRESS"])
    assert f.calls == 0  # no model is asked for formats


def test_person_placeholder_gets_a_drawn_name_without_asking_the_model():
    from veil.gazetteer import first_names, last_names

    doc = MaskedDocument("d", "Yesterday [PERSON_NAME] said that she would visit her mother.", (), "typed")
    f = ListFiller(["the", "yesterday", "michael", "table"])
    first, last = f.fill([doc])[0].substitutions[0].substitute.split()  # no shape recorded: first + last
    assert first in first_names("f") + first_names("m") and last in last_names()
    assert f.calls == 0


def test_with_entities_propose_the_model_names_a_person_spacy_tags_as_person():
    pytest.importorskip("spacy")
    doc = MaskedDocument("d", "Yesterday [PERSON_NAME] said that she would visit her mother.", (), "typed")
    out = ListFiller(["the", "yesterday", "michael", "table"], entities="propose").fill([doc])[0]
    assert out.text.startswith("Yesterday Michael said")
    # no candidate is a person: a drawn name instead of a plain word
    out2 = ListFiller(["the", "table"], entities="propose").fill([doc])[0]
    sub = out2.substitutions[0].substitute
    assert sub not in ("the", "table", "The", "Table") and sub[0].isupper()


def test_mask_style_ignores_labels_unless_types_on():
    doc = masked("write to bob@example.com today", ["bob@example.com"], label="EMAIL_ADDRESS", source="dlp")
    assert ListFiller(["him"]).fill([doc])[0].text == "write to him today"
    assert "@" in ListFiller(["him"], types="on").fill([doc])[0].text


def test_no_marker_left_and_escaped_lookalikes_restored():
    text = "I typed [MASK] and [PERSON_NAME_1] and [\\MASK] then Zorbl"
    doc = masked(text, ["Zorbl"], style="numbered", label="CUSTOM")
    assert "[\\MASK]" in doc.text and len(doc.placeholders) == 1
    out = ListFiller(["Quux"]).fill([doc])[0]
    assert out.text == "I typed [MASK] and [PERSON_NAME_1] and [\\MASK] then Quux"
    s = out.substitutions[0]
    assert out.text[s.start:s.end] == "Quux"


def test_substitute_that_would_forge_a_marker_is_skipped():
    doc = MaskedDocument("d", "see [[ORG]] now", (), "typed")
    out = ListFiller(["MASK", "acme"], types="off").fill([doc])[0]
    assert out.text == "see [acme] now"
    assert not find_markers(out.text.replace("[acme]", ""))


def test_privacy_boundary_rejects_documents():
    with pytest.raises(TypeError, match="MaskedDocument"):
        ListFiller(["x"]).fill([Document("d", "John lives in Paris")])


def test_masked_words_never_reach_the_model_or_the_output():
    secrets = ["Zebediah", "Quimby", "Xanthopolis"]
    docs = [masked(f"Zebediah Quimby from Xanthopolis wrote letter {i} to his aunt", secrets, doc_id=str(i))
            for i in range(5)]
    f = EchoFiller(strategy="topk")
    out = f.fill(docs)
    assert f.shown, "the back-end was called"
    for blob in f.shown + [d.text for d in out] + [s.substitute for d in out for s in d.substitutions]:
        assert not any(w in blob for w in secrets)


def test_placeholders_that_do_not_match_the_text_are_refused():
    doc = MaskedDocument("d", "a [MASK] b", (Placeholder(0, 1, "WORD", "MASK#0", "allow_list"),), "mask")
    with pytest.raises(VeilError, match="do not match"):
        ListFiller(["x"]).fill([doc])


def test_wrong_number_of_proposals_is_an_error():
    class Broken(CandidateFiller):
        def propose_batch(self, texts, targets, k):
            return []

    with pytest.raises(VeilError, match="returned 0 lists"):
        Broken().fill([masked("a b", ["b"])])


def test_bad_options_are_refused():
    with pytest.raises(VeilError):
        ListFiller(["x"], strategy="top3")
    with pytest.raises(VeilError):
        ListFiller(["x"], k=0)


def test_documents_without_markers_pass_through():
    doc = MaskedDocument("d", "nothing [\\MASK] here", (), "mask")
    f = ListFiller(["x"])
    out = f.fill([doc])[0]
    assert out.text == "nothing [MASK] here" and out.substitutions == () and f.calls == 0


class ScoredFiller(CandidateFiller):
    """Proposes fixed (word, log-probability) pairs for every marker."""

    def __init__(self, ranked, **kw):
        super().__init__(**kw)
        self.ranked = list(ranked)

    def propose_batch(self, texts, targets, k):
        return [self.ranked[:k] for _ in texts]


def test_sample_follows_the_models_probabilities_and_avoids_the_list():
    import math
    from collections import Counter

    ranked = [("the", math.log(0.5)), ("zorbl", math.log(0.3)), ("quux", math.log(0.15)), ("blat", math.log(0.05))]
    docs = [masked(f"{i} is ONE", ["ONE"], doc_id=str(i)) for i in range(3000)]
    avoid = {"allow_list": {"the"}}
    out = ScoredFiller(ranked, strategy="sample", k=4, avoid=avoid).fill(docs)
    n = Counter(s.substitute for d in out for s in d.substitutions)
    assert "the" not in n  # avoided
    # renormalised among the rest: 0.3 / 0.5, 0.15 / 0.5, 0.05 / 0.5
    for w, p in (("zorbl", 0.6), ("quux", 0.3), ("blat", 0.1)):
        assert abs(n[w] / 3000 - p) < 0.035, (w, n[w])
    # reproducible per seed, independent of batching
    again = ScoredFiller(ranked, strategy="sample", k=4, avoid=avoid, group_size=7).fill(docs)
    assert [d.text for d in again] == [d.text for d in out]
    # a low temperature approaches Top-1 among the allowed words; K bounds the pool
    cold = ScoredFiller(ranked, strategy="sample", k=4, avoid=avoid, temperature=0.05).fill(docs[:200])
    assert {s.substitute for d in cold for s in d.substitutions} == {"zorbl"}
    short = ScoredFiller(ranked, strategy="sample", k=2, avoid=avoid).fill(docs[:200])
    assert {s.substitute for d in short for s in d.substitutions} == {"zorbl"}
    with pytest.raises(VeilError, match="temperature"):
        ScoredFiller(ranked, strategy="sample", temperature=0)


def test_choose_sample_edge_cases():
    import random

    from veil.fill.strategies import choose, choose_sample

    assert choose_sample([], [], 10, random.Random(0)) is None
    # every candidate on the list: drawn among all of them
    assert choose_sample(["the", "a"], [0.0, -50.0], 10, random.Random(0), avoid={"the", "a"}) == "the"
    with pytest.raises(ValueError, match="score"):
        choose("sample", ["a", "b"], 2, random.Random(0))


def test_match_case_lowercases_substitutes_in_lowercase_documents_only():
    lower = masked("the board named ONE chairman", ["ONE"], doc_id="a")
    upper = masked("The board named ONE chairman", ["ONE"], doc_id="b")
    out = ListFiller(["Smith", "jones"], match_case=True).fill([lower, upper])
    assert out[0].text == "the board named smith chairman"
    assert out[1].text == "The board named Smith chairman"
    assert ListFiller(["Smith"]).fill([lower])[0].text == "the board named Smith chairman"  # off by default


def test_match_case_lower_lowercases_where_markup_has_capitals():
    """PTB's number token ``N`` is a capital in a lower-cased corpus: ``match_case: lower`` lower-cases every
    substitute, a model's word and a typed draw alike; ``true`` reads the ``N`` as a cased document."""
    doc = masked("mr. ONE earned N million", ["ONE"], doc_id="a")
    assert ListFiller(["Smith"], match_case=True).fill([doc])[0].text == "mr. Smith earned N million"
    assert ListFiller(["Smith"], match_case="lower").fill([doc])[0].text == "mr. smith earned N million"
    typed = masked("mr. ONE earned N million", ["ONE"], label="PERSON_NAME", source="entity_tagger", doc_id="a")
    drawn = ListFiller(["Smith"], types="on", match_case="lower").fill([typed])[0].text
    cased = ListFiller(["Smith"], types="on", match_case=True).fill([typed])[0].text
    name = cased[len("mr. "):-len(" earned N million")]
    assert name != name.lower() and name.lower() != "smith"  # a drawn name, not the model's proposal
    assert drawn == f"mr. {name.lower()} earned N million"  # the same draw, lower-cased
    with pytest.raises(VeilError, match="match_case"):
        ListFiller(["Smith"], match_case="upper")
