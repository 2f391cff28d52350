"""Fill stage: a decoder LLM (SmolLM2-135M-Instruct offline) proposes and ranks whole-word substitutes.

For one marker in a masked text the ``llm`` filler

1. **proposes** candidate words from the left context: the model's next-token distribution after
   the left context, restricted to tokens that start a word, top ``n_candidates`` first tokens, each
   extended greedily (arg-max continuation pieces such as ``uter`` after `` comp``) to a whole word;
2. **re-scores** every candidate by the log-likelihood of the whole sentence
   ``start + left + candidate + right`` under the same model, so the right context counts too, and
   ranks by that score (higher is better).

Context rules: the right context stops just before the next marker (later markers are filled
afterwards, left to right, so the text after them is not yet a sentence) and at ``right_words``
words; the left context keeps the last ``left_words`` words. When the scored text runs to the end
of the document, ``sentence_end`` (default a line break: the corpora are one sentence or utterance a
line) is appended, so the score includes the probability that the sentence *ends* there: without
it a marker at the end of a sentence was scored by the left context alone and got continuation
words ("the", "in", "of" were 31 of 85 sentence-final Top-1 fills on PTB), which taught the
downstream LM that sentences end on "the". Markers left of the target (which the
left-to-right loop has already filled, so only direct callers see them) are kept verbatim.
User text escaped by the mask stage (``[\\MASK]``) is unescaped for the model.

Speed (exact, not approximate): the left context is encoded once per marker and its key/value cache
is shared by all of that marker's candidates; candidates of many markers are scored together in
length-sorted batches; the LM head runs only at the positions whose probability is needed. The
tokenisation of every full sentence is exactly the one a naive scorer uses (each sentence is
tokenised whole and only its common prefix with the cached left context is reused), so the scores
equal :meth:`CausalWordScorer.score_naive`'s up to float rounding. ``score_naive`` and
``propose_naive`` (one forward per sequence, no cache) are kept as the reference for tests and
``bench/bench_fill_llm_speed.py``.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import AbstractSet, Any, Iterable, Sequence

from veil.errors import VeilError
from veil.fill.base import CandidateFiller
from veil.markers import MARKER_RE, unescape
from veil.textutil import WORD_RE

log = logging.getLogger(__name__)

_WORD_BODY = r"[^\W_]+(?:['\u2019][^\W_]+)*"
_START_PIECE_RE = re.compile(_WORD_BODY)  # a piece that starts a word (no leading space)
_CONT_PIECE_RE = re.compile(r"(?:['\u2019])?" + _WORD_BODY)  # a piece that continues one ("uter", "'t")
#: a marker, or a run of markers the fill loop merged into one slot ("[MASK] [MASK]")
_SLOTS_RE = re.compile(MARKER_RE.pattern + r"(?:\s+" + MARKER_RE.pattern + r")*")


@dataclass(frozen=True)
class MarkerContext:
    """What the model sees for one marker: ``left`` + candidate + ``right`` (strings)."""

    left: str
    right: str


def marker_context(text: str, target: tuple[int, int], left_words: int = 64,
                   right_words: int = 32, sentence_end: str | None = None) -> MarkerContext:
    """The left and right context strings scored around the marker at ``text[target[0]:target[1]]``.

    ``sentence_end`` is appended to the right context when it reaches the end of ``text`` (no later
    marker, not cut at ``right_words``)."""
    s, e = target
    if not (0 <= s < e <= len(text)) or not _SLOTS_RE.fullmatch(text, s, e):
        raise VeilError(f"target {target} is not a marker in the text {text[:60]!r}...")
    left, right = text[:s], text[e:]
    nxt = MARKER_RE.search(right)
    at_end = nxt is None
    if nxt:  # later markers are filled later: the sentence scored ends before the next one
        right = right[:nxt.start()].rstrip()
    if left_words is not None:
        starts = [m.start() for m in WORD_RE.finditer(left)]
        if len(starts) > left_words:
            left = left[starts[-left_words]:]
    if right_words is not None:
        ends = [m.end() for m in WORD_RE.finditer(right)]
        if len(ends) > right_words:
            right = right[:ends[right_words - 1]]
            at_end = False
    if at_end and sentence_end:
        right = right.rstrip() + sentence_end
    return MarkerContext(unescape(left), unescape(right))


class CausalWordScorer:
    """Whole-word candidates for a gap in a text, ranked by full-sentence log-likelihood."""

    def __init__(self, model: Any, tokenizer: Any, *, n_candidates: int = 32, max_word_tokens: int = 6,
                 start_token_id: int | None = None, token_budget: int = 4096,
                 left_words: int = 64, right_words: int = 32, exclude_pool: int = 4,
                 sentence_end: str | None = "\n", progress: bool = False) -> None:
        import torch

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
        return {"kv": kv, "hidden": hidden, "lens": lens, "mask": mask, "ids": ids, "L": L}

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
        torch = self.torch
        out: list[list[str] | None] = [None] * len(contexts)
        splits = [self._split_left(c.left) for c in contexts]
        excl = list(exclude) if exclude is not None else [None] * len(contexts)
        if len(excl) != len(contexts):
            raise VeilError(f"{len(excl)} exclude sets for {len(contexts)} contexts")
        pool = self.n_candidates * (self.exclude_pool if any(excl) else 1)
        for chunk in _budget_groups([len(s[0]) + self.max_word_tokens for s in splits], pool, self.token_budget):
            n_want = self.n_candidates * (self.exclude_pool if any(excl[i] for i in chunk) else 1)
            with torch.no_grad():
                pre = self._encode_prefixes([splits[i][0] for i in chunk])
                last = pre["hidden"][torch.arange(len(chunk)), (pre["lens"] - 1).to(self.device)]
                lp = self._log_probs_at(last)
                allowed = torch.stack([self.space_start if splits[i][1] else self.bare_start for i in chunk])
                lp = lp.masked_fill(~allowed, float("-inf"))
                n_first = min(n_want, int(allowed.sum(1).min()))
                first = lp.topk(n_first, dim=1).indices.cpu()  # [M, N]
                words = self._extend(pre, first)
            for i, ws in zip(chunk, words):
                # (in a chunk with excluding contexts, a context without exclusion keeps its own first
                # n_candidates tokens; an exclusion that leaves nothing keeps the listed words, as Top-K does)
                plain = self._words(ws[:self.n_candidates])
                if excl[i]:
                    kept = self._words(w for w in ws if w is None or w.lower() not in excl[i])[:self.n_candidates]
                    out[i] = kept or plain
                else:
                    out[i] = plain
        return out  # type: ignore[return-value]

    @staticmethod
    def _words(ws: Iterable[str | None]) -> list[str]:
        """Usable whole words, first occurrence kept, in order."""
        seen: dict[str, None] = {}
        for w in ws:
            if w is not None and WORD_RE.fullmatch(w) and not MARKER_RE.search(w):
                seen.setdefault(w, None)
        return list(seen)

    def _extend(self, pre: dict, first: Any) -> list[list[str | None]]:
        """Greedy whole-word extension of every first token, all rows of all markers batched."""
        torch = self.torch
        M, N = first.shape
        marker_of = torch.arange(M).repeat_interleave(N)
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
        torch = self.torch
        scores: list[list[float]] = [[0.0] * len(c) for c in candidates]
        marker_ids = [i for i in range(len(contexts)) if candidates[i]]
        lens = [len(self._split_left(contexts[i].left)[0]) for i in marker_ids]
        for group in _budget_groups(lens, 1, self.token_budget, max_group=64):
            with torch.no_grad():
                self._score_group(contexts, candidates, [marker_ids[g] for g in group], scores)
        return scores

    def _score_group(self, contexts, candidates, group: list[int], scores: list[list[float]]) -> None:
        torch = self.torch
        prefixes = [self._split_left(contexts[i].left)[0] for i in group]
        pre = self._encode_prefixes(prefixes)
        # log-prob of every prefix token, cumulated: cum[m][j] = log p(prefix[1:j])
        plens = pre["lens"]
        flat_h, flat_t = [], []
        for m, p in enumerate(prefixes):
            if len(p) > 1:
                flat_h.append(pre["hidden"][m, :len(p) - 1])
                flat_t.extend(p[1:])
        cum: list[list[float]] = []
        if flat_h:
            lps = self._log_probs_at(torch.cat(flat_h), torch.tensor(flat_t, device=self.device)).cpu().tolist()
        pos = 0
        for p in prefixes:
            c = [0.0, 0.0]
            for j in range(1, len(p)):
                c.append(c[-1] + lps[pos])
                pos += 1
            cum.append(c)  # c[j] = log-prob of prefix tokens 1..j-1 (token 0 is the start token)
        # rows: (marker slot m, candidate j, lcp, suffix ids)
        rows = []
        for m, i in enumerate(group):
            p = prefixes[m]
            for j, w in enumerate(candidates[i]):
                full = self.encode(contexts[i].left + w + contexts[i].right)
                lcp = 0
                while lcp < min(len(p), len(full)) and p[lcp] == full[lcp]:
                    lcp += 1
                if lcp == len(full):  # the candidate added no token: cannot happen for a non-empty word
                    lcp -= 1
                rows.append((m, j, lcp, full[lcp:]))
        rows.sort(key=lambda r: len(r[3]))
        L = pre["L"]
        start = 0
        while start < len(rows):
            end = start + 1
            while end < len(rows) and (end + 1 - start) * (L + len(rows[end][3])) <= self.token_budget:
                end += 1
            self._score_rows(pre, cum, rows[start:end], group, scores)
            start = end

    def _score_rows(self, pre: dict, cum, rows, group, scores) -> None:
        torch = self.torch
        B = len(rows)
        S = max(len(r[3]) for r in rows)
        ids = torch.full((B, S), self.start_id, dtype=torch.long)
        smask = torch.zeros(B, S, dtype=torch.long)
        pmask = pre["mask"][torch.tensor([r[0] for r in rows])].clone()
        pos = torch.zeros(B, S, dtype=torch.long)
        for b, (m, _, lcp, suf) in enumerate(rows):
            ids[b, :len(suf)] = torch.tensor(suf)
            smask[b, :len(suf)] = 1
            pmask[b, lcp:] = 0  # prefix tokens this sentence does not share are hidden
            pos[b] = lcp + torch.arange(S)
        cache = self._gather_cache(pre, torch.tensor([r[0] for r in rows]))
        mask = torch.cat([pmask, smask], 1)
        hidden, _ = self._forward(ids.to(self.device), mask.to(self.device), pos.to(self.device), cache)
        # predictors: suffix token 0 <- prefix hidden at lcp-1; token t <- suffix hidden at t-1
        hs, ts = [], []
        for b, (m, _, lcp, suf) in enumerate(rows):
            hs.append(pre["hidden"][m, lcp - 1:lcp])
            if len(suf) > 1:
                hs.append(hidden[b, :len(suf) - 1])
            ts.extend(suf)
        lps = self._log_probs_at(torch.cat(hs), torch.tensor(ts, device=self.device)).cpu()
        pos_ = 0
        for m, j, lcp, suf in rows:
            total = float(lps[pos_:pos_ + len(suf)].double().sum())
            pos_ += len(suf)
            scores[group[m]][j] = cum[m][lcp] + total

    # ---------------------------------------------------------------- ranking
    def contexts(self, texts: Sequence[str], targets: Sequence[tuple[int, int]]) -> list[MarkerContext]:
        if len(texts) != len(targets):
            raise VeilError(f"{len(texts)} texts but {len(targets)} targets")
        return [marker_context(t, tg, self.left_words, self.right_words, self.sentence_end)
                for t, tg in zip(texts, targets)]

    def rank(self, texts: Sequence[str], targets: Sequence[tuple[int, int]], k: int,
             exclude: Sequence[AbstractSet[str] | None] | None = None) -> list[list[tuple[str, float]]]:
        ctx = self.contexts(texts, targets)
        cands = self.propose(ctx, exclude)
        scores = self.score(ctx, cands)
        return [_top(c, s, k) for c, s in zip(cands, scores)]

    # ---------------------------------------------------------------- naive reference
    def score_naive(self, contexts: Sequence[MarkerContext], candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        """The same scores, the way a user would write it: one full-sentence forward per candidate."""
        torch = self.torch
        out = []
        with torch.no_grad():
            for c, ws in zip(contexts, candidates):
                row = []
                for w in ws:
                    ids = torch.tensor([self.encode(c.left + w + c.right)], device=self.device)
                    logits = self.model(input_ids=ids).logits[0].float()
                    lp = torch.log_softmax(logits[:-1], -1).gather(1, ids[0, 1:, None])[:, 0]
                    row.append(float(lp.double().sum()))
                out.append(row)
        return out

    def propose_naive(self, contexts: Sequence[MarkerContext]) -> list[list[str]]:
        """The same proposals without any cache or batching: a full forward per extension step."""
        torch = self.torch
        out = []
        with torch.no_grad():
            for c in contexts:
                prefix, sp = self._split_left(c.left)
                logits = self.model(input_ids=torch.tensor([prefix], device=self.device)).logits[0, -1].float()
                allowed = self.space_start if sp else self.bare_start
                lp = torch.log_softmax(logits, -1).masked_fill(~allowed, float("-inf"))
                first = lp.topk(min(self.n_candidates, int(allowed.sum()))).indices.tolist()
                seen: dict[str, None] = {}
                for t in first:
                    toks = [t]
                    while len(toks) < self.max_word_tokens:
                        ids = torch.tensor([prefix + toks], device=self.device)
                        nxt = int(self.model(input_ids=ids).logits[0, -1].argmax())
                        if not bool(self.cont[nxt]):
                            break
                        toks.append(nxt)
                    w = "".join(self.pieces[x] for x in toks).strip()
                    if w and WORD_RE.fullmatch(w) and not MARKER_RE.search(w):
                        seen.setdefault(w, None)
                out.append(list(seen))
        return out

    def rank_naive(self, texts: Sequence[str], targets: Sequence[tuple[int, int]], k: int) -> list[list[tuple[str, float]]]:
        ctx = self.contexts(texts, targets)
        cands = self.propose_naive(ctx)
        scores = self.score_naive(ctx, cands)
        return [_top(c, s, k) for c, s in zip(cands, scores)]


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


class LLMFiller(CandidateFiller):
    """``llm``: candidate words from a causal LM's left-context proposals, ranked by full-sentence
    log-likelihood. ``model``: ``None``/``"smollm2"`` (packaged SmolLM2-135M-Instruct), a hub name,
    a local checkpoint, a ``.gguf`` file or a saved LoRA adapter folder."""

    name = "llm"
    supports_exclude = True
    #: bumped when the same options give other rankings (2: ``sentence_end``), so cached fills are not reused
    version = 2

    finetune_data = ("mask-free",)

    @classmethod
    def finetune(cls, docs, output_dir, *, texts=None, data="mask-free", model=None, rounds=1, k=10, seed=0,
                 progress=True, **options):
        """Next-token LoRA on the corpus text (:func:`veil.fill.llm_finetune.finetune_causal` options)."""
        from veil.fill.base import finetune_texts, lora_options
        from veil.fill.llm_finetune import finetune_causal

        texts = finetune_texts(cls.name, docs, data, texts, rounds)
        try:
            info = finetune_causal(texts, output_dir, model=model, seed=seed, progress=progress,
                                   **lora_options(options))
        except TypeError as e:
            raise VeilError(f"llm fine-tuning: {e}") from None
        return {"texts": len(texts), **(info or {})}

    def __init__(self, model: str | None = None, strategy: str = "top1", k: int = 10, seed: int = 0,
                 batch_size: int = 64, *, n_candidates: int = 32, max_word_tokens: int = 6,
                 left_words: int = 64, right_words: int = 32, token_budget: int = 4096, exclude_pool: int = 4,
                 sentence_end: str | None = "\n", device: str | None = None, dtype: str | None = None,
                 start_token_id: int | None = None, model_obj: Any = None, tokenizer: Any = None,
                 **options) -> None:
        super().__init__(strategy=strategy, k=k, seed=seed, batch_size=batch_size, **options)
        if n_candidates < 1 or max_word_tokens < 1:
            raise VeilError("n_candidates and max_word_tokens must be at least 1")
        self.model_name = model
        self._scorer_kwargs = dict(n_candidates=max(n_candidates, k), max_word_tokens=max_word_tokens,
                                   left_words=left_words, right_words=right_words, token_budget=token_budget,
                                   start_token_id=start_token_id, exclude_pool=exclude_pool,
                                   sentence_end=sentence_end)
        self._load_kwargs = dict(device=device, dtype=dtype)
        self._given = (model_obj, tokenizer) if model_obj is not None else None
        self._scorer: CausalWordScorer | None = None

    @property
    def scorer(self) -> CausalWordScorer:
        if self._scorer is None:
            if self._given is not None:
                model, tok = self._given
            else:
                from veil.models.smollm2 import load_causal_lm

                model, tok = load_causal_lm(self.model_name, **self._load_kwargs)
            self._scorer = CausalWordScorer(model, tok, **self._scorer_kwargs)
        return self._scorer

    def propose_batch(self, texts: Sequence[str], targets: Sequence[tuple[int, int]], k: int,
                      exclude: Sequence[AbstractSet[str] | None] | None = None) -> list[list[tuple[str, float]]]:
        return self.scorer.rank(texts, targets, k, exclude)
