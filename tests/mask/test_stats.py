from veil.mask.stats import masked_word_counts
from veil.types import Span


def test_masked_word_counts():
    text = "Call Alice Smith now, ok?"
    assert masked_word_counts(text, [Span(5, 16, "PERSON_NAME", "t")]) == (2, 5)
    assert masked_word_counts(text, []) == (0, 5)
    assert masked_word_counts(text, [Span(7, 8, "X", "t")]) == (1, 5)  # partial overlap counts
    assert masked_word_counts("", []) == (0, 0)
