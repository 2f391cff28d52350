"""Train / evaluate stage: the downstream LM's word-level vocabulary (``[MASK]`` is a token).

Tokens are lower-cased words (``veil.textutil.WORD_RE``), single punctuation characters and the
literal ``[MASK]``; every sentence ends with ``<eos>``. Words outside the vocabulary are ``<unk>``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

from veil.errors import VeilError

PAD, UNK, EOS, MASK = "<pad>", "<unk>", "<eos>", "[MASK]"
SPECIALS = (PAD, UNK, EOS, MASK)
_TOKEN_RE = re.compile(r"\[MASK\]|<unk>|[^\W_]+(?:['\u2019][^\W_]+)*|[^\w\s]")


def tokenize(text: str) -> list[str]:
    return [t if t in (MASK, UNK) else t.lower() for t in _TOKEN_RE.findall(text)]


class WordVocab:
    def __init__(self, words: Sequence[str]) -> None:
        words = list(words)
        if tuple(words[:len(SPECIALS)]) != SPECIALS:
            raise VeilError("a vocabulary must start with " + ", ".join(SPECIALS))
        self.words = words
        self.index = {w: i for i, w in enumerate(words)}
        self.pad_id, self.unk_id, self.eos_id, self.mask_id = (self.index[s] for s in SPECIALS)

    def __len__(self) -> int:
        return len(self.words)

    @classmethod
    def build(cls, texts: Iterable[str], max_size: int = 10000, min_count: int = 1) -> "WordVocab":
        counts: Counter[str] = Counter()
        for t in texts:
            counts.update(tokenize(t))
        for s in SPECIALS:
            counts.pop(s, None)
        ranked = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
        return cls(list(SPECIALS) + ranked[:max(0, max_size - len(SPECIALS))])

    def encode(self, text: str, eos: bool = True) -> list[int]:
        ids = [self.index.get(t, self.unk_id) for t in tokenize(text)]
        if eos:
            ids.append(self.eos_id)
        return ids

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.words, ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> "WordVocab":
        return cls(json.loads(Path(path).read_text(encoding="utf-8")))
