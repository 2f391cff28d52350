"""A person's name found in one record of a group is masked in every record of that group, never in another."""

from __future__ import annotations

from veil.mask.base import Masker
from veil.mask.engine import MaskingEngine
from veil.mask.propagation import propagate_group, propagate_parts
from veil.mask.placeholders import merge_spans
from veil.types import Document, Span


def _found(texts, spans):
    return [[(t[s.start:s.end], s.label) for s in sorted(sp, key=lambda x: x.start)] for t, sp in zip(texts, spans)]


CALL = ["Good morning.", "Hi, this is Hope Ashworth calling about my bill.", "Sure Hope, one moment.",
        "I hope so.", "ashworth is spelled a s h", "Thanks Hope, bye."]


def test_a_name_found_once_is_the_same_name_everywhere_in_the_call():
    spans = [[] for _ in CALL]
    spans[1] = [Span(12, 25, "PERSON_NAME", "neural_tagger", 0.9)]
    out = propagate_group(CALL, spans, ["c1"] * len(CALL), "neural_tagger")
    assert _found(CALL, out) == [[], [("Hope Ashworth", "PERSON_NAME")], [("Hope", "PERSON_NAME")],
                                 [],  # "I hope so": the common word, as written, is no name
                                 [("ashworth", "PERSON_NAME")], [("Hope", "PERSON_NAME")]]


def test_it_never_crosses_calls_and_leaves_records_without_a_group_alone():
    texts = ["this is Hope Ashworth", "Hope, are you there?", "Hope, are you there?", "Hope, are you there?"]
    spans = [[Span(8, 21, "PERSON_NAME", "neural_tagger", 0.9)], [], [], []]
    out = propagate_group(texts, spans, ["a", "b", None, "a"], "neural_tagger")
    assert _found(texts, out) == [[("Hope Ashworth", "PERSON_NAME")], [], [], [("Hope", "PERSON_NAME")]]


def test_names_of_every_kind_travel_and_a_lower_case_common_word_alone_does_not():
    texts = ["this is will", "i will call", "we met in Paris", "Paris is nice", "my old Ford Taurus", "the taurus ran",
             "an amount", "four hundred"]
    spans = [[Span(8, 12, "PERSON_NAME", "t", 0.9)], [], [Span(10, 15, "LOCATION", "t", 0.9)], [],
             [Span(7, 18, "MISC", "t", 0.9)], [], [], [Span(0, 12, "MONEY", "t", 0.9)]]
    assert _found(texts, propagate_group(texts, spans, ["a"] * 8, "t")) == \
        [[("will", "PERSON_NAME")], [], [("Paris", "LOCATION")], [("Paris", "LOCATION")],
         [("Ford Taurus", "MISC")], [("taurus", "MISC")], [], [("four hundred", "MONEY")]]


def test_parts_and_spelled_acronyms_travel_as_written():
    texts = ["we live in New Hampshire", "hampshire pigs", "a new car", "I worked at T I", "T I's stock", "t i",
             "money for TI, here", "ti", "he is at IBM", "I B M hired", "i b m"]
    spans = [[Span(11, 24, "LOCATION", "t", 0.9)], [], [], [Span(12, 15, "ORGANIZATION_NAME", "t", 0.9)], [], [],
             [], [], [Span(9, 12, "ORGANIZATION_NAME", "t", 0.9)], [], []]
    assert _found(texts, propagate_group(texts, spans, ["a"] * 11, "t")) == \
        [[("New Hampshire", "LOCATION")], [("hampshire", "LOCATION")], [], [("T I", "ORGANIZATION_NAME")],
         [("T I", "ORGANIZATION_NAME")], [],
         [("TI", "ORGANIZATION_NAME")], [],  # spelled and joined are one acronym, in capitals
         [("IBM", "ORGANIZATION_NAME")], [("I B M", "ORGANIZATION_NAME")], [("i b m", "ORGANIZATION_NAME")]]


