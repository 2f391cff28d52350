import pytest

from veil.markers import escape, find_markers, unescape
from veil.mask.placeholders import merge_spans, render
from veil.types import Document, Span


@pytest.mark.parametrize("text", [
    "plain text", "[MASK]", "[mask] and [MASK]", "[PERSON_NAME_1] said hi", "[\\MASK]", "[\\\\PERSON]",
    "a [b] c [Not_A_Marker] [X1]", "", "[[MASK]]", "\\[MASK]",
])
def test_escape_is_reversible_and_hides_lookalikes(text):
    esc = escape(text)
    assert unescape(esc) == text
    assert find_markers(esc) == []


def test_merge_keeps_strongest_label():
    spans = [Span(0, 4, "WORD", "allow_list"), Span(0, 9, "PERSON_NAME", "entity_tagger", 0.8),
             Span(20, 25, "WORD", "allow_list")]
    merged = merge_spans(spans)
    assert merged == [Span(0, 9, "PERSON_NAME", "entity_tagger", 1.0), Span(20, 25, "WORD", "allow_list")]


def test_numbered_same_entity_same_number_within_document_only():
    text = "Pam called Jim. Then pam called again from Dunder Mifflin."
    spans = [Span(0, 3, "PERSON_NAME", "t"), Span(11, 14, "PERSON_NAME", "t"),
             Span(21, 24, "PERSON_NAME", "t"), Span(43, 57, "ORGANIZATION_NAME", "t")]
    md = render(Document("d1", text), spans, "numbered")
    assert md.text == ("[PERSON_NAME_1] called [PERSON_NAME_2]. Then [PERSON_NAME_1] called again "
                       "from [ORGANIZATION_NAME_1].")
    other = render(Document("d2", "Jim is here."), [Span(0, 3, "PERSON_NAME", "t")], "numbered")
    assert other.text == "[PERSON_NAME_1] is here."  # numbering restarts: Jim is not _2 here
    for ph in md.placeholders:
        assert find_markers(md.text[ph.start:ph.end])


def test_mask_style_one_marker_per_token_and_user_markers_escaped():
    text = "I live in New York [MASK] ok"
    md = render(Document("d", text), [Span(10, 18, "LOCATION", "t")], "mask")
    assert md.text == "I live in [MASK] [MASK] [\\MASK] ok"
    assert len(md.placeholders) == 2
    assert [m[:2] for m in find_markers(md.text)] == [(p.start, p.end) for p in md.placeholders]


@pytest.mark.parametrize("style", ["mask", "typed", "numbered"])
def test_no_masked_surface_survives(style):
    text = "Call Alice Smith at alice@example.com, Alice Smith knows."
    spans = [Span(5, 16, "PERSON_NAME", "t"), Span(20, 37, "EMAIL_ADDRESS", "t"), Span(39, 50, "PERSON_NAME", "t")]
    md = render(Document("d", text), spans, style)
    for s in ("Alice", "Smith", "alice@example.com"):
        assert s not in md.text


def test_span_outside_document_is_an_error():
    with pytest.raises(ValueError):
        render(Document("d", "abc"), [Span(1, 9, "X", "t")])


def test_a_first_or_last_name_alone_and_a_title_keep_the_full_name_s_number():
    from veil.mask.placeholders import Numbering

    n = Numbering()
    keys = [n.key("PERSON_NAME", x) for x in ["Maria Lopez", "Maria", "Lopez", "Dr. John Smith", "John Smith",
                                               "Maria Gonzalez", "Sarah", "Sarah Connor", "Dr. Sarah Connor"]]
    assert keys == ["PERSON_NAME_1"] * 3 + ["PERSON_NAME_2"] * 2 + ["PERSON_NAME_3"] + ["PERSON_NAME_4"] * 3
    assert n.key("PERSON_NAME", "Gonzalez") == "PERSON_NAME_3"
    # two Marias with surnames: a lone "Maria" cannot say which, so it is someone of its own
    m = Numbering()
    assert [m.key("PERSON_NAME", x) for x in ["Maria Lopez", "Maria Gonzalez", "Maria"]] == \
        ["PERSON_NAME_1", "PERSON_NAME_2", "PERSON_NAME_3"]
    # other labels match whole surfaces only
    assert [m.key("LOCATION", x) for x in ["New York", "York"]] == ["LOCATION_1", "LOCATION_2"]
