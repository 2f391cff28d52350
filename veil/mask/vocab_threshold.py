"""Detect and mask stage: the vocabulary-threshold masker (mask words outside the top-N of a vocabulary).

The paper's *vocabThres*: keep the ``N`` most frequent words (default 10,000) of a vocabulary built
from a generic corpus, mask the rest. The default vocabulary is ``wordfreq``'s English frequency
list. Alternatives: ``corpus=PATH`` counts the words of a plain-text file (streamed line by line,
lower-cased ``veil.textutil`` words), ``counts=PATH`` reads ``word<whitespace>count`` lines.
Ties at the threshold are broken alphabetically so the vocabulary is deterministic.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Iterator

from veil.errors import InputError, VeilError
from veil.mask.allow_list import VocabularyMasker, wordfreq_top
from veil.textutil import WORD_RE


def _utf8_lines(path: Path, what: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of a UTF-8 file, decoded line by line so an error names its line."""
    try:
        f = path.open("rb")
    except FileNotFoundError:
        raise InputError(str(path), None, f"no such {what}") from None
    with f:
        for lineno, raw in enumerate(f, 1):
            try:
                yield lineno, raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InputError(str(path), lineno, f"not valid UTF-8 ({e.reason})") from None


def count_corpus_words(path: str | Path) -> Counter[str]:
    """Lower-cased word counts of a UTF-8 text file, read line by line."""
    path = Path(path)
    counts: Counter[str] = Counter()
    for lineno, line in _utf8_lines(path, "corpus file"):
        counts.update(WORD_RE.findall(line.lower()))
    if not counts:
        raise InputError(str(path), None, "the corpus has no words")
    return counts


def read_counts(path: str | Path) -> Counter[str]:
    """``word count`` per line (whitespace-separated; ``#`` comments and blank lines skipped)."""
    path = Path(path)
    counts: Counter[str] = Counter()
    for lineno, line in _utf8_lines(path, "counts file"):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.rsplit(None, 1)
        try:
            counts[parts[0].strip().lower()] += int(parts[1])
        except (IndexError, ValueError):
            raise InputError(str(path), lineno, "expected 'word count'") from None
    if not counts:
        raise InputError(str(path), None, "the counts file is empty")
    return counts


def top_n_of_counts(counts: Counter[str], n: int) -> list[str]:
    return [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


class VocabThresholdMasker(VocabularyMasker):
    """``VocabThresholdMasker(top_n=10000)``; ``corpus=`` or ``counts=`` for a user vocabulary."""

    name = "vocab_threshold"
    description = "masks words outside the 10,000 most frequent"
    paper_name = "vocabThres"

    def __init__(self, top_n: int = 10000, corpus: str | Path | None = None,
                 counts: str | Path | None = None, lang: str = "en") -> None:
        if top_n <= 0:
            raise VeilError(f"vocab_threshold: top_n must be positive, got {top_n}")
        if corpus is not None and counts is not None:
            raise VeilError("vocab_threshold: give either corpus or counts, not both")
        if corpus is not None:
            words = top_n_of_counts(count_corpus_words(corpus), top_n)
        elif counts is not None:
            words = top_n_of_counts(read_counts(counts), top_n)
        else:
            words = wordfreq_top(top_n, lang)
        self.top_n = top_n
        super().__init__(words)
