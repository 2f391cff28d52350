"""Detect and mask stage: the allow-list masker (mask every word that is not on a list of safe words).

The paper's *allowList*: a list of common, non-sensitive words; any other word is masked. The
default list is the 5,000 most frequent English words of ``wordfreq``; a user file (one word a
line, ``#`` comments allowed) replaces it. Matching is case-insensitive; ``'`` and ``’`` count as
the same apostrophe. Words are ``veil.textutil`` words, so punctuation is never masked.

The loop is plain Python kept on a fast path (one ``finditer`` over the lower-cased text and
one set look-up per word), about 2M words/s on one core.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

from veil.errors import InputError, VeilError
from veil.mask.base import Masker
from veil.textutil import WORD_RE
from veil.types import Span

_APOSTROPHES = ("'", "\u2019")


def build_vocabulary(words: Iterable[str]) -> frozenset[str]:
    """Lower-cased words, each with an apostrophe also present in its other spelling (' and ’).

    A listed negative contraction also lists the two pieces that Penn-Treebank-style tokenisation
    splits it into (``don't`` -> ``do n't``, ``can't`` -> ``ca n't``): in such corpora (PTB, many
    ASR transcripts) ``n't`` is one of the most frequent words, and masking it as unknown made every
    filler replace it with a whole word (``is n't`` -> ``is growing``).
    """
    out: set[str] = set()
    for w in words:
        w = w.strip().lower()
        if not w:
            continue
        spellings = {w, w.replace("\u2019", "'"), w.replace("'", "\u2019")}
        for s in spellings:
            out.add(s)
            for clitic in ("n't", "n\u2019t"):
                if s.endswith(clitic) and len(s) > len(clitic):
                    out.update((clitic, s[:-len(clitic)]))
    return frozenset(out)


def wordfreq_top(n: int, lang: str = "en") -> list[str]:
    """The ``n`` most frequent words of ``lang`` in ``wordfreq`` (its bundled lists; no download)."""
    if n <= 0:
        raise VeilError(f"the vocabulary size must be positive, got {n}")
    from wordfreq import top_n_list  # lazy: wordfreq loads its data files on import

    try:
        return top_n_list(lang, n)
    except LookupError as e:
        raise VeilError(f"wordfreq has no word list for language {lang!r}: {e}") from None


@lru_cache(maxsize=4)
def common_words(n: int = 10000) -> frozenset[str]:
    """wordfreq's ``n`` most frequent English words (lower case), loaded on first use: the detectors' test of
    whether a word is an ordinary English word (10,000), and the taggers' of a very common one (5,000, the
    allow list's: "will", "may", "said")."""
    return build_vocabulary(wordfreq_top(n))


def read_word_list(path: str | Path) -> list[str]:
    """One word a line; blank lines and lines starting with ``#`` are skipped."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(str(path), None, "no such word list") from None
    except UnicodeDecodeError as e:
        line = path.read_bytes()[: e.start].count(b"\n") + 1
        raise InputError(str(path), line, f"not valid UTF-8 ({e.reason})") from None
    words = [w.strip() for w in raw.splitlines() if w.strip() and not w.lstrip().startswith("#")]
    if not words:
        raise InputError(str(path), None, "the word list is empty")
    return words


class VocabularyMasker(Masker):
    """Masks every word whose lower-cased form is not in ``vocabulary`` (label ``WORD``)."""

    name = "vocabulary"
    label = "WORD"

    def __init__(self, vocabulary: Iterable[str]) -> None:
        #: lower-case safe words; the fill stage reads it to keep substitutes off the list
        self.vocabulary: frozenset[str] = build_vocabulary(vocabulary)
        if not self.vocabulary:
            raise VeilError(f"{self.name}: the vocabulary is empty")

    def detect(self, text: str) -> list[Span]:
        return self.detect_batch((text,))[0]

    def detect_batch(self, texts: Sequence[str]) -> list[list[Span]]:
        vocab, label, source = self.vocabulary, self.label, self.name
        finditer = WORD_RE.finditer
        out: list[list[Span]] = []
        for text in texts:
            if text.isascii():
                # ASCII lower-casing keeps offsets, so one pass over the lowered text suffices
                spans = [Span(m.start(), m.end(), label, source)
                         for m in finditer(text.lower()) if m.group() not in vocab]
            else:
                # str.lower can change lengths outside ASCII ("İ"): lower each word, keep offsets
                spans = [Span(m.start(), m.end(), label, source)
                         for m in finditer(text) if m.group().lower() not in vocab]
            out.append(spans)
        return out


class AllowListMasker(VocabularyMasker):
    """``AllowListMasker()`` keeps wordfreq's top 5,000 English words; ``AllowListMasker(path=...)``
    keeps the words of a user file instead."""

    name = "allow_list"
    description = "masks every word outside a list of the 5,000 most frequent English words"
    paper_name = "allowList"

    def __init__(self, path: str | Path | None = None, top_n: int = 5000, lang: str = "en",
                 words: Iterable[str] | None = None) -> None:
        if words is not None:
            source: Iterable[str] = words
        elif path is not None:
            source = read_word_list(path)
        else:
            source = wordfreq_top(top_n, lang)
        super().__init__(source)
