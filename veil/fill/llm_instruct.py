"""Fill stage: an instruction-tuned decoder LLM completes the masked sentence (the paper's LLaMA2 recipe).

Paper §4.2.4, on SmolLM2-135M-Instruct: the instruction "Predict the [MASK] tokens in the given
sentence", the masked sentence as input, the completed sentence as output; greedy generation.

Prompt format (the choice): SmolLM2-Instruct's own chat template (ChatML, its default system
message), one user turn ``"Predict the [MASK] tokens in the given sentence.\\n\\nInput: <masked>"``
and the assistant turn is the completed sentence. The chat template is what the model was
instruction-tuned on, so it also works before any fine-tuning; an Alpaca prompt would be new to it.
Every marker (typed or numbered too, and consecutive ``[MASK]`` merged by the fill loop) is shown to
the model as one ``[MASK]``, the form fine-tuning uses.

Parsing is strict on the words that were not masked: the output's words (``veil.textutil.WORD_RE``;
punctuation and case ignored) must be exactly the input's unmasked words, in order, with exactly
one word in place of each ``[MASK]``. Outputs that break this are counted (``stats``:
``instruct_broken_dropped`` when unmasked words were lost, changed or added,
``instruct_broken_multiword`` when a mask got zero or several words or the marker was echoed) and
their markers are filled by the ``llm`` scorer on the same model with any LoRA adapter switched off.

One generation fills all markers of a sentence, as in the paper: the answers for the later markers
are remembered and used when the fill loop comes back with the earlier markers filled by them.

``decode="ranked"`` (not in the paper) keeps the prompt and the tuned model but does not let it write
the whole answer: for each marker the answer is the input itself up to the marker (teacher-forced),
the model proposes whole words there (``CausalWordScorer``, adapter on) and each is scored by the
likelihood of the answer through the rest of the sentence. The answer cannot break the input, so
nothing falls back to another model, and Top-K gets a ranking from the tuned model itself; unlike the
``llm`` filler, the proposals see the whole sentence (it is in the prompt), right context included.

``finetune_instruct`` trains LoRA adapters (peft) on prompts built by masking a few random words of
each training text, with the loss on the output tokens only; ``veil fill --filler llm-instruct
--model ADAPTER_DIR`` loads the result.
"""

from __future__ import annotations

import logging
import random
from collections import OrderedDict
from pathlib import Path
from typing import Any, Iterable, Sequence

from veil.errors import VeilError
from veil.fill.base import CANDIDATE_MARGIN, LOAD_LOCK
from veil.fill.instruct_prompt import (DECODES, INSTRUCTION, MASK, align_output, answer_context, build_prompt,
                                       end_of_turn, render_window)
from veil.fill.causal_scorer import CausalWordScorer, _top
from veil.fill.loop import CandidateFiller
from veil.fill.lora import LoRAFinetuned
from veil.markers import MARKER_RE
from veil.textutil import iter_words

log = logging.getLogger(__name__)

