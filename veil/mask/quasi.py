"""Detect and mask stage: the quasi-identifier masker (professions, nationalities, ethnicities, religions, illnesses).

TAB calls these DEM and MISC: words that do not name anyone but narrow down who someone is ("a
Kurdish primary school teacher with paranoid schizophrenia"). Names taggers miss them, and in
lower-cased or speech-recognised text spaCy's NORP tagging goes too. This masker matches lexicons
case-insensitively, so it reads every text form alike:

- nationalities: the demonyms of ``countryinfo`` (its country records), label ``NATIONALITY``;
- professions: the job titles of ``Faker``'s ``job`` provider (the part before a comma,
  "Accountant, chartered" -> "accountant", plural too), label ``OCCUPATION``;
- TAB's own DEM / MISC identifiers from its *train* split (``scripts/build_quasi_terms.py``;
  ethnic and religious groups, illnesses, local terms), labels ``DEMOGRAPHIC`` / ``QUASI_ID``;
- a user file of ``term<TAB>TYPE`` lines (``terms_file``), as the DLP custom dictionary.

Words inside a term may be joined by spaces, hyphens or apostrophes ("Jehovah's", "jehovahs",
"greek cypriot"), as speech recognition writes them. Matching looks word n-grams (up to four words)
up in one dict, so its cost grows with the text, not with the number of terms.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Sequence

from veil.errors import VeilError
from veil.gazetteer import job_titles, nationalities
from veil.mask.base import Masker, choose
from veil.types import Span

DATA = Path(__file__).resolve().parent.parent / "data" / "quasi"
TAB_TERMS = DATA / "tab_train_terms.tsv"
SOURCES = ("nationalities", "occupations", "tab")
_TAB_LABELS = {"DEM": "DEMOGRAPHIC", "MISC": "QUASI_ID"}
SCORE = 0.6


def read_terms(path: str | Path) -> dict[str, str]:
    """``term<TAB>TYPE`` lines; TAB's ``DEM`` / ``MISC`` are read as DEMOGRAPHIC / QUASI_ID."""
    from veil.mask.detectors.words import read_dictionary

    return read_dictionary(path, aliases=_TAB_LABELS)


_WORD = re.compile(r"[^\W_]+")
MAX_WORDS = 4  # the longest term looked up, in words


def term_keys(term: str) -> list[str]:
    """Lookup keys of a term: its lower-case words joined by one space, and with a lone "s" glued
    to the word before ("jehovah's witnesses" -> "jehovah s witnesses", "jehovahs witnesses")."""
    words = _WORD.findall(term.lower())
    if not words:
        return []
    keys = [" ".join(words)]
    if "s" in words[1:]:
        glued: list[str] = []
        for w in words:
            if w == "s" and glued:
                glued[-1] += "s"
            else:
                glued.append(w)
        keys.append(" ".join(glued))
    return keys


class QuasiIdentifierMasker(Masker):
    """``QuasiIdentifierMasker(sources=("nationalities", "occupations", "tab"), terms_file=None)``."""

    name = "quasi"

    def __init__(self, sources: Iterable[str] = SOURCES, terms_file: str | Path | None = None) -> None:
        sources = choose("quasi", "source", sources, list(SOURCES))
        terms: dict[str, str] = {}  # lower-case term -> label
        if "nationalities" in sources:
            terms.update({t.lower(): "NATIONALITY" for t in nationalities()})
        if "occupations" in sources:
            terms.update({t.lower(): "OCCUPATION" for t in job_titles()})
        if "tab" in sources:
            for t, k in read_terms(TAB_TERMS).items():  # the nationality / occupation label is more specific
                terms.setdefault(t.lower(), k)
        if terms_file is not None:
            terms.update({t.lower(): k for t, k in read_terms(terms_file).items()})
        if not terms:
            raise VeilError("quasi: no terms (choose a source or give terms_file)")
        self._terms: dict[str, str] = {}  # lookup key -> label, longest terms first
        for term, label in sorted(terms.items(), key=lambda kv: -len(kv[0])):
            for key in term_keys(term):
                if len(key.split()) <= MAX_WORDS:
                    self._terms.setdefault(key, label)

    def detect(self, text: str) -> list[Span]:
        """Longest match first at each word; words may be joined by up to three other characters."""
        from veil.mask.detectors.lexicon import longest_terms

        words = [(m.start(), m.end(), m.group().lower()) for m in _WORD.finditer(text)]

        def lookup(i: int, j: int) -> str | None:
            run = words[i:j]
            if any(b[0] - a[1] > 3 for a, b in zip(run, run[1:])):
                return None
            return self._lookup(" ".join(w for _, _, w in run))

        return [Span(words[i][0], words[j - 1][1], label, self.name, SCORE)
                for i, j, label in longest_terms(len(words), MAX_WORDS, lookup, lambda i, j, label: label)]

    def _lookup(self, key: str) -> str | None:
        """The label of ``key``, or of its singular ("teachers", "witnesses" -> "teacher", "witness")."""
        terms = self._terms
        if key in terms:
            return terms[key]
        if key.endswith("es") and key[:-2] in terms:
            return terms[key[:-2]]
        if key.endswith("s") and key[:-1] in terms:
            return terms[key[:-1]]
        return None

    def detect_batch(self, texts: Sequence[str]) -> list[list[Span]]:
        return [self.detect(t) for t in texts]
