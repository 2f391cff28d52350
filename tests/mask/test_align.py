import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veil.errors import VeilError
from veil.mask.align import align, original_values
from veil.mask.placeholders import render
from veil.types import Document, Span


def _masked(text, marks, style="numbered"):
    return render(Document("d", text), [Span(text.index(s), text.index(s) + len(s), lab, "t") for s, lab in marks],
                  style)


@pytest.mark.parametrize("text, marks, style", [
    ("Hi Tom, bye Tom, see you", [("Tom", "PERSON_NAME")], "typed"),
    ("Dear Smith, John, welcome", [("Smith, John", "PERSON_NAME")], "numbered"),
    ("call 555 0199 now", [("555 0199", "PHONE_NUMBER")], "mask"),  # two [MASK] for one span
    ("[MASK] stays [PERSON_NAME_1] for Ann", [("Ann", "PERSON_NAME")], "numbered"),  # escaped look-alikes
    ("Ann", [("Ann", "PERSON_NAME")], "typed"),
    ("no PI here", [], "numbered"),
])
def test_original_values(text, marks, style):
    md = _masked(text, marks, style)
    assert [v for *_, v in original_values(text, md)] == [t for s, _ in marks for t in
                                                          (s.split() if style == "mask" else [s])]


def test_to_original_maps_text_between_placeholders():
    text = "A [MASK] by Ann, then Bob."
    md = _masked(text, [("Ann", "PERSON_NAME"), ("Bob", "PERSON_NAME")])
    assert md.text == "A [\\MASK] by [PERSON_NAME_1], then [PERSON_NAME_2]."
    a = align(text, md)
    for word in ("by", "then", "."):
        assert text[a.to_original(md.text.index(word))] == word[0]
    assert a.to_original(md.text.index("] by")) == text.index("] by")  # after the dropped backslash


def test_a_masked_text_from_another_original_is_an_error():
    md = _masked("Hi Tom, how are you", [("Tom", "PERSON_NAME")])
    with pytest.raises(VeilError, match="does not come from the original"):
        align("Hello Tom, how are you", md)
    with pytest.raises(VeilError, match="does not come from the original"):
        align("Hi Tom, how are we", md)


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(st.text(alphabet="ab [K]\\\nM", max_size=30), st.lists(st.integers(0, 30), max_size=8),
       st.sampled_from(["mask", "typed", "numbered"]))
def test_aligned_spans_render_the_same_masked_text(text, cuts, style):
    cuts = sorted({c for c in cuts if c <= len(text)})
    spans = [Span(a, b, "PERSON_NAME", "t") for a, b in zip(cuts[::2], cuts[1::2]) if a < b and text[a:b].strip()]
    md = render(Document("d", text), spans, style)
    a = align(text, md)
    assert len(a.spans) == len(md.placeholders)
    if style != "mask" and all(a.exact):  # one placeholder per aligned span gives the masked text back
        again = render(Document("d", text), [Span(s, e, "PERSON_NAME", "t") for s, e in a.spans], style)
        assert again.text == md.text
    for (s, e), ok in zip(a.spans, a.exact):
        assert 0 <= s < e <= len(text)
