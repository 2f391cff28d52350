"""Fill stage: a language model picks, among type-valid draws, the substitute that fits its sentence.

Without ranking a typed placeholder gets one draw of its type and shape (:mod:`veil.fill.entities`,
:mod:`veil.fill.formats`). With ranking (``rank_types=True``) it gets ``type_candidates`` draws, all
valid, and a causal LM scores each one in its sentence (the log-likelihood of the left context, the
candidate and the right context up to the next placeholder, :class:`~veil.fill.causal_scorer.CausalWordScorer`):
``top1`` takes the best, ``topk`` / ``sample`` draw with the scores' softmax. A person whose first
name's gender the shape leaves open gets draws of both genders, so "my daughter [PERSON_NAME_1]",
or a "she" after it, can pick a woman's name; an age after "retired at" can pick 67 over 19.

The candidates are draws from the document's RNG and the model sees only masked text, so ranking
changes which valid draw is kept, never what the original was. The model is the ``llm`` filler's
own (the same SmolLM2) or, for model-free fillers, SmolLM2-135M loaded once per process.
"""

from __future__ import annotations

import math
import random
from typing import Any, Callable, Sequence

from veil.fill import typed
from veil.fill.entities import person_has_first_name
from veil.shapes import ORG_LABELS, PERSON_LABELS, PLACE_LABELS

#: the labels a ranking filler ranks (the others have nothing in their sentence to fit: a phone number)
RANKED_LABELS = PERSON_LABELS | PLACE_LABELS | ORG_LABELS | frozenset({"AGE", "MONEY"})
LEFT_WORDS, RIGHT_WORDS = 32, 16  # the context scored around the placeholder

_SCORER: Any = None


def draw_candidates(label: str, shape: str | None, rng: random.Random, n: int, *, taken: Any = (),
                    forges: Callable[[str], bool] = lambda v: False, lowercase: bool = False) -> list[str]:
    """Up to ``n`` distinct type-valid values (both genders, alternately, for an open first name)."""
    gendered = label in PERSON_LABELS and person_has_first_name(shape)
    out: list[str] = []
    for _ in range(4 * n):
        if len(out) >= n:
            break
        v = typed.fake_value(label, rng, shape, ("f", "m")[len(out) % 2] if gendered else None)
        if lowercase:
            v = v.lower()
        if v not in out and v not in taken and not forges(v):
            out.append(v)
    return out


def choose(scorer: Any, views: Sequence[tuple[str, int, int, Any]], candidates: Sequence[Sequence[str]],
           rngs: Sequence[random.Random], sample: bool = False, temperature: float = 1.0) -> list[str | None]:
    """Per placeholder, the candidate its sentence scores best (``sample``: drawn with softmax(score / T))."""
    from veil.fill.causal_scorer import marker_context

    contexts = [marker_context(text, (s, e), LEFT_WORDS, RIGHT_WORDS, scorer.sentence_end)
                for text, s, e, _ in views]
    scores = scorer.score(contexts, [list(c) for c in candidates])
    out: list[str | None] = []
    for cands, sc, rng in zip(candidates, scores, rngs):
        if not cands:
            out.append(None)
        elif not sample or len(cands) == 1:
            out.append(cands[max(range(len(cands)), key=lambda j: sc[j])])
        else:
            top = max(sc)
            w = [math.exp((x - top) / max(temperature, 1e-6)) for x in sc]
            u, pick = rng.random() * sum(w), cands[-1]
            for c, x in zip(cands, w):
                u -= x
                if u < 0:
                    pick = c
                    break
            out.append(pick)
    return out


def default_scorer() -> Any:
    """SmolLM2-135M as a sentence scorer, loaded once per process (bf16 where the CPU computes it natively)."""
    global _SCORER
    from veil.fill.base import LOAD_LOCK

    with LOAD_LOCK:
        if _SCORER is None:
            from veil.fill.causal_scorer import CausalWordScorer
            from veil.models.smollm2 import load_causal_lm

            model, tok = load_causal_lm(None, dtype="auto")
            _SCORER = CausalWordScorer(model, tok, left_words=LEFT_WORDS, right_words=RIGHT_WORDS)
    return _SCORER