class _OneName(Masker):
    """Finds "Hope Ashworth" only; carries it over a group as the tagger does."""

    name = "one_name"

    def detect(self, text):
        i = text.find("Hope Ashworth")
        return [] if i < 0 else [Span(i, i + 13, "PERSON_NAME", self.name, 0.9)]

    def propagate_group(self, texts, spans, groups):
        return propagate_group(texts, spans, groups, self.name)


def test_the_engine_carries_names_over_a_documents_group():
    docs = [Document(id="1", text="This is Hope Ashworth.", group="call-1"),
            Document(id="2", text="Thanks, Hope.", group="call-1"),
            Document(id="3", text="Thanks, Hope.", group="call-2")]
    found = MaskingEngine([_OneName()]).detect(docs)
    assert [[d.text[s.start:s.end] for s in sp] for d, sp in zip(docs, found)] == [["Hope Ashworth"], ["Hope"], []]
    ungrouped = [Document(id=d.id, text=d.text) for d in docs]
    assert [len(sp) for sp in MaskingEngine([_OneName()]).detect(ungrouped)] == [1, 0, 0]


def test_a_name_only_partly_masked_where_it_is_said_again_is_masked_whole():
    texts = ["home cooked Tex-Mex", "real Tex-Mex Mexican", "a used Dodge Aries", "this Dodge Aries is"]
    spans = [[Span(12, 19, "ORGANIZATION_NAME", "t", 0.9)], [Span(9, 20, "ORGANIZATION_NAME", "t", 0.9)],
             [Span(7, 18, "MISC", "t", 0.9)], [Span(11, 16, "PERSON_NAME", "t", 0.9)]]
    out = propagate_group(texts, spans, ["a"] * 4, "t")
    found = [merge_spans(sp) for sp in out]
    assert _found(texts, found) == [[("Tex-Mex", "ORGANIZATION_NAME")], [("Tex-Mex Mexican", "ORGANIZATION_NAME")],
                                    [("Dodge Aries", "MISC")], [("Dodge Aries", "MISC")]]


def test_a_persons_group_travels_whole_never_by_its_parts():
    texts = ["the American people", "no American could", "a disabled person", "disabled access", "I'm disabled person"]
    spans = [[Span(4, 12, "DEMOGRAPHIC", "dlp", 0.9)], [], [Span(2, 17, "DEMOGRAPHIC", "dlp", 0.9)], [], []]
    assert _found(texts, propagate_group(texts, spans, ["a"] * 5, "dlp")) == \
        [[("American", "DEMOGRAPHIC")], [("American", "DEMOGRAPHIC")], [("disabled person", "DEMOGRAPHIC")], [],
         [("disabled person", "DEMOGRAPHIC")]]


def test_a_name_is_the_same_name_spelled():
    texts = ["On Candy,", "C a n d y.", "I like candy", "my name is Ashworth", "that's a-s-h-w-o-r-t-h", "A S H"]
    spans = [[], [Span(0, 9, "PERSON_NAME", "t", 0.9)], [], [Span(11, 19, "PERSON_NAME", "t", 0.9)], [], []]
    assert _found(texts, propagate_group(texts, spans, ["a"] * 6, "t")) == \
        [[("Candy", "PERSON_NAME")], [("C a n d y", "PERSON_NAME")], [],  # "candy", the word: as written only
         [("Ashworth", "PERSON_NAME")], [("a-s-h-w-o-r-t-h", "PERSON_NAME")], []]


def test_a_name_of_two_letters_and_a_word_in_capitals_travel_as_written():
    texts = ["he won Cy year", "supposedly the Cy,", "cy is short", "CY", "a cure for AIDS", "AIDS research",
             "first aids kit"]
    spans = [[Span(7, 9, "PERSON_NAME", "t", 0.9)], [], [], [], [Span(11, 15, "DEMOGRAPHIC", "dlp", 0.9)], [], []]
    assert _found(texts, propagate_group(texts, spans, ["a"] * 7, "t")) == \
        [[("Cy", "PERSON_NAME")], [("Cy", "PERSON_NAME")], [], [],
         [("AIDS", "DEMOGRAPHIC")], [("AIDS", "DEMOGRAPHIC")], []]  # a common word in capitals: as written


