"""Audit stage, PPMLM: probing a fine-tuned model at masked words (utility, privacy, membership)."""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Sequence

from veil.audit.metrics import Prediction
from veil.audit.ppmlm.methods import Chunk, TrainConfig
from veil.audit.ppmlm.sequences import masked_example


@dataclass(frozen=True)
class ProbePlan:
    """Which words of one chunk are masked, in rounds of at most ``share`` of its words each."""

    seq: int
    rounds: tuple[tuple[int, ...], ...]
    utility_words: frozenset[int]  # the random non-identifier words among them


def plan_probes(chunks: Sequence[Chunk], probe_words: set[str], share: float, seed: int,
                non_identifier: Sequence[Sequence[bool]] | None = None) -> list[ProbePlan]:
    """Mask every occurrence of a ``probe_words`` word plus ``share`` of the other words, spread
    over rounds so that no round masks more than ``share`` of a sequence's words (the training
    density). ``non_identifier[i][w]`` says which words may be drawn as utility words (default:
    words not in ``probe_words``)."""
    rng = random.Random(seed)
    plans = []
    for i, c in enumerate(chunks):
        n = len(c.words)
        ident = [w in probe_words for w in c.words]
        free = [j for j in range(n) if (non_identifier[i][j] if non_identifier is not None else not ident[j])]
        k = max(1, round(share * len(free))) if free else 0
        util = set(rng.sample(free, k)) if k else set()
        todo = sorted({j for j in range(n) if ident[j]} | util)
        rng.shuffle(todo)
        per = max(1, round(share * n))
        rounds = tuple(tuple(sorted(todo[r:r + per])) for r in range(0, len(todo), per))
        plans.append(ProbePlan(i, rounds, frozenset(util)))
    return plans


def probe(model: Any, tok: Any, chunks: Sequence[Chunk], plans: Sequence[ProbePlan], max_length: int,
          batch_size: int = 64, desc: str = "probe") -> list[Prediction]:
    """Top-1 predictions at every masked word of every round of every plan."""
    import torch
    from tqdm.auto import tqdm

    from veil.models.minilm import mlm_head

    jobs = sorted(((p.seq, r) for p in plans for r in p.rounds), key=lambda j: len(chunks[j[0]].input_ids))
    util = {p.seq: p.utility_words for p in plans}
    base = getattr(model, model.base_model_prefix)
    head = mlm_head(model)
    out: list[Prediction] = []
    model.eval()
    with torch.no_grad():
        for b in tqdm(range(0, len(jobs), batch_size), desc=desc, unit="batch"):
            batch = jobs[b:b + batch_size]
            rows = [masked_example(chunks[s], r, tok.mask_token_id, tok.pad_token_id, max_length) for s, r in batch]
            width = max(sum(r[1]) for r in rows)
            ids = torch.tensor([r[0][:width] for r in rows])
            am = torch.tensor([r[1][:width] for r in rows])
            lab = torch.tensor([r[2][:width] for r in rows])
            hidden = base(input_ids=ids, attention_mask=am).last_hidden_state
            sel = lab != -100
            pred = head(hidden[sel]).argmax(-1).tolist()
            where = sel.nonzero().tolist()
            got: dict[tuple[int, int], list[int]] = {}
            for (bi, ti), pid in zip(where, pred):
                s = batch[bi][0]
                got.setdefault((bi, chunks[s].word_ids[ti]), []).append(pid)
            for (bi, w), pids in got.items():
                s = batch[bi][0]
                c = chunks[s]
                truth_ids = [c.input_ids[t] for t, x in enumerate(c.word_ids) if x == w]
                word = "".join(tok.convert_tokens_to_string(tok.convert_ids_to_tokens(pids)).split()).lower()
                out.append(Prediction(s, w, c.words[w], word, pids == truth_ids,
                                      "utility" if w in util[s] else "identifier"))
    return out


def training_counts(chunks: Iterable[Chunk]) -> Counter:
    return Counter(w for c in chunks for w in c.words)


def config_dict(cfg: TrainConfig) -> dict[str, Any]:
    return asdict(cfg)


def finite(x: float) -> float | None:
    return x if isinstance(x, (int, float)) and math.isfinite(x) else None
