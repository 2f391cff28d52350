"""Fill stage: whole-word candidates for a gap, proposed and ranked by a causal LM (the ``llm`` filler's scorer).

Exact, not approximate: each marker's left context is encoded once and its key/value cache shared by its
candidates, batched by length, the LM head run only where a probability is needed; each sentence is tokenised
whole, so scores equal a naive scorer's (``tests/fill/naive_llm.py``) up to float rounding.
"""

from __future__ import annotations

import logging
import re
from typing import AbstractSet, Any, Iterable, Sequence

from veil.errors import VeilError
from veil.fill.context import MarkerContext, _first_words, marker_context  # noqa: F401  (re-exported)
from veil.markers import MARKER_RE
from veil.textutil import WORD_RE

log = logging.getLogger(__name__)

_WORD_BODY = r"[^\W_]+(?:['\u2019][^\W_]+)*"
_START_PIECE_RE = re.compile(_WORD_BODY)  # a piece that starts a word (no leading space)
_CONT_PIECE_RE = re.compile(r"(?:['\u2019])?" + _WORD_BODY)  # a piece that continues one ("uter", "'t")


class CausalWordScorer:
    """Whole-word candidates for a gap in a text, ranked by full-sentence log-likelihood."""

    def __init__(self, model: Any, tokenizer: Any, *, n_candidates: int = 32, max_word_tokens: int = 6,
                 start_token_id: int | None = None, token_budget: int = 4096,
                 left_words: int = 64, right_words: int = 32, exclude_pool: int = 4,
                 sentence_end: str | None = "\n", shortlist: int | None = None, shortlist_words: int = 4,
                 verify: "CausalWordScorer | None" = None, verify_margin: float = 1.0,
                 progress: bool = False) -> None:
        import torch

        if shortlist is not None and (shortlist < 1 or shortlist_words < 1):
            raise VeilError("shortlist and shortlist_words must be at least 1 (shortlist=None scores every candidate)")
        self.shortlist, self.shortlist_words = shortlist, shortlist_words
        # verify: an exact (fp32) scorer on the same model that re-scores the candidates within
        # verify_margin of the best, so a bf16 rounding cannot decide a close call
        self.verify, self.verify_margin = verify, verify_margin
        self.torch = torch
        self.model, self.tok = model, tokenizer
        self.n_candidates, self.max_word_tokens = n_candidates, max_word_tokens
        self.exclude_pool = max(1, exclude_pool)
        self.token_budget, self.left_words, self.right_words = token_budget, left_words, right_words
        self.sentence_end = sentence_end
        self.progress = progress
        if start_token_id is None:
            start_token_id = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        if start_token_id is None:
            raise VeilError("the tokenizer has neither a BOS nor an EOS token; pass start_token_id")
        self.start_id = int(start_token_id)
        self.device = next(model.parameters()).device
        self._build_vocab_tables()

    # ---------------------------------------------------------------- vocabulary
    def _build_vocab_tables(self) -> None:
        torch = self.torch
        n = self._head().weight.shape[0]
        pieces = self._pieces(n)
        special = set(self.tok.all_special_ids)
        space_start = torch.zeros(n, dtype=torch.bool)
        bare_start = torch.zeros(n, dtype=torch.bool)
        cont = torch.zeros(n, dtype=torch.bool)
        for i, p in enumerate(pieces):
            if i in special or not p:
                continue
            if p[0] == " " and _START_PIECE_RE.fullmatch(p, 1):
                space_start[i] = True
            if _START_PIECE_RE.fullmatch(p):
                bare_start[i] = True
            if _CONT_PIECE_RE.fullmatch(p):
                cont[i] = True
        self.pieces = pieces
        self.space_start, self.bare_start, self.cont = (t.to(self.device) for t in (space_start, bare_start, cont))

    def _pieces(self, n: int) -> list[str]:
        """The text each token id adds to a decoded string (leading space included)."""
        toks = self.tok.convert_ids_to_tokens(list(range(n)))
        out = []
        for i, t in enumerate(toks):
            if t is None:
                out.append("")
                continue
            if t.startswith("\u2581"):  # SentencePiece word start
                out.append(" " + t[1:])
                continue
            out.append(self.tok.decode([i], clean_up_tokenization_spaces=False))
        return out

    # ---------------------------------------------------------------- model pieces
    def _head(self) -> Any:
        return self.model.get_output_embeddings()

    def _decoder(self) -> Any:
        return self.model.get_decoder()

    def encode(self, text: str) -> list[int]:
        return [self.start_id] + self.tok(text, add_special_tokens=False)["input_ids"]

    def _split_left(self, left: str) -> tuple[list[int], bool]:
        """Token ids of the left context as cached, and whether a word after it starts with a space."""
        if left.endswith(" "):
            return self.encode(left[:-1]), True
        return self.encode(left), False

    def _log_probs_at(self, hidden: Any, targets: Any | None = None, chunk: int = 512) -> Any:
        """log-softmax of the head at ``hidden`` ([T, H]); gathered at ``targets`` ([T]) if given."""
        torch = self.torch
        head = self._head()
        outs = []
        for i in range(0, hidden.shape[0], chunk):
            logits = head(hidden[i:i + chunk]).float()
            if targets is None:
                outs.append(torch.log_softmax(logits, -1))
            else:
                t = targets[i:i + chunk]
                outs.append(logits.gather(1, t[:, None])[:, 0] - torch.logsumexp(logits, -1))
        return torch.cat(outs) if outs else hidden.new_zeros((0,))

    def _forward(self, input_ids: Any, attention_mask: Any, position_ids: Any, cache: Any | None) -> tuple[Any, Any]:
        out = self._decoder()(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                              past_key_values=cache, use_cache=True)
        return out.last_hidden_state, out.past_key_values

    # ---------------------------------------------------------------- prefixes
    def _encode_prefixes(self, prefixes: list[list[int]]) -> dict:
        """One right-padded forward over the left contexts: per-layer K/V, hidden states, lengths."""
        torch = self.torch
        lens = torch.tensor([len(p) for p in prefixes])
        L = int(lens.max())
        ids = torch.full((len(prefixes), L), self.start_id, dtype=torch.long)
        for i, p in enumerate(prefixes):
            ids[i, :len(p)] = torch.tensor(p)
        mask = (torch.arange(L)[None, :] < lens[:, None]).long()
        pos = torch.arange(L)[None, :].expand(len(prefixes), L)
        hidden, cache = self._forward(ids.to(self.device), mask.to(self.device), pos.to(self.device), None)
        kv = [(layer.keys, layer.values) for layer in cache.layers]
        return {"kv": kv, "hidden": hidden, "lens": lens, "mask": mask, "ids": ids, "L": L, "prefixes": prefixes}

    def _gather_cache(self, pre: dict, rows: Any) -> Any:
        from transformers.cache_utils import DynamicCache

        idx = rows.to(self.device)
        return DynamicCache(ddp_cache_data=[(k.index_select(0, idx), v.index_select(0, idx)) for k, v in pre["kv"]])

    # ---------------------------------------------------------------- proposals
    def propose(self, contexts: Sequence[MarkerContext],
                exclude: Sequence[AbstractSet[str] | None] | None = None) -> list[list[str]]:
        """Whole-word candidates per context, in order of first-token probability (deduplicated).

        ``exclude[i]`` (lower-cased words) keeps those words out of context ``i``'s list: the model
        proposes ``exclude_pool`` times as many first tokens there, and the first ``n_candidates``
        words not excluded are kept (the masked word of an allow-list technique is never on its list,
        so listed proposals would only crowd out the plausible ones); when every proposal is
        excluded, the plain list is returned."""
        splits = [self._split_left(c.left) for c in contexts]
        excl = self._exclude_list(contexts, exclude)
        out: list[list[str]] = [[] for _ in contexts]
        for group in self._prefix_groups(splits):
            with self.torch.no_grad():
                pre = self._encode_prefixes([splits[i][0] for i in group])
                for i, ws in zip(group, self._propose_pre(pre, [splits[i][1] for i in group],
                                                          [excl[i] for i in group])):
                    out[i] = ws
        return out

    def _exclude_list(self, contexts: Sequence[MarkerContext], exclude: Any) -> list[AbstractSet[str] | None]:
        excl = list(exclude) if exclude is not None else [None] * len(contexts)
        if len(excl) != len(contexts):
            raise VeilError(f"{len(excl)} exclude sets for {len(contexts)} contexts")
        return excl

    def _prefix_groups(self, splits: Sequence[tuple[list[int], bool]]) -> list[list[int]]:
        """Markers whose left contexts are encoded in one forward (and then proposed and scored together)."""
        return _budget_groups([len(s[0]) for s in splits], 1, self.token_budget, max_group=64)

    def _propose_pre(self, pre: dict, spaces: Sequence[bool],
                     excl: Sequence[AbstractSet[str] | None]) -> list[list[str]]:
        """:meth:`propose` for the markers of one encoded prefix batch (row ``m`` of ``pre``)."""
        torch = self.torch
        M = len(spaces)
        last = pre["hidden"][torch.arange(M), (pre["lens"] - 1).to(self.device)]
        lp = self._log_probs_at(last)
        allowed = torch.stack([self.space_start if sp else self.bare_start for sp in spaces])
        lp = lp.masked_fill(~allowed, float("-inf"))
        out: list[list[str]] = []
        # extension rows (n_first per marker, each with the marker's cached prefix) in budget-sized chunks
        n_all = self.n_candidates * (self.exclude_pool if any(excl) else 1)
        per_chunk = max(1, self.token_budget // max(1, n_all * (pre["L"] + self.max_word_tokens)))
        for c0 in range(0, M, per_chunk):
            rows = list(range(c0, min(M, c0 + per_chunk)))
            n_want = self.n_candidates * (self.exclude_pool if any(excl[m] for m in rows) else 1)
            n_first = min(n_want, int(allowed[rows].sum(1).min()))
            first = lp[rows].topk(n_first, dim=1).indices.cpu()  # [rows, N]
            words = self._extend(pre, first, torch.tensor(rows))
            for m, ws in zip(rows, words):
                # (in a chunk with excluding contexts, a context without exclusion keeps its own first
                # n_candidates tokens; an exclusion that leaves nothing keeps the listed words, as Top-K does)
                plain = self._words(ws[:self.n_candidates])
                if excl[m]:
                    kept = self._words(w for w in ws if w is None or w.lower() not in excl[m])[:self.n_candidates]
                    out.append(kept or plain)
                else:
                    out.append(plain)
        return out

    @staticmethod
    def _words(ws: Iterable[str | None]) -> list[str]:
        """Usable whole words, first occurrence kept, in order."""
        seen: dict[str, None] = {}
        for w in ws:
            if w is not None and WORD_RE.fullmatch(w) and not MARKER_RE.search(w):
                seen.setdefault(w, None)
        return list(seen)

    def _extend(self, pre: dict, first: Any, pre_rows: Any) -> list[list[str | None]]:
        """Greedy whole-word extension of every first token, all rows of all markers batched
        (``first[m]`` are the first tokens of the marker in row ``pre_rows[m]`` of ``pre``)."""
        torch = self.torch
        M, N = first.shape
        marker_of = pre_rows.repeat_interleave(N)
        toks = [[int(t)] for t in first.reshape(-1)]
        active = torch.arange(M * N)
        cache = None
        for step in range(self.max_word_tokens - 1):
            if len(active) == 0:
                break
            if cache is None:
                cache = self._gather_cache(pre, marker_of[active])
            inp = torch.tensor([toks[r][-1] for r in active])[:, None]
            plens = pre["lens"][marker_of[active]]
            ext_mask = torch.ones(len(active), step + 1, dtype=torch.long)
            mask = torch.cat([pre["mask"][marker_of[active]], ext_mask], 1)
            pos = (plens + step)[:, None]
            hidden, cache = self._forward(inp.to(self.device), mask.to(self.device), pos.to(self.device), cache)
            nxt = self._head()(hidden[:, -1]).argmax(-1)
            keep = self.cont[nxt].cpu()
            for r, t, k in zip(active.tolist(), nxt.cpu().tolist(), keep.tolist()):
                if k:
                    toks[r].append(t)
            if not bool(keep.any()):
                break
            sel = keep.nonzero()[:, 0]
            cache.batch_select_indices(sel.to(self.device))
            active = active[sel]
        words: list[list[str | None]] = [[] for _ in range(M)]
        for r in range(M * N):
            w = "".join(self.pieces[t] for t in toks[r]).strip()
            words[r // N].append(w or None)
        return words

    # ---------------------------------------------------------------- scoring
    def score(self, contexts: Sequence[MarkerContext], candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        """Full-sentence log-likelihood of ``left + word + right`` for every candidate word."""
        scores: list[list[float]] = [[0.0] * len(c) for c in candidates]
        marker_ids = [i for i in range(len(contexts)) if candidates[i]]
        splits = [self._split_left(contexts[i].left) for i in marker_ids]
        for group in self._prefix_groups(splits):
            ids = [marker_ids[g] for g in group]
            with self.torch.no_grad():
                pre = self._encode_prefixes([splits[g][0] for g in group])
                for i, row in zip(ids, self._score_pre(pre, [contexts[i] for i in ids], [candidates[i] for i in ids])):
                    scores[i] = row
        return scores

    def _prefix_cum(self, pre: dict) -> list[list[float]]:
        """``cum[m][j]``: log-prob of prefix ``m``'s tokens 1..j-1 (token 0 is the start token); computed once."""
        if "cum" in pre:
            return pre["cum"]
        torch = self.torch
        prefixes = pre["prefixes"]
        flat_h, flat_t = [], []
        for m, p in enumerate(prefixes):
            if len(p) > 1:
                flat_h.append(pre["hidden"][m, :len(p) - 1])
                flat_t.extend(p[1:])
        lps: list[float] = []
        if flat_h:
            lps = self._log_probs_at(torch.cat(flat_h), torch.tensor(flat_t, device=self.device)).cpu().tolist()
        cum: list[list[float]] = []
        pos = 0
        for p in prefixes:
            c = [0.0, 0.0]
            for j in range(1, len(p)):
                c.append(c[-1] + lps[pos])
                pos += 1
            cum.append(c)
        pre["cum"] = cum
        return cum

    def _score_pre(self, pre: dict, contexts: Sequence[MarkerContext], candidates: Sequence[Sequence[str]],
                   pre_rows: Sequence[int] | None = None) -> list[list[float]]:
        """:meth:`score` for markers of one encoded prefix batch (``contexts[i]``'s left context is row
        ``pre_rows[i]`` of ``pre``; by default row ``i``)."""
        prefixes = pre["prefixes"]
        cum = self._prefix_cum(pre)
        scores: list[list[float]] = [[0.0] * len(c) for c in candidates]
        if pre_rows is None:
            pre_rows = range(len(contexts))
        # rows: (prefix row, marker i, candidate j, lcp, suffix ids)
        rows = []
        for i, (m, c, words) in enumerate(zip(pre_rows, contexts, candidates)):
            p = prefixes[m]
            for j, w in enumerate(words):
                full = self.encode(c.left + w + c.right)
                lcp = 0
                while lcp < min(len(p), len(full)) and p[lcp] == full[lcp]:
                    lcp += 1
                if lcp == len(full):  # the candidate added no token: cannot happen for a non-empty word
                    lcp -= 1
                rows.append((m, i, j, lcp, full[lcp:]))
        rows.sort(key=lambda r: len(r[4]))
        L = pre["L"]
        start = 0
        while start < len(rows):
            end = start + 1
            while end < len(rows) and (end + 1 - start) * (L + len(rows[end][4])) <= self.token_budget:
                end += 1
            self._score_rows(pre, cum, rows[start:end], scores)
            start = end
        return scores

    def _score_rows(self, pre: dict, cum, rows, scores) -> None:
        torch = self.torch
        B = len(rows)
        S = max(len(r[4]) for r in rows)
        pre_rows = torch.tensor([r[0] for r in rows])
        ids = torch.full((B, S), self.start_id, dtype=torch.long)
        smask = torch.zeros(B, S, dtype=torch.long)
        pmask = pre["mask"][pre_rows].clone()
        pos = torch.zeros(B, S, dtype=torch.long)
        for b, (m, _, _, lcp, suf) in enumerate(rows):
            ids[b, :len(suf)] = torch.tensor(suf)
            smask[b, :len(suf)] = 1
            pmask[b, lcp:] = 0  # prefix tokens this sentence does not share are hidden
            pos[b] = lcp + torch.arange(S)
        cache = self._gather_cache(pre, pre_rows)
        mask = torch.cat([pmask, smask], 1)
        hidden, _ = self._forward(ids.to(self.device), mask.to(self.device), pos.to(self.device), cache)
        # predictors: suffix token 0 <- prefix hidden at lcp-1; token t <- suffix hidden at t-1
        hs, ts = [], []
        for b, (m, _, _, lcp, suf) in enumerate(rows):
            hs.append(pre["hidden"][m, lcp - 1:lcp])
            if len(suf) > 1:
                hs.append(hidden[b, :len(suf) - 1])
            ts.extend(suf)
        lps = self._log_probs_at(torch.cat(hs), torch.tensor(ts, device=self.device)).cpu()
        pos_ = 0
        for m, i, j, lcp, suf in rows:
            total = float(lps[pos_:pos_ + len(suf)].double().sum())
            pos_ += len(suf)
            scores[i][j] = cum[m][lcp] + total

    # ---------------------------------------------------------------- ranking
    def contexts(self, texts: Sequence[str], targets: Sequence[tuple[int, int]]) -> list[MarkerContext]:
        if len(texts) != len(targets):
            raise VeilError(f"{len(texts)} texts but {len(targets)} targets")
        return [marker_context(t, tg, self.left_words, self.right_words, self.sentence_end)
                for t, tg in zip(texts, targets)]

    def rank(self, texts: Sequence[str], targets: Sequence[tuple[int, int]], k: int,
             exclude: Sequence[AbstractSet[str] | None] | None = None) -> list[list[tuple[str, float]]]:
        """The best ``k`` candidates per marker with their full-sentence scores. Each group of markers'
        left contexts is encoded once and serves the proposals and every scoring pass."""
        ctx = self.contexts(texts, targets)
        splits = [self._split_left(c.left) for c in ctx]
        excl = self._exclude_list(ctx, exclude)
        out: list[list[tuple[str, float]]] = [[] for _ in ctx]
        for group in self._prefix_groups(splits):
            gctx = [ctx[i] for i in group]
            with self.torch.no_grad():
                pre = self._encode_prefixes([splits[i][0] for i in group])
                cands = self._propose_pre(pre, [splits[i][1] for i in group], [excl[i] for i in group])
                cands, scores = self._shortlist_scores(pre, gctx, cands, k)
            if self.verify is not None:
                self._verify_close_calls(gctx, cands, scores)
            for i, c, sc in zip(group, cands, scores):
                out[i] = _top(c, sc, k)
        return out

    def _verify_close_calls(self, contexts: Sequence[MarkerContext], cands: list[list[str]],
                            scores: list[list[float]]) -> None:
        """Re-score with :attr:`verify` the candidates within ``verify_margin`` of each marker's best
        (where there are two or more): they replace the approximate scores, the others move below them."""
        close: list[tuple[int, list[int]]] = []
        for m, sc in enumerate(scores):
            if len(sc) > 1:
                best = max(sc)
                idx = [j for j, v in enumerate(sc) if v >= best - self.verify_margin]
                if len(idx) > 1:
                    close.append((m, idx))
        if not close:
            return
        exact = self.verify.score([contexts[m] for m, _ in close], [[cands[m][j] for j in idx] for m, idx in close])
        for (m, idx), ex in zip(close, exact):
            floor = min(ex) - self.verify_margin  # the others stay ranked, below every verified one
            shift = max(scores[m]) - floor
            scores[m] = [v - shift for v in scores[m]]
            for j, v in zip(idx, ex):
                scores[m][j] = v

    def _shortlist_scores(self, pre: dict, contexts: Sequence[MarkerContext], cands: list[list[str]],
                          k: int) -> tuple[list[list[str]], list[list[float]]]:
        """Full-sentence scores, of every candidate (``shortlist`` None: exact) or of a shortlist.

        With ``shortlist = n``, a marker with more than ``max(n, k)`` candidates first scores them all
        with the right context cut after ``shortlist_words`` words (where the right context is no
        longer than that, this *is* the full score and nothing more is done), and only the best
        ``max(n, k)`` of that quick ranking get the full-sentence score. The right context far from
        the gap rarely reorders candidates, and the full pass is what costs: rows are as long as the
        right context."""
        n = max(self.shortlist or 0, k)
        quick = [m for m, ws in enumerate(cands) if self.shortlist is not None and len(ws) > n]
        final: list[list[float] | None] = [None] * len(cands)
        if quick:
            qctx = [MarkerContext(contexts[m].left, _first_words(contexts[m].right, self.shortlist_words))
                    for m in quick]
            qscores = self._score_pre(pre, qctx, [cands[m] for m in quick], quick)
            for m, qc, qs in zip(quick, qctx, qscores):
                if qc.right == contexts[m].right:  # the quick score is the full score
                    final[m] = qs
                    continue
                best = sorted(range(len(qs)), key=lambda j: -qs[j])[:n]
                cands[m] = [cands[m][j] for j in sorted(best)]  # first-token order kept (ties)
        rest = [m for m in range(len(cands)) if final[m] is None]
        if rest:
            for m, sc in zip(rest, self._score_pre(pre, [contexts[m] for m in rest], [cands[m] for m in rest], rest)):
                final[m] = sc
        return cands, final  # type: ignore[return-value]


def _budget_groups(lengths: Sequence[int], rows_each: int, budget: int, max_group: int | None = None) -> list[list[int]]:
    """Indices grouped (shortest first) so that ``len(group) * rows_each * max length <= budget``."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    groups: list[list[int]] = []
    for i in order:
        g = groups[-1] if groups else None
        if g is not None and (len(g) + 1) * rows_each * lengths[i] <= budget and (max_group is None or len(g) < max_group):
            g.append(i)
        else:
            groups.append([i])
    return groups


def _top(words: Sequence[str], scores: Sequence[float], k: int) -> list[tuple[str, float]]:
    ranked = sorted(zip(words, scores), key=lambda ws: -ws[1])
    return ranked[:k]