class InstructLLMFiller(LoRAFinetuned, CandidateFiller):
    """``llm-instruct``: greedy completion of the masked sentence by an instruction-tuned LLM.

    ``model``: a LoRA adapter folder from ``veil finetune --filler llm-instruct``, or any causal LM
    ``veil.models.smollm2.load_causal_lm`` accepts (default: SmolLM2-135M-Instruct, zero-shot).
    The instruct answer is the first candidate; when more are wanted (Top-K, entity types), the
    ``llm`` scorer's ranking (adapter off) follows it. A Top-1 request gets the answer alone (no
    ranking is computed for it). ``decode="ranked"``: every candidate comes from the tuned model's
    ranking inside its answer (see the module's docstring); ``llm_options`` set that scorer's
    ``n_candidates`` / ``max_word_tokens`` in both modes.
    """

    name = "llm-instruct"
    description = "instruction-tuned SmolLM2"  # the report's legend
    version = 3  # 2: its llm ranking scores the end of the sentence; 3: typed placeholders drawn (LLMFiller.version)

    finetune_data = ("mask-free",)
    # untuned, the instruction model breaks most answers: its base scorer fills the corpus for --data top1/topk
    finetune_fill_filler = "llm"

    @staticmethod
    def lora_train() -> Any:
        """LoRA on "Predict the [MASK] tokens" prompts made from the text (:func:`finetune_instruct` options)."""
        return finetune_instruct

    def __init__(self, model: str | None = None, strategy: str = "top1", k: int = 10, seed: int = 0,
                 batch_size: int = 64, *, gen_batch_size: int = 16, max_new_tokens: int | None = None,
                 left_words: int = 48, right_words: int = 48, device: str | None = None,
                 dtype: str | None = None, model_obj: Any = None, tokenizer: Any = None,
                 llm_options: dict | None = None, memo_size: int = 100_000, decode: str = "generate",
                 **options) -> None:
        super().__init__(strategy=strategy, k=k, seed=seed, batch_size=batch_size, **options)
        if decode not in DECODES:
            raise VeilError(f"decode must be one of {', '.join(DECODES)}, got {decode!r}")
        self.decode = decode
        self.model_name = model
        self.gen_batch_size, self.max_new_tokens = gen_batch_size, max_new_tokens
        self.left_words, self.right_words = left_words, right_words
        self._load_kwargs = dict(device=device, dtype=dtype)
        self._given = (model_obj, tokenizer) if model_obj is not None else None
        self._llm_options = dict(llm_options or {})
        self._model = self._tok = None
        self._scorer: CausalWordScorer | None = None
        self._memo: OrderedDict[str, str] = OrderedDict()  # rendered input with its first mask -> word
        self._memo_size = memo_size

    # ---------------------------------------------------------------- model
    def _load(self) -> None:
        with LOAD_LOCK:
            if self._model is None:
                self._load_model()

    def _load_model(self) -> None:
        if self._given is not None:
            self._model, self._tok = self._given
        else:
            from veil.models.smollm2 import load_causal_lm

            self._model, self._tok = load_causal_lm(self.model_name, **self._load_kwargs)

    def load(self) -> "InstructLLMFiller":
        self._load()
        return self

    @property
    def scorer(self) -> CausalWordScorer:
        self._load()
        with LOAD_LOCK:
            if self._scorer is None:
                opts = {"n_candidates": max(32, self.k), **self._llm_options}
                self._scorer = CausalWordScorer(self._model, self._tok, **opts)
        return self._scorer

    def _adapter_off(self):
        import contextlib

        off = getattr(self._model, "disable_adapter", None)
        return off() if callable(off) else contextlib.nullcontext()

    # ---------------------------------------------------------------- generation
    def generate(self, inputs: Sequence[str]) -> list[str]:
        """Greedy completions (the assistant turn's text) for masked sentences, batched."""
        import torch

        self._load()
        tok, model = self._tok, self._model
        device = next(model.parameters()).device
        eot = end_of_turn(tok)
        eot_id = tok.convert_tokens_to_ids(eot) if eot in tok.get_vocab() else tok.eos_token_id
        pad_id = tok.pad_token_id if tok.pad_token_id is not None else eot_id
        outs: list[str] = [""] * len(inputs)
        order = sorted(range(len(inputs)), key=lambda i: len(inputs[i]))
        for b in range(0, len(order), self.gen_batch_size):
            idx = order[b:b + self.gen_batch_size]
            prompts = [tok(build_prompt(tok, inputs[i]), add_special_tokens=False)["input_ids"] for i in idx]
            L = max(len(p) for p in prompts)
            ids = torch.full((len(idx), L), pad_id, dtype=torch.long)
            mask = torch.zeros(len(idx), L, dtype=torch.long)
            for r, p in enumerate(prompts):  # left padding for generation
                ids[r, L - len(p):] = torch.tensor(p)
                mask[r, L - len(p):] = 1
            n_in = max(len(tok(inputs[i], add_special_tokens=False)["input_ids"]) for i in idx)
            max_new = self.max_new_tokens or int(n_in * 1.5) + 16
            with torch.no_grad():
                gen = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), do_sample=False,
                                     max_new_tokens=max_new, eos_token_id=eot_id, pad_token_id=pad_id)
            for r, i in enumerate(idx):
                new = gen[r, L:].tolist()
                if eot_id in new:
                    new = new[:new.index(eot_id)]
                outs[i] = tok.decode(new, skip_special_tokens=True).strip()
        return outs

    # ---------------------------------------------------------------- back-end
    def propose_batch(self, texts: Sequence[str], targets: Sequence[tuple[int, int]],
                      k: int) -> list[list[tuple[str, float]]]:
        if len(texts) != len(targets):
            raise VeilError(f"{len(texts)} texts but {len(targets)} targets")
        if self.decode == "ranked":
            return self._propose_ranked(texts, targets, k)
        windows = [render_window(t, tg, self.left_words, self.right_words) for t, tg in zip(texts, targets)]
        answers: list[str | None] = [None] * len(texts)
        todo = []
        for i, (inp, j) in enumerate(windows):
            key = _memo_key(inp, j)
            if key in self._memo:
                answers[i] = self._memo[key]
                self.stats["instruct_memo_hits"] += 1
            else:
                todo.append(i)
        if todo:
            uniq = list(dict.fromkeys(windows[i][0] for i in todo))
            gens = dict(zip(uniq, self.generate(uniq)))
            for inp in uniq:
                status, fills = align_output(inp, gens[inp])
                self.stats["instruct_sentences"] += 1
                if status != "ok":
                    self.stats[f"instruct_broken_{status}"] += 1
                    log.debug("instruct output broke the input (%s): %r -> %r", status, inp, gens[inp])
                    continue
                self._remember(inp, fills)
            for i in todo:
                answers[i] = self._memo.get(_memo_key(*windows[i]))
        # A Top-1 request (one word plus the fill loop's spare margin) takes the instruct answer as
        # it is: the answer is a checked whole word, so the llm ranking is computed only where the
        # output broke the input or more candidates are wanted (Top-K, entity types).
        need_llm = [i for i in range(len(texts)) if answers[i] is None or k > 1 + CANDIDATE_MARGIN]
        ranked: dict[int, list[tuple[str, float]]] = {}
        if need_llm:
            ranked = self._llm_rank(texts, targets, need_llm, k)
        out = []
        for i in range(len(texts)):
            if answers[i] is None:
                self.stats["instruct_fallback_markers"] += 1
                out.append(ranked[i])
            else:
                rest = [(w, s) for w, s in ranked.get(i, []) if w != answers[i]]
                out.append([(answers[i], 0.0)] + rest[:k - 1])
        broken = self.stats["instruct_broken_dropped"] + self.stats["instruct_broken_multiword"]
        if todo:
            log.info("llm-instruct: %d sentences generated so far, %d broke the input (%d dropped words, "
                     "%d not one word per mask) and fell back to llm", self.stats["instruct_sentences"], broken,
                     self.stats["instruct_broken_dropped"], self.stats["instruct_broken_multiword"])
        return out

    def _llm_rank(self, texts: Sequence[str], targets: Sequence[tuple[int, int]], idx: Sequence[int],
                  k: int) -> dict[int, list[tuple[str, float]]]:
        """The ``llm`` scorer's ranking (adapter off) of the markers ``idx``: the fallback of both modes."""
        with self._adapter_off():
            return dict(zip(idx, self.scorer.rank([texts[i] for i in idx], [targets[i] for i in idx], k)))

    def _propose_ranked(self, texts: Sequence[str], targets: Sequence[tuple[int, int]],
                        k: int) -> list[list[tuple[str, float]]]:
        """``decode="ranked"``: the tuned model (adapter on) proposes whole words for the marker inside
        its own answer and ranks them by the likelihood of the answer (``answer_context``)."""
        scorer = self.scorer
        ctx = [answer_context(self._tok, t, tg, self.left_words, self.right_words) for t, tg in zip(texts, targets)]
        # the model may copy the prompt's "[MASK]" into its answer: never a substitute
        cands = [[w for w in ws if w.casefold() != "mask"] for ws in scorer.propose(ctx)]
        scores = scorer.score(ctx, cands)
        out = [_top(c, sc, k) for c, sc in zip(cands, scores)]
        empty = [i for i, r in enumerate(out) if not r]
        if empty:  # nothing but the marker proposed: the llm scorer (adapter off) fills, as in generate mode
            for i, r in self._llm_rank(texts, targets, empty, k).items():
                out[i] = r
            self.stats["instruct_fallback_markers"] += len(empty)
        self.stats["instruct_ranked_markers"] += len(texts) - len(empty)
        return out

    def _remember(self, inp: str, fills: list[str]) -> None:
        """Store the answer for every mask of ``inp``, also keyed by the input as it reads once the
        masks before it are filled with this same answer (what the fill loop sends next under Top-1)."""
        state = inp
        for j in range(len(fills)):
            if j:
                state = _fill_first_mask(state, fills[j - 1])
            for i, w in enumerate(fills[j:]):
                key = _memo_key(state, i)
                self._memo[key] = w
                self._memo.move_to_end(key)
        while len(self._memo) > self._memo_size:
            self._memo.popitem(last=False)

    def parse_report(self) -> dict[str, int]:
        """How many generated sentences broke the input and fell back to ``llm``."""
        s = self.stats
        return {"sentences": s["instruct_sentences"], "broken_dropped_words": s["instruct_broken_dropped"],
                "broken_not_one_word": s["instruct_broken_multiword"],
                "fallback_markers": s["instruct_fallback_markers"], "memo_hits": s["instruct_memo_hits"],
                "ranked_markers": s["instruct_ranked_markers"]}


