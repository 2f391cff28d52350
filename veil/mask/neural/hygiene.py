"""Detect and mask stage: span hygiene of the neural tagger, a span holds the value and nothing else.

:func:`tidy` runs the tagger's named span rules (:mod:`veil.mask.neural.rules`, each with its docstring, its
table test and its switch) on the tagger's spans before they become placeholders: no greeting, filler,
context word or punctuation at their ends, no honorific, a first and a last name one span, an organisation
with its kind word; a span that cannot be its type goes, and so does one everyday word alone. This module
keeps the names other modules import.
"""

from __future__ import annotations

from veil.mask.neural.rules import tidy
from veil.mask.neural.rules.lexical import EVERYDAY_WORDS, everyday, person_name_words
from veil.mask.neural.rules.spans import valid

__all__ = ["EVERYDAY_WORDS", "everyday", "person_name_words", "tidy", "valid"]
