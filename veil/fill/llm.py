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

The proposing and scoring is :class:`veil.fill.causal_scorer.CausalWordScorer`.
"""

from __future__ import annotations

import logging
from typing import AbstractSet, Any, Sequence

from veil.errors import VeilError
from veil.fill.base import LOAD_LOCK
from veil.fill.causal_scorer import CausalWordScorer
from veil.fill.lora import LoRAFinetuned
from veil.fill.loop import CandidateFiller

log = logging.getLogger(__name__)


def _low_precision_copy(model: Any, dtype: Any) -> Any:
    """A copy of ``model`` in ``dtype`` (plain ``nn.Linear`` layers: the oneDNN fp32 path does not apply)."""
    import copy

    from veil.models.cpu_linear import restore_linears

    low = copy.deepcopy(model)
    restore_linears(low)
    return low.to(dtype)


class LLMFiller(LoRAFinetuned, CandidateFiller):
    """``llm``: candidate words from a causal LM's left-context proposals, ranked by full-sentence
    log-likelihood. ``model``: ``None``/``"smollm2"`` (packaged SmolLM2-135M-Instruct), a hub name,
    a local checkpoint, a ``.gguf`` file or a saved LoRA adapter folder.

    ``rank_candidates=False`` skips the full-sentence scores for the ``topk`` strategy with
    ``n_candidates <= k``: the draw is uniform among the K proposals, so the scores would only order
    a set that every draw takes whole. The set and each word's chance are the same; which word a given
    seed draws differs (the draw walks a permutation of the list), so it is an option, part of the
    cache key, and not the default. About 45% of a Top-K fill's time on a CPU (the demo). Any other
    strategy, or more proposals than K, needs the scores: asking for it there is an error.
    """

    name = "llm"
    description = "the SmolLM2 scorer"  # the report's legend: "filled by the SmolLM2 scorer"
    supports_exclude = True
    #: bumped when the same options give other rankings (2: ``sentence_end``; 3: bf16 where native, the
    #: shortlist; 4: typed placeholders drawn by type and shape), so cached fills are not reused
    version = 4

    finetune_data = ("mask-free",)

    @staticmethod
    def lora_train() -> Any:
        """Next-token LoRA on the corpus text (:func:`veil.fill.llm_finetune.finetune_causal` options)."""
        from veil.fill.llm_finetune import finetune_causal

        return finetune_causal

    def __init__(self, model: str | None = None, strategy: str = "top1", k: int = 10, seed: int = 0,
                 batch_size: int = 64, *, n_candidates: int = 32, max_word_tokens: int = 6,
                 left_words: int = 64, right_words: int = 32, token_budget: int = 4096, exclude_pool: int = 4,
                 sentence_end: str | None = "\n", shortlist: int | None = 6, shortlist_words: int = 4,
                 verify_margin: float | None = 1.0, device: str | None = None, dtype: str | None = "auto",
                 start_token_id: int | None = None, model_obj: Any = None, tokenizer: Any = None,
                 verify_obj: Any = None, rank_candidates: bool = True, **options) -> None:
        super().__init__(strategy=strategy, k=k, seed=seed, batch_size=batch_size, **options)
        if n_candidates < 1 or max_word_tokens < 1:
            raise VeilError("n_candidates and max_word_tokens must be at least 1")
        if not isinstance(rank_candidates, bool):
            raise VeilError(f"rank_candidates must be true or false, got {rank_candidates!r}")
        if not rank_candidates and (strategy != "topk" or n_candidates > k):
            raise VeilError("rank_candidates: false needs strategy topk with n_candidates <= k (got "
                            f"strategy {strategy}, n_candidates {n_candidates}, k {k}): otherwise the "
                            "full-sentence scores decide the choice")
        self.rank_candidates = rank_candidates
        self.model_name = model
        self._scorer_kwargs = dict(n_candidates=max(n_candidates, k), max_word_tokens=max_word_tokens,
                                   left_words=left_words, right_words=right_words, token_budget=token_budget,
                                   start_token_id=start_token_id, exclude_pool=exclude_pool,
                                   sentence_end=sentence_end, shortlist=shortlist, shortlist_words=shortlist_words)
        self.verify_margin = verify_margin
        self._load_kwargs = dict(device=device, dtype="auto" if dtype is None else dtype)
        self._given = (model_obj, tokenizer) if model_obj is not None else None
        self._verify_obj = verify_obj
        self._scorer: CausalWordScorer | None = None

    @property
    def scorer(self) -> CausalWordScorer:
        """The scorer, built on first use. With ``dtype="auto"`` (the default) on a device that computes
        bf16 natively, the model is loaded in fp32 and a bf16 copy ranks; the fp32 model re-scores
        the close calls (``verify_margin``), so Top-1 follows the fp32 model where bf16 rounding could
        flip it. ``model_obj`` callers pass ``verify_obj`` (the fp32 model) for the same."""
        with LOAD_LOCK:
            if self._scorer is None:
                self._scorer = self._build_scorer()
        return self._scorer

    def load(self) -> "LLMFiller":
        self.scorer
        return self

    def _build_scorer(self) -> CausalWordScorer:
        import torch

        exact = self._verify_obj
        if self._given is not None:
            model, tok = self._given
        else:
            from veil.models.smollm2 import load_causal_lm, resolve_device, resolve_dtype

            kw = dict(self._load_kwargs)
            low = resolve_dtype(kw["dtype"], resolve_device(kw["device"]))
            if kw["dtype"] == "auto":
                kw["dtype"] = "float32"
            model, tok = load_causal_lm(self.model_name, **kw)
            if low is not torch.float32 and next(model.parameters()).dtype is torch.float32:
                exact, model = model, _low_precision_copy(model, low)
        verify = None
        if exact is not None and self.verify_margin is not None:
            verify = CausalWordScorer(exact, tok, **{**self._scorer_kwargs, "shortlist": None})
        return CausalWordScorer(model, tok, **self._scorer_kwargs, verify=verify,
                                verify_margin=self.verify_margin or 0.0)

    @property
    def type_scorer(self) -> CausalWordScorer:
        """Typed draws are ranked (``rank_types``) by this filler's own model."""
        return self.scorer

    def propose_batch(self, texts: Sequence[str], targets: Sequence[tuple[int, int]], k: int,
                      exclude: Sequence[AbstractSet[str] | None] | None = None) -> list[list[tuple[str, float]]]:
        if not self.rank_candidates:
            # every proposal is drawn with the same chance (see the class docstring): no scores to give
            words = self.scorer.propose(self.scorer.contexts(texts, targets), exclude)
            return [[(w, float("nan")) for w in ws] for ws in words]
        return self.scorer.rank(texts, targets, k, exclude)