def test_an_age_an_occupation_and_a_date_travel_whole():
    texts = ["she's in her late sixties", "mother is late sixties now", "I was late", "a housewife", "housewife now",
             "she was teaching", "teaching is hard", "practice is on Monday night", "concerts every Monday night"]
    spans = [[Span(13, 25, "AGE", "dlp", 0.9)], [], [], [Span(2, 11, "OCCUPATION", "dlp", 0.9)], [],
             [Span(8, 16, "OCCUPATION", "dlp", 0.9)], [], [Span(15, 21, "DATE", "dlp", 0.9)], []]
    assert _found(texts, propagate_group(texts, spans, ["a"] * 9, "dlp")) == \
        [[("late sixties", "AGE")], [("late sixties", "AGE")], [],  # "late" alone is no age
         [("housewife", "OCCUPATION")], [("housewife", "OCCUPATION")],
         [("teaching", "OCCUPATION")], [],  # a lower-case everyday word alone is carried nowhere
         [("Monday", "DATE")], [("Monday", "DATE")]]


def test_the_dlp_masker_carries_what_it_found_over_a_call():
    from veil.mask.dlp import DLPMasker

    docs = [Document(id="1", text="I have confidence in the American people.", group="c"),
            Document(id="2", text="I think no American could stand for it.", group="c"),
            Document(id="3", text="I think no American could stand for it.", group="d")]
    plain = MaskingEngine([DLPMasker()]).detect([Document(id=d.id, text=d.text) for d in docs])
    assert [len(sp) for sp in plain] == [1, 0, 0]
    found = MaskingEngine([DLPMasker()]).detect(docs)
    assert [[d.text[s.start:s.end] for s in sp] for d, sp in zip(docs, found)] == [["American"], ["American"], []]


def test_the_rare_words_of_an_address_or_an_e_mail_travel_and_street_and_number_words_do_not():
    texts = ["a sixty-nine cougar", "the Cougar was fast", "nine cars", "42 Ashbury Lane", "on ashbury", "the lane",
             "mail maria dot lopez at gmail dot com", "Lopez here", "I use gmail"]
    spans = [[Span(2, 19, "STREET_ADDRESS", "dlp", 0.9)], [], [], [Span(0, 15, "STREET_ADDRESS", "dlp", 0.9)], [], [],
             [Span(5, 37, "EMAIL_ADDRESS", "dlp", 0.9)], [], []]
    assert _found(texts, propagate_parts(texts, spans, ["a"] * 9)) == \
        [[("sixty-nine cougar", "STREET_ADDRESS")], [("Cougar", "STREET_ADDRESS")], [],  # "nine": a number word
         [("42 Ashbury Lane", "STREET_ADDRESS")], [("ashbury", "STREET_ADDRESS")], [],  # "lane": the fill's own
         [("maria dot lopez at gmail dot com", "EMAIL_ADDRESS")], [("Lopez", "EMAIL_ADDRESS")],
         []]  # the provider names no one


def test_verify_looks_for_the_words_the_masking_carries():
    from veil.audit.verify_match import value_keys
    from veil.mask.propagation import _rare_words

    for value in ["sixty-nine cougar", "42 Ashbury Lane", "twelve Main Street"]:
        assert {k for k, kind in value_keys(value, "STREET_ADDRESS") if kind == "part"} == \
            set(_rare_words(value, "STREET_ADDRESS"))


class _Finds(Masker):
    """Finds one fixed stretch, with one label."""

    carries_groups = True

    def __init__(self, name, stretch, label):
        self.name, self.stretch, self.label = name, stretch, label

    def detect(self, text):
        i = text.find(self.stretch)
        return [] if i < 0 else [Span(i, i + len(self.stretch), self.label, self.name, 0.9)]


