"""Detect and mask stage: the neural entity tagger, a case-robust token classifier (uncased MiniLM, fine-tuned).

Trained by ``veil train-detector`` (:mod:`veil.train.detector`) on CoNLL-2003, WNUT-17, TAB and
Presidio synthetic training parts, each in its written and speech-recognition form, plus generated
call-centre dialogues. Its tokenizer lower-cases, so it reads "john smith" as it reads "John Smith";
the spaCy tagger needs the capitals.

Inference: identical texts are tagged once; each text is cut into windows of ``max_length`` word
pieces; windows are sorted by length and run in batches (less padding); the linear layers run in
int8 (dynamic quantisation, ``precision="int8"``, the default) or fp32 / bf16. A span is a run of
word pieces tagged with one type (a ``B-`` piece starts a new one), widened to whole words.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from veil.errors import VeilError
from veil.mask.base import Masker
from veil.types import Span

PRECISIONS = ("int8", "fp32", "bf16")
_WORD_CHAR = re.compile(r"[\w'’]")


@lru_cache(maxsize=4)
def load_detector(path: str | None, precision: str, threads: int) -> tuple[Any, Any, dict]:
    """(model, tokenizer, meta), loaded once per process and setting."""
    import torch

    from veil.train.detector import load, load_tokenizer

    torch.set_num_threads(threads)
    model, meta = load(Path(path) if path else None)
    if precision == "int8":
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch marks eager dynamic quantisation deprecated; it still runs
            model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    elif precision == "bf16":
        model = model.to(torch.bfloat16)
    return model, load_tokenizer(), meta


def decode(labels: Sequence[str], offsets: Sequence[tuple[int, int]], probs: Sequence[float] | None = None
           ) -> list[tuple[int, int, str, float]]:
    """``(start, end, type, mean probability)`` runs of word pieces with one entity type."""
    out: list[tuple[int, int, str, float]] = []
    cur: list | None = None  # [start, end, type, prob sum, pieces]
    for i, (lab, (s, e)) in enumerate(zip(labels, offsets)):
        if e <= s:
            continue
        p = probs[i] if probs is not None else 1.0
        if lab == "O":
            if cur:
                out.append((cur[0], cur[1], cur[2], cur[3] / cur[4]))
                cur = None
            continue
        prefix, kind = lab[:1], lab[2:]
        if cur is not None and kind == cur[2] and prefix == "I":
            cur[1], cur[3], cur[4] = e, cur[3] + p, cur[4] + 1
            continue
        if cur:
            out.append((cur[0], cur[1], cur[2], cur[3] / cur[4]))
        cur = [s, e, kind, p, 1]
    if cur:
        out.append((cur[0], cur[1], cur[2], cur[3] / cur[4]))
    return out


def widen(text: str, start: int, end: int) -> tuple[int, int]:
    """Grow a span to whole words (a tagged word piece masks its word)."""
    while start > 0 and _WORD_CHAR.match(text[start - 1]) and _WORD_CHAR.match(text[start]):
        start -= 1
    while end < len(text) and _WORD_CHAR.match(text[end]) and _WORD_CHAR.match(text[end - 1]):
        end += 1
    return start, end


class NeuralTaggerMasker(Masker):
    """``NeuralTaggerMasker(model=None, precision="int8", batch_size=32, threads=2, types=None, o_threshold=0.5)``.

    ``model`` is a folder written by ``veil train-detector`` (default: the detector shipped with
    veil); ``types`` keeps only some of its types (e.g. ``"PER,ORG,LOC"``); a word piece counts as
    part of an entity when the model gives "not an entity" less than ``o_threshold`` (higher:
    more recall, more masking).
    """

    name = "neural_tagger"

    def __init__(self, model: str | None = None, precision: str = "int8", batch_size: int = 32,
                 threads: int = 2, max_length: int = 128, types: Sequence[str] | str | None = None,
                 o_threshold: float = 0.5) -> None:
        if precision not in PRECISIONS:
            raise VeilError(f"neural_tagger: precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
        if batch_size < 1 or threads < 1 or not 8 <= max_length <= 512:
            raise VeilError("neural_tagger: batch_size and threads must be at least 1, max_length 8 to 512")
        self.model, self.tokenizer, meta = load_detector(model, precision, threads)
        from veil.train.detector_data import TYPE_TO_LABEL

        known = sorted({lab[2:] for lab in meta["labels"] if lab != "O"})
        if isinstance(types, str):
            types = [t.strip() for t in types.split(",") if t.strip()]
        self.types = frozenset(types) if types else frozenset(known)
        unknown = self.types - set(known)
        if unknown:
            raise VeilError(f"neural_tagger: unknown type(s) {', '.join(sorted(unknown))}; choose from {', '.join(known)}")
        self.type_to_label = TYPE_TO_LABEL
        self.id2label = [meta["labels"][i] for i in range(len(meta["labels"]))]
        self.batch_size = batch_size
        self.max_length = max_length
        if not 0.0 < o_threshold <= 1.0:
            raise VeilError("neural_tagger: o_threshold must be in (0, 1]")
        self.o_threshold = o_threshold

    def detect(self, text: str) -> list[Span]:
        return self.detect_batch([text])[0]

    def detect_batch(self, texts: Sequence[str]) -> list[list[Span]]:
        import torch

        unique: dict[str, int] = {}
        for t in texts:
            if t.strip() and t not in unique:
                unique[t] = len(unique)
        utexts = list(unique)
        found: list[list[Span]] = [[] for _ in utexts]
        if utexts:
            tok = self.tokenizer
            enc = tok(utexts, add_special_tokens=False, return_offsets_mapping=True)
            body = self.max_length - 2
            windows = []  # (text index, piece ids, offsets)
            for u, (ids, offs) in enumerate(zip(enc["input_ids"], enc["offset_mapping"])):
                for i in range(0, max(1, len(ids)), body):
                    windows.append((u, ids[i:i + body], offs[i:i + body]))
            order = sorted(range(len(windows)), key=lambda k: len(windows[k][1]))
            labels: list[list[str]] = [[] for _ in windows]
            probs: list[list[float]] = [[] for _ in windows]
            with torch.inference_mode():
                for b in range(0, len(order), self.batch_size):
                    chunk = order[b:b + self.batch_size]
                    n = max(len(windows[k][1]) for k in chunk) + 2
                    ids = torch.full((len(chunk), n), tok.pad_token_id, dtype=torch.long)
                    mask = torch.zeros((len(chunk), n), dtype=torch.long)
                    for r, k in enumerate(chunk):
                        piece_ids = windows[k][1]
                        ids[r, :len(piece_ids) + 2] = torch.tensor([tok.cls_token_id, *piece_ids, tok.sep_token_id])
                        mask[r, :len(piece_ids) + 2] = 1
                    probs_all = self.model(input_ids=ids, attention_mask=mask).logits.float().softmax(-1)
                    # a piece is an entity when O is less likely than ``o_threshold``, even where no
                    # single entity label beats O (B-PER 0.3 + I-PER 0.3 against O 0.4)
                    p, best = probs_all[..., 1:].max(-1)
                    best = torch.where(probs_all[..., 0] < self.o_threshold, best + 1, 0)
                    for r, k in enumerate(chunk):
                        m = len(windows[k][1])
                        labels[k] = [self.id2label[j] for j in best[r, 1:m + 1].tolist()]
                        probs[k] = p[r, 1:m + 1].tolist()
            for k, (u, _, offs) in enumerate(windows):
                text = utexts[u]
                for s, e, kind, score in decode(labels[k], offs, probs[k]):
                    if kind not in self.types:
                        continue
                    s, e = widen(text, s, e)
                    found[u].append(Span(s, e, self.type_to_label.get(kind, kind), self.name, round(score, 4)))
        return [list(found[unique[t]]) if t in unique else [] for t in texts]