def _memo_key(inp: str, mask_index: int) -> str:
    return f"{mask_index}\x00{inp}"


def _fill_first_mask(inp: str, word: str) -> str:
    return inp.replace(MASK, word, 1)


# ------------------------------------------------------------------------------ fine-tuning
def training_examples(texts: Iterable[Any], *, max_words: int = 48, mask_rate: float = 0.15,
                      max_masks: int = 3, seed: int = 0, limit: int | None = None) -> tuple[list[tuple[str, str]], int]:
    """``(masked input, completed output)`` pairs: each text cut into pieces of at most ``max_words``
    words (at line breaks first), a few random words of each piece replaced by ``[MASK]``.
    Texts that still contain markers are skipped (a masked, unfilled corpus); returns the pairs and
    the number skipped."""
    rng = random.Random(seed)
    pairs: list[tuple[str, str]] = []
    skipped = 0
    for t in texts:
        text = t if isinstance(t, str) else getattr(t, "text", None)
        if not isinstance(text, str):
            raise VeilError(f"fine-tuning texts must be strings or documents with a text, got {type(t).__name__}")
        if MARKER_RE.search(text):
            skipped += 1
            continue
        for piece in _pieces(text, max_words):
            words = list(iter_words(piece))
            if len(words) < 2:
                continue
            n = max(1, min(max_masks, round(mask_rate * len(words))))
            chosen = sorted(rng.sample(range(len(words)), n))
            out, pos = [], 0
            for j in chosen:
                s, e, _ = words[j]
                out.append(piece[pos:s])
                out.append(MASK)
                pos = e
            out.append(piece[pos:])
            pairs.append(("".join(out), piece))
            if limit is not None and len(pairs) >= limit:
                return pairs, skipped
    return pairs, skipped


