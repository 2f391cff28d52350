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
import re
from typing import Any, Callable, Sequence

from veil.fill import typed
from veil.fill.entities import person_has_first_name
from veil.shapes import ORG_LABELS, PERSON_LABELS, PLACE_LABELS

#: the labels a ranking filler ranks by default: a person whose first name's gender is open (the
#: choice a sentence decides most often: "my daughter", "she"); ``rank_labels`` adds others
RANKED_LABELS = PERSON_LABELS
RANKABLE = PERSON_LABELS | PLACE_LABELS | ORG_LABELS | frozenset({"AGE", "MONEY"})
LEFT_WORDS, RIGHT_WORDS = 16, 8  # the context scored around the placeholder (its cost is the ranking's)


def ranks(label: str, shape: str | None, labels: frozenset[str] = RANKED_LABELS) -> bool:
    """Whether a typed draw of ``label`` is worth a ranking: a person's only where the gender is open."""
    if label not in labels:
        return False
    return label not in PERSON_LABELS or person_has_first_name(shape)

_SCORER: Any = None


_FEMALE = frozenset("she her hers herself daughter wife mother mom mum sister girlfriend aunt niece grandmother "
                    "grandma granddaughter lady woman girl mrs ms miss madam fiancee bride".split())
_MALE = frozenset("he him his himself son husband father dad brother boyfriend uncle nephew grandfather grandpa "
                  "grandson gentleman man boy mr sir fiance groom".split())
_PRONOUNS = frozenset("she her hers herself he him his himself".split())
_WORD_RE = re.compile(r"[A-Za-z]+")


def gender_cue(view: tuple[str, int, int, int | None], left_words: int = 4, right_words: int = 12) -> str | None:
    """``f`` / ``m`` where the words around a person's placeholder say so, else None: a kinship word or
    title just before it ("my daughter [PERSON_NAME_1]"), or the first he / she after it, up to the next
    placeholder ("[PERSON_NAME_1] called, she ..."). Read from the masked text only."""
    text, start, end, nxt = view
    left = [w.lower() for w in _WORD_RE.findall(text[max(0, start - 80):start])][-left_words:]
    for w in reversed(left):
        if w in _FEMALE and w not in _PRONOUNS:
            return "f"
        if w in _MALE and w not in _PRONOUNS:
            return "m"
    right = _WORD_RE.findall(text[end:nxt if nxt is not None else end + 200])[:right_words]
    for w in (w.lower() for w in right):
        if w in _PRONOUNS:
            return "f" if w in _FEMALE else "m"
    return None


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
    from veil.fill.context import marker_context

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
