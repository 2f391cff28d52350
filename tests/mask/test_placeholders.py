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


def test_merge_a_whole_name_beats_a_word_inside_it():
    # "Lubbock View Christian Church": the organisation holds the religion word, however sure that reading is
    org, dem = Span(11, 40, "ORGANIZATION_NAME", "neural_tagger", 0.47), Span(24, 33, "DEMOGRAPHIC", "dlp", 0.7)
    assert merge_spans([org, dem]) == [Span(11, 40, "ORGANIZATION_NAME", "neural_tagger", 0.7)]
    # overlapping, neither holding the other: the surer one, judged against members, not against their union
    num, money, weak = Span(0, 16, "NUMBER", "dlp", 0.6), Span(11, 24, "MONEY", "dlp", 0.7), \
        Span(11, 24, "MONEY", "neural_tagger", 0.2)
    assert merge_spans([weak, num, money]) == [Span(0, 24, "MONEY", "dlp", 0.7)]


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


# --- issue 32 item 7: exactly veil's own placeholder forms ------------------------------------------------
@pytest.mark.parametrize("text, lookalikes", [
    ("[JOHN_SMITH] [MARIA] [JSMITH1985] [S_M_I_T_H]", []),  # personal data in brackets: text
    ("[PERSON_NAME_1] [PERSON_NAME] [MASK] [mask] [LOCATION_999]", ["[PERSON_NAME_1]", "[PERSON_NAME]", "[MASK]",
                                                                    "[mask]", "[LOCATION_999]"]),
    ("[PERSON_NAME_1000] [PERSON_NAME_01] [PERSON_NAME_] [person_name_1] [MASK_1]", []),
])
def test_only_exact_placeholder_forms_with_known_labels_are_lookalikes(text, lookalikes):
    from veil.markers import lookalike_spans

    assert [text[s:e] for s, e in lookalike_spans(text)] == lookalikes
    assert [n for _, _, n in find_markers(text)] == [x[1:-1] for x in lookalikes]


def test_render_refuses_a_label_the_fill_stage_would_not_read():
    from veil.errors import VeilError

    with pytest.raises(VeilError, match="masker 'custom' uses the label 'JOHN'"):
        render(Document("d", "hi John"), [Span(3, 7, "JOHN", "custom")], "numbered")


def test_numbered_markers_stop_at_999_and_go_on_typed():
    text = " ".join(f"n{i}" for i in range(1002))
    spans, pos = [], 0
    for w in text.split(" "):
        spans.append(Span(pos, pos + len(w), "NUMBER", "t"))
        pos += len(w) + 1
    md = render(Document("d", text), spans, "numbered")
    names = [n for _, _, n in find_markers(md.text)]
    assert names[998] == "NUMBER_999" and names[999:] == ["NUMBER", "NUMBER", "NUMBER"]
    assert len({p.key for p in md.placeholders}) == 1002  # the typed ones are keys of their own


def test_a_dictionary_type_must_be_a_placeholder_label(tmp_path):
    from veil.errors import VeilError
    from veil.mask.dlp import DLPMasker

    with pytest.raises(VeilError, match="'Acme' uses the label 'COMPANY'"):
        DLPMasker(dictionary={"Acme": "COMPANY"})
    f = tmp_path / "d.tsv"
    f.write_text("Acme\tORGANIZATION_NAME\nInitech\tCOMPANY\n")
    with pytest.raises(VeilError, match="d.tsv:2: type 'COMPANY'"):
        DLPMasker(dictionary_file=f)


def test_merge_any_reading_beats_an_identifier_of_no_known_kind():
    # "4111 1111 1111 1111": dlp's Luhn-checked card number, the tagger surer of a generic id
    card, ident = Span(5, 24, "CREDIT_CARD_NUMBER", "dlp", 0.9), Span(5, 24, "GENERIC_ID", "neural_tagger", 0.96)
    assert merge_spans([ident, card]) == [Span(5, 24, "CREDIT_CARD_NUMBER", "dlp", 0.96)]
    num, ident = Span(30, 35, "NUMBER", "dlp", 0.6), Span(30, 35, "GENERIC_ID", "neural_tagger", 0.91)
    assert merge_spans([num, ident]) == [Span(30, 35, "NUMBER", "dlp", 0.91)]
    # between two typed readings the surer one, as before
    date, num = Span(0, 5, "DATE", "neural_tagger", 0.8), Span(0, 5, "NUMBER", "dlp", 0.6)
    assert merge_spans([num, date]) == [Span(0, 5, "DATE", "neural_tagger", 0.8)]