def _pieces(text: str, max_words: int) -> Iterable[str]:
    for line in text.splitlines():
        line = " ".join(line.split())
        if not line:
            continue
        spans = list(iter_words(line))
        for i in range(0, len(spans), max_words):
            chunk = spans[i:i + max_words]
            end = spans[i + max_words][0] if i + max_words < len(spans) else len(line)
            yield line[chunk[0][0] if i else 0:end].strip()


def encode_example(tokenizer: Any, masked: str, completed: str, max_tokens: int = 256) -> tuple[list[int], list[int]]:
    """Token ids of prompt + answer and labels that are -100 on the prompt (loss on the output only)."""
    prompt = tokenizer(build_prompt(tokenizer, masked), add_special_tokens=False)["input_ids"]
    answer = tokenizer(completed + end_of_turn(tokenizer), add_special_tokens=False)["input_ids"]
    ids = (prompt + answer)[:max_tokens]
    labels = ([-100] * len(prompt) + answer)[:max_tokens]
    return ids, labels


def finetune_instruct(texts: Iterable[Any], output_dir: str | Path, *, model: str | None = None,
                      epochs: float = 1.0, learning_rate: float = 2e-4, batch_size: int = 8,
                      lora_r: int = 8, lora_alpha: int = 16, lora_dropout: float = 0.05,
                      target_modules: Sequence[str] = ("q_proj", "k_proj", "v_proj", "o_proj"),
                      mask_rate: float = 0.15, max_masks: int = 3, max_words: int = 48, max_tokens: int = 256,
                      limit: int | None = None, max_steps: int | None = None, seed: int = 0,
                      device: str | None = None,
                      model_obj: Any = None, tokenizer: Any = None, progress: bool = True) -> dict:
    """LoRA fine-tuning of the ``llm-instruct`` filler (paper §4.2.4); returns a summary dict.

    ``texts``: strings or documents (``.text``) without markers: the mask-free documents of a corpus
    or a filled corpus. Each piece gets a few random words masked (``mask_rate`` of its words, 1 to
    ``max_masks``). ``max_steps`` overrides ``epochs``. Adapters, tokenizer and ``veil_adapter.json`` (the base model's name) are
    written to ``output_dir`` (replaced atomically) and load with
    ``veil fill --filler llm-instruct --model OUTPUT_DIR``. Runs on a GPU when one is present.
    A plain loop rather than ``transformers.Trainer``: minutes-long CPU runs need no checkpointing
    or distributed set-up, and the loop shows every training default on one screen.
    """
    from veil.fill.lora import base_name, check_output, load_base, save_adapter, train_lora

    out = Path(output_dir)
    check_output(out)
    pairs, skipped = training_examples(texts, max_words=max_words, mask_rate=mask_rate, max_masks=max_masks,
                                       seed=seed, limit=limit)
    if not pairs:
        raise VeilError("no training text: every text was empty or still contained markers "
                        f"({skipped} skipped); fine-tune on mask-free or filled documents")
    if skipped:
        log.warning("skipped %d texts that still contain markers", skipped)
    base, tok, device = load_base(model, model_obj, tokenizer, device)
    examples = [encode_example(tok, m, c, max_tokens) for m, c in pairs]
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    peft_model, info = train_lora(base, examples, pad_id=pad_id, device=device, epochs=epochs,
                                  learning_rate=learning_rate, batch_size=batch_size, lora_r=lora_r,
                                  lora_alpha=lora_alpha, lora_dropout=lora_dropout, target_modules=target_modules,
                                  seed=seed, max_steps=max_steps, desc="llm-instruct LoRA", progress=progress)
    total = info["steps"]
    summary = {"base_model": base_name(model, base, model_obj is not None), "examples": len(pairs),
               "skipped_texts": skipped, "epochs": epochs, **info, "instruction": INSTRUCTION,
               "prompt_format": "chat-template" if getattr(tok, "chat_template", None) else "plain"}
    save_adapter(peft_model, tok, out, summary)
    log.info("llm-instruct adapters saved to %s (%d examples, %d steps, loss %.3f -> %.3f, %.0f s)", out,
             len(pairs), total, summary["first_loss"], summary["final_loss"], summary["seconds"])
    return summary
