"""Train / evaluate stage: the downstream LM's vocabulary: byte-level BPE (default) or words (``[MASK]`` is a token).

``WordVocab``: lower-cased words (``veil.textutil.WORD_RE``), single punctuation characters and the
literal ``[MASK]``; words outside the vocabulary are ``<unk>``. ``BPEVocab``: byte-level BPE, no
``<unk>`` (why it is the default: see its docstring). Every sentence ends with ``<eos>``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Sequence

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


class BPEVocab:
    """Byte-level BPE (HF ``tokenizers``) trained on the generic pre-training corpus: no ``<unk>``.

    A word-level vocabulary maps every rare word (most of what masking removes: names, places,
    numbers) to ``<unk>``, so Oracle and the filled corpora could not differ on exactly the words
    the experiment is about. Byte-level BPE spells every word in sub-word pieces, so a name seen in
    fine-tuning (Oracle) does lower the test perplexity and a plausible substitute (a filled corpus)
    helps as much as its spelling allows. Perplexity is still reported per *word*, so the tokeniser
    does not change what is compared. Text is lower-cased; ``[MASK]`` is one special token.

    ``[MASK]`` and ``<unk>`` take the space before them into their token (``lstrip``): byte-level
    BPE otherwise splits `` [MASK]`` into a bare-space token plus the special token, and that
    bare space, shared by every ``[MASK]`` and every ``<unk>``, made the masked baselines look
    better on PTB (whose test set is 5% ``<unk>``): having seen it before each ``[MASK]`` in
    training, they predicted the space before each test ``<unk>`` more confidently than Oracle.
    """

    #: stage keys carry this, so LM stages cached under another tokenisation are not reused
    TOKENIZATION = 2

    def __init__(self, tokenizer: Any) -> None:
        from tokenizers import AddedToken

        tokenizer.add_special_tokens([AddedToken(t, lstrip=True, special=True, normalized=False) for t in (MASK, UNK)])
        self.tok = tokenizer
        ids = [tokenizer.token_to_id(s) for s in SPECIALS]
        if any(i is None for i in ids):
            raise VeilError("a BPE vocabulary must contain the tokens " + ", ".join(SPECIALS))
        self.pad_id, self.unk_id, self.eos_id, self.mask_id = ids

    def __len__(self) -> int:
        return self.tok.get_vocab_size()

    @classmethod
    def build(cls, texts: Iterable[str], max_size: int = 8000, min_count: int = 2) -> "BPEVocab":
        from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

        tok = Tokenizer(models.BPE())
        tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=max_size, min_frequency=min_count, special_tokens=list(SPECIALS),
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
        tok.train_from_iterator((t for t in texts), trainer=trainer)
        return cls(tok)

    def encode(self, text: str, eos: bool = True) -> list[int]:
        ids = self.tok.encode(text, add_special_tokens=False).ids
        if eos:
            ids.append(self.eos_id)
        return ids

    def encode_with_offsets(self, texts: Sequence[str]) -> tuple[list[list[int]], list[list[tuple[int, int]]]]:
        """Each text's ids (no ``<eos>``) and their character offsets: the one tokenisation the stream
        (:meth:`encode_batch`) and ``veil experiment gap``'s alignment share."""
        enc = self.tok.encode_batch(list(texts), add_special_tokens=False)
        return [e.ids for e in enc], [e.offsets for e in enc]

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [ids + [self.eos_id] for ids in self.encode_with_offsets(texts)[0]]

    def save(self, path: str | Path) -> None:
        self.tok.save(str(path))

    @classmethod
    def load(cls, path: str | Path) -> "BPEVocab":
        from tokenizers import Tokenizer

        return cls(Tokenizer.from_file(str(path)))


def build_vocab(kind: str, texts: Sequence[str], max_size: int) -> "WordVocab | BPEVocab":
    if kind == "bpe":
        return BPEVocab.build(texts, max_size=max_size)
    if kind == "word":
        return WordVocab.build(texts, max_size=max_size)
    raise VeilError(f"unknown lm.tokenizer {kind!r}; known: bpe, word")


def save_vocab(vocab: "WordVocab | BPEVocab", folder: Path) -> None:
    vocab.save(Path(folder) / ("tokenizer.json" if isinstance(vocab, BPEVocab) else "vocab.json"))


def load_vocab(folder: Path) -> "WordVocab | BPEVocab":
    folder = Path(folder)
    if (folder / "tokenizer.json").is_file():
        return BPEVocab.load(folder / "tokenizer.json")
    return WordVocab.load(folder / "vocab.json")
