"""Audit stage, PPMLM: documents packed into one-person sequences, and masked-word targets."""

from __future__ import annotations

import random
from typing import Any, Iterable, Sequence

from veil.audit.ppmlm.methods import Chunk
from veil.errors import VeilError
from veil.textutil import iter_words
from veil.types import Document


def encode_documents(docs: Sequence[Document], tok: Any, max_length: int = 64) -> list[Chunk]:
    """Tokenise documents and pack consecutive ones of the same (person, group) into chunks."""
    if max_length < 8:
        raise VeilError(f"max_length must be at least 8 tokens, got {max_length}")
    body = max_length - 2
    docs = [d for d in docs if d.text.strip()]
    if not docs:
        return []
    enc = tok([d.text for d in docs], add_special_tokens=False, return_offsets_mapping=True)
    chunks: list[Chunk] = []
    cur: Chunk | None = None
    cur_key: tuple | None = None

    def flush() -> None:
        nonlocal cur
        if cur is not None and cur.words:
            cur.input_ids = [tok.cls_token_id, *cur.input_ids, tok.sep_token_id]
            cur.word_ids = [-1, *cur.word_ids, -1]
            chunks.append(cur)
        cur = None

    for d, ids, offs in zip(docs, enc["input_ids"], enc["offset_mapping"]):
        spans = list(iter_words(d.text))
        # token -> word index (by the character where the token starts); punctuation -> -1
        tw: list[int] = []
        j = 0
        for (a, b) in offs:
            while j < len(spans) and spans[j][1] <= a:
                j += 1
            tw.append(j if j < len(spans) and spans[j][0] <= a < spans[j][1] and b > a else -1)
        words = [w.lower() for _, _, w in spans]
        # cut the document into pieces of whole words that fit a chunk
        pieces: list[tuple[int, int]] = []  # token ranges
        start = 0
        while start < len(ids):
            end = min(len(ids), start + body)
            if end < len(ids):
                k = end
                while k > start and tw[k] >= 0 and tw[k] == tw[k - 1]:
                    k -= 1  # do not split a word across chunks
                end = k if k > start else end
            pieces.append((start, end))
            start = end
        key = (d.person, d.group)
        for a, b in pieces:
            if cur is None or key != cur_key or len(cur.input_ids) + (b - a) > body:
                flush()
                cur = Chunk(person=d.person or "", input_ids=[], word_ids=[], words=[])
                cur_key = key
            base = len(cur.words)
            local: dict[int, int] = {}
            for t in range(a, b):
                cur.input_ids.append(ids[t])
                w = tw[t]
                if w >= 0:
                    if w not in local:
                        local[w] = base + len(local)
                        cur.words.append(words[w])
                    cur.word_ids.append(local[w])
                else:
                    cur.word_ids.append(-1)
    flush()
    return chunks


def choose_targets(chunk: Chunk, share: float, rng: random.Random, respect_protection: bool = True) -> list[int]:
    """Word indices to mask: ``share`` of the eligible words (at least one if any is eligible)."""
    eligible = [i for i in range(len(chunk.words))
                if not (respect_protection and chunk.protected and chunk.protected[i])]
    if not eligible:
        return []
    k = max(1, round(share * len(eligible)))
    return sorted(rng.sample(eligible, k))


def masked_example(chunk: Chunk, targets: Iterable[int], mask_id: int, pad_id: int,
                   max_length: int) -> tuple[list[int], list[int], list[int]]:
    """(input_ids, attention_mask, labels) padded to ``max_length``: every token of a target word masked."""
    targets = set(targets)
    ids = list(chunk.input_ids)
    labels = [-100] * len(ids)
    for i, w in enumerate(chunk.word_ids):
        if w >= 0 and w in targets:
            labels[i] = ids[i]
            ids[i] = mask_id
    pad = max_length - len(ids)
    if pad < 0:
        raise VeilError(f"sequence of {len(ids)} tokens exceeds max_length {max_length}")
    return ids + [pad_id] * pad, [1] * len(ids) + [0] * pad, labels + [-100] * pad
