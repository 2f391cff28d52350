"""Detect and mask stage: whether a masking covers a gold mention (one rule for detector scores and risk audits).

``veil eval-detect`` (recall, precision) and ``veil audit risk`` (residual risk of what was missed)
decide "covered / partially covered / missed" here, with one list of ignorable words, so the two
can never disagree about a mention.

The rule, on a mention ``text[start:end]`` and the characters the masks cover:

- only letters and digits count: an unmasked space, hyphen or full stop leaks nothing;
- the unmasked letters and digits form *visible* stretches; a visible word that is in
  :data:`IGNORABLE_WORDS` (honorifics, function words, address-unit designators) identifies no one
  and does not count either ("Mr [PERSON_NAME_1]", "[LOCATION_1] of [LOCATION_2]");
- **covered**: no other word is visible; **missed**: another word is visible and no letter or
  digit of the mention is masked; **partial**: the rest (some masked, something identifying left).

The word list joins TAB's ``TOKENS_TO_IGNORE_IN_COUNTS`` (Pilán et al. 2022, ``evaluation.py``) with the
honorifics and address words the risk audit needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from veil.textutil import iter_words
from veil.types import Span

COVERED, PARTIAL, MISSED = "covered", "partial", "missed"

#: Words that identify no one on their own. A mention whose only unmasked words are these is covered.
IGNORABLE_WORDS = frozenset("""
mr mrs ms miss mx dr prof professor sir madam madame dame lord lady rev judge justice
a an the of in on at for to from by with and or nor into over until about after as before between during since
de du des del della la le les van von der den di da
no nos nr s
apt apartment suite ste unit box po psc dpo apo fpo floor fl room rm building bldg corner
""".split())


@dataclass(frozen=True, slots=True)
class MentionCoverage:
    status: str  # COVERED, PARTIAL or MISSED
    masked_chars: int  # masked letters and digits of the mention
    chars: int  # all letters and digits of the mention
    visible: str  # the unmasked stretches holding letters or digits, joined by " … "


class Coverage:
    """Which characters of one text a set of spans covers, and what that means for each mention."""

    def __init__(self, text: str, spans: Iterable[Span]) -> None:
        self.text = text
        self.covered = bytearray(len(text))
        for s in spans:
            end = min(s.end, len(text))
            if end > s.start:
                self.covered[s.start:end] = b"\x01" * (end - s.start)

    def mention(self, start: int, end: int) -> MentionCoverage:
        text, covered = self.text, self.covered
        masked = chars = 0
        stretches: list[str] = []
        cur: list[str] = []
        for i in range(start, end):
            c = text[i]
            if covered[i]:
                if cur:
                    stretches.append("".join(cur))
                    cur = []
                if c.isalnum():
                    masked += 1
                    chars += 1
                continue
            cur.append(c)
            chars += c.isalnum()
        if cur:
            stretches.append("".join(cur))
        visible = [p.strip() for p in stretches if any(c.isalnum() for c in p)]
        leaked = any(leaks(p) for p in visible)
        status = MISSED if leaked and masked == 0 else PARTIAL if leaked else COVERED
        return MentionCoverage(status, masked, chars, " … ".join(visible))

    def is_covered(self, start: int, end: int) -> bool:
        return self.mention(start, end).status == COVERED

    def word_is_masked(self, start: int, end: int) -> bool:
        return 1 in self.covered[start:end]


def word_counts(text: str, detected: Coverage, gold: Coverage) -> tuple[int, int, int]:
    """(words, words the masks touch, of those the words that touch a gold span) of one text.

    The last two give precision: the share of masked words that are personal data.
    """
    words = masked = masked_in_gold = 0
    for ws, we, _ in iter_words(text):
        words += 1
        if detected.word_is_masked(ws, we):
            masked += 1
            masked_in_gold += gold.word_is_masked(ws, we)
    return words, masked, masked_in_gold


def leaks(visible: str) -> bool:
    """Whether a visible stretch holds a word other than the ignorable ones."""
    return any(w.lower() not in IGNORABLE_WORDS for _, _, w in iter_words(visible))


def spans_of(gold_spans: Sequence) -> list[Span]:
    """Gold spans as ``Span`` objects (to build a :class:`Coverage` of the gold mentions)."""
    return [Span(g.start, g.end, g.label, "gold") for g in gold_spans]
