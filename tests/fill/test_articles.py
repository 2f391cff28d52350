"""The article before a substitute agrees with it: "a" / "an" was said for the original value."""

from __future__ import annotations

import re

import pytest

from veil.fill.assemble import with_article


@pytest.mark.parametrize("before, value, expected", [
    ("I'm an ", "chiropractor", "I'm a "),
    ("I'm a ", "engineer", "I'm an "),
    ("An ", "nurse", "A "),
    ("a ", "hour", "an "),
    ("an ", "union rep", "a "),
    ("a ", "F B I agent", "an "),  # letters said one by one
    ("an ", "K R B", "a "),
    ("a ", "8", "an "),
    ("a ", "80", "an "),
    ("an ", "3", "a "),
    ("it's an ", "European car", "it's a "),
    ("a ", "Sally", "a "),
    ("grade A ", "engineer", "grade A "),  # a capital A inside a sentence is a letter, not the article
    ("the ", "engineer", "the "),
    ("banana ", "engineer", "banana "),
])
def test_with_article(before, value, expected):
    assert with_article(before, value) == expected


def test_filled_text_never_keeps_the_originals_article_against_the_substitute():
    import veil

    texts = ["I'm an artist.", "My brother is an engineer.", "She is a nurse.", "He was an architect for years."]
    masked = veil.mask(texts)
    assert all(m.placeholders for m in masked)
    for seed in range(5):
        for text in veil.fill(masked, seed=seed):
            for art, word in re.findall(r"\b(an?) (\w+)", text):
                assert with_article(art + " ", word) == art + " ", text
