"""Test reference for the fill stage (the tests and a benchmark): the ``llm`` filler's scorer written naively.

One full-sentence forward per candidate and one forward per extension step, no cache, no batching:
what a user would write. ``bench/bench_fill_llm_speed.py`` times veil's scorer against it and the
tests check that veil's cached, batched scorer gives the same proposals and scores. It lives with
the tests, not in the package, because no user of veil needs it.
"""

from __future__ import annotations

from typing import Any, Sequence

from veil.fill.causal_scorer import WORD_RE, MarkerContext, _top
from veil.markers import MARKER_RE


def score_naive(scorer: Any, contexts: Sequence[MarkerContext], candidates: Sequence[Sequence[str]]) -> list[list[float]]:
    """The same scores, the way a user would write it: one full-sentence forward per candidate."""
    torch = scorer.torch
    out = []
    with torch.no_grad():
        for c, ws in zip(contexts, candidates):
            row = []
            for w in ws:
                ids = torch.tensor([scorer.encode(c.left + w + c.right)], device=scorer.device)
                logits = scorer.model(input_ids=ids).logits[0].float()
                lp = torch.log_softmax(logits[:-1], -1).gather(1, ids[0, 1:, None])[:, 0]
                row.append(float(lp.double().sum()))
            out.append(row)
    return out


def propose_naive(scorer: Any, contexts: Sequence[MarkerContext]) -> list[list[str]]:
    """The same proposals without any cache or batching: a full forward per extension step."""
    torch = scorer.torch
    out = []
    with torch.no_grad():
        for c in contexts:
            prefix, sp = scorer._split_left(c.left)
            logits = scorer.model(input_ids=torch.tensor([prefix], device=scorer.device)).logits[0, -1].float()
            allowed = scorer.space_start if sp else scorer.bare_start
            lp = torch.log_softmax(logits, -1).masked_fill(~allowed, float("-inf"))
            first = lp.topk(min(scorer.n_candidates, int(allowed.sum()))).indices.tolist()
            seen: dict[str, None] = {}
            for t in first:
                toks = [t]
                while len(toks) < scorer.max_word_tokens:
                    ids = torch.tensor([prefix + toks], device=scorer.device)
                    nxt = int(scorer.model(input_ids=ids).logits[0, -1].argmax())
                    if not bool(scorer.cont[nxt]):
                        break
                    toks.append(nxt)
                w = "".join(scorer.pieces[x] for x in toks).strip()
                if w and WORD_RE.fullmatch(w) and not MARKER_RE.search(w):
                    seen.setdefault(w, None)
            out.append(list(seen))
    return out


def rank_naive(scorer: Any, texts: Sequence[str], targets: Sequence[tuple[int, int]], k: int) -> list[list[tuple[str, float]]]:
    ctx = scorer.contexts(texts, targets)
    cands = propose_naive(scorer, ctx)
    scores = score_naive(scorer, ctx, cands)
    return [_top(c, s, k) for c, s in zip(cands, scores)]
