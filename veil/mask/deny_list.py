"""Detect and mask stage: the deny-list masker (terms that are always masked, with their type).

``veil mask --add-terms FILE`` runs it beside the chosen maskers: the file is ``term<TAB>TYPE`` per
line (TYPE optional, default ``CUSTOM``; ``#`` comments), the format ``veil review --export terms``
writes from the misses reviewers tagged, so a reviewed miss is masked on the next run. A term matches
case-insensitively as whole words, its words joined by any whitespace ("Dunder Mifflin" also matches
"dunder  mifflin" and "Dunder\\nMifflin"); the longest term wins where two overlap.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Mapping

from veil.errors import VeilError
from veil.markers import check_label
from veil.mask.base import Masker
from veil.types import Span

DEFAULT_LABEL = "CUSTOM"
_LABEL_RE = re.compile(r"[A-Z][A-Z0-9_]*")


def read_terms(path: str | Path) -> dict[str, str]:
    """``term<TAB>TYPE`` lines (see the module docstring) -> {term: TYPE}."""
    from veil.mask.detectors.words import read_dictionary

    return read_dictionary(path)


class DenyListMasker(Masker):
    """``DenyListMasker(terms={"Dunder Mifflin": "ORGANIZATION_NAME"})`` or ``terms_file="terms.tsv"``.

    ``terms`` may also be a list of terms (type ``CUSTOM``).
    """

    name = "deny_list"

    def __init__(self, terms: Mapping[str, str] | Iterable[str] = (), terms_file: str | Path | None = None) -> None:
        table: dict[str, str] = {}
        items = terms.items() if isinstance(terms, Mapping) else ((t, DEFAULT_LABEL) for t in terms)
        for term, label in items:
            label = str(label or DEFAULT_LABEL)
            if not _LABEL_RE.fullmatch(label):
                raise VeilError(f"deny_list: type {label!r} must be upper case, e.g. PERSON_NAME")
            check_label(label, f"deny_list: the term {term!r}")
            words = str(term).split()
            if words:
                table.setdefault(" ".join(w.casefold() for w in words), label)
        if terms_file is not None:
            for term, label in read_terms(terms_file).items():
                words = term.split()
                if words:
                    table.setdefault(" ".join(w.casefold() for w in words), label)
        if not table:
            raise VeilError("deny_list: no terms (give terms or terms_file)")
        self.terms = table
        # longest first: the regex alternation takes the first alternative that matches at a position
        parts = [r"\s+".join(re.escape(w) for w in t.split(" ")) for t in sorted(table, key=len, reverse=True)]
        self._re = re.compile(r"(?<!\w)(?:" + "|".join(parts) + r")(?!\w)", re.IGNORECASE)

    def detect(self, text: str) -> list[Span]:
        out = []
        for m in self._re.finditer(text):
            key = " ".join(w.casefold() for w in m.group().split())
            out.append(Span(m.start(), m.end(), self.terms.get(key, DEFAULT_LABEL), self.name, 1.0))
        return out