def test_the_engine_carries_the_words_of_a_value_only_the_merged_spans_make_whole():
    # the tagger reads "eighty Volvo" as a date (carried whole only), dlp "nineteen eighty" as a number: merged, the
    # value is "nineteen eighty Volvo", whose "Volvo" verify looks for elsewhere in the call
    docs = [Document(id="1", text="I found a nineteen eighty Volvo wagon.", group="c"),
            Document(id="2", text="I would prefer the Volvo, I think.", group="c"),
            Document(id="3", text="I would prefer the Volvo, I think.", group="d"),
            Document(id="4", text="the volvo [PERSON_NAME_1] there", group="c")]
    engine = MaskingEngine([_Finds("neural_tagger", "eighty Volvo", "DATE"),
                            _Finds("dlp", "nineteen eighty", "NUMBER")])
    found = engine.detect(docs)
    assert [[(d.text[s.start:s.end], s.label) for s in sp] for d, sp in zip(docs, found)] == \
        [[("nineteen eighty Volvo", "NUMBER")], [("Volvo", "NUMBER")], [], [("volvo", "NUMBER")]]
    kept = MaskingEngine(engine.maskers, exclude=["volvo"]).detect(docs)  # the never-mask list holds for it too
    assert [len(sp) for sp in kept] == [1, 0, 0, 0]

    class _Alone(_Finds):
        carries_groups = False

    alone = MaskingEngine([_Alone("neural_tagger", "eighty Volvo", "DATE"), _Alone("dlp", "nineteen eighty", "NUMBER")])
    assert [len(sp) for sp in alone.detect(docs)] == [1, 0, 0, 0]  # no masker carries over a call: nothing does


def test_a_lower_case_name_of_two_letters_travels_unless_it_is_a_common_word():
    texts = ["functions as a qw", "as if to a qw", "QW here", "this is jo", "tell jo", "we go to it", "go to bed"]
    spans = [[Span(15, 17, "PERSON_NAME", "t", 0.9)], [], [], [Span(8, 10, "PERSON_NAME", "t", 0.9)], [],
             [Span(6, 8, "PERSON_NAME", "t", 0.9)], []]
    assert _found(texts, propagate_group(texts, spans, ["a"] * 7, "t")) == \
        [[("qw", "PERSON_NAME")], [("qw", "PERSON_NAME")], [], [("jo", "PERSON_NAME")], [("jo", "PERSON_NAME")],
         [("to", "PERSON_NAME")], []]  # "to" read as a name once is no name elsewhere


def test_a_number_of_three_digits_or_more_travels_whole_as_said():
    texts = ["money in a Four Oh One K.", "our four oh one k plans", "one k only", "call five five five", "at 555 then",
             "five dollars", "it was five dollars"]
    spans = [[Span(11, 24, "PHONE_NUMBER", "neural_tagger", 0.9)], [], [], [Span(5, 19, "PHONE_NUMBER", "dlp", 0.9)],
             [], [Span(0, 12, "MONEY", "dlp", 0.9)], []]
    assert _found(texts, propagate_parts(texts, spans, ["a"] * 7)) == \
        [[("Four Oh One K", "PHONE_NUMBER")], [("four oh one k", "PHONE_NUMBER")], [],
         [("five five five", "PHONE_NUMBER")], [],  # as said only: written in digits it is not carried
         [("five dollars", "MONEY")], []]  # two digits: an everyday phrase


def test_a_number_said_with_a_scale_word_counts_its_digits():
    from veil.mask.propagation import _digits

    assert [_digits(x) for x in ["THREE HUNDRED SIXTY-", "a hundred dollars", "five five five", "twenty five",
                                 "two thousand", "401k", "Four Oh One K"]] == [3, 0, 3, 1, 4, 3, 3]
