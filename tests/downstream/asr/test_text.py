"""ASR evaluation stage: text forms (spoken text, the LM's form of a hypothesis) and the WER normalisation."""

from __future__ import annotations

import pytest

from veil.downstream.asr.text import lm_text, normalise, spoken_text


@pytest.mark.parametrize("text, expected", [
    ("Um, all right.", "all right"),
    ("I've, uh, forty two dollars", "i have $42"),
    ("The colour of Mr. Smith's car", "the color of mister smith is car"),
    ("  spaced   out  ", "spaced out"),
])
def test_normalise_is_whispers_english_normaliser(text, expected):
    assert normalise(text) == expected


def test_reference_and_hypothesis_meet_in_the_normal_form():
    assert normalise("Forty-two percent of the colour") == normalise("42% of the color.")


def test_plain_text_is_spoken_as_written():
    assert spoken_text("Oh, well,  I tend to agree.", "plain") == "Oh, well, I tend to agree."


def test_ptb_text_is_spoken_with_numbers_and_joined_clitics():
    s = spoken_text("abc 's show do n't call a N number for N % of $ N", "ptb", seed=3)
    words = s.split()
    assert words[:4] == ["abc's", "show", "don't", "call"]
    assert words[5].isdigit() and 2 <= int(words[5]) <= 99
    assert words[8].endswith("%") and words[10].startswith("$")
    assert s == spoken_text("abc 's show do n't call a N number for N % of $ N", "ptb", seed=3)  # seeded
    assert "N" not in words


@pytest.mark.parametrize("hyp, expected", [
    (" Two weeks ago, viewers of NBC's shows", "two weeks ago viewers of nbc 's shows"),
    ("They don't pay $1,000 or 42%.", "they do n't pay $ N or N %"),
    ("a well-known 1980s name", "a well known N name"),
    ("It can't be.", "it ca n't be"),
])
def test_hypotheses_take_ptb_form_for_the_lm(hyp, expected):
    assert lm_text(hyp, "ptb") == expected


def test_plain_hypotheses_reach_the_lm_unchanged_but_for_spacing():
    assert lm_text("  Oh, well, I agree. ", "plain") == "Oh, well, I agree."
