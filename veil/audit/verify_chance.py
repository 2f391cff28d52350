"""Audit stage: ``veil verify``'s judgement of substitutes that hold a removed value by chance.

The fill never sees a value, so a draw from a short list can equal it: an age among ninety, a state
among fifty. Such a substitute is no leak, but a fill that copies originals looks the same, one
substitute at a time. The two differ in how often it happens, so verify judges the count:

- **the pool** of each substitute is measured, not assumed: :data:`DRAWS` draws of its type and
  shape from the fill's own typed draw (:func:`veil.fill.typed.fake_value`, which every filler uses
  for typed placeholders; :func:`veil.fill.typed.plain_word` for other labels), seeded, so a run is
  repeatable. The chance ``q`` that a draw holds one of its document's removed values is the share
  of those draws in which the document's keys are found, with one hit and one miss added
  (Laplace's rule: a value the draws never showed is unlikely, not impossible), and the pool is
  ``1 / q`` ("one draw in nine");
- **the test**: the substitutes that hold a removed value (``observed``) against ``expected``, the
  sum of ``q`` over every substitute (each entity of a document once: a repeated mention reuses its
  substitute), as a Poisson count. The run fails when ``P(X >= observed)`` is below :data:`ALPHA`:
  more matches than the pools explain. A filler that copies one original in ten gives about a
  tenth of its values; pools of fifty and more explain a few hundredths.

The pools are those of the typed draw; a model filler's own words for ``[MASK]`` (``llm``, ``mlm``)
are measured against the plain-word list it falls back to, which is what the measure can know.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

#: draws measured per type and shape
DRAWS = 200
#: the chance matches fail the run when a count this large or larger has less than this probability
ALPHA = 0.001


@dataclass(slots=True)
class SubstituteHit:
    """A substitute that holds a removed value of its document (or group)."""

    doc: str
    placeholder: str
    label: str
    start: int
    end: int
    value: str = ""
    pool: float | None = None  # 1 / q: one draw in ``pool`` holds a removed value of this document
    draws: int = 0  # draws measured for its type and shape (0: no draw of its type is known)
    hits: int = 0  # of which held a removed value


@dataclass(slots=True)
class Chance:
    """The count of chance matches against what the pools explain."""

    observed: int = 0
    expected: float = 0.0
    substitutes: int = 0
    p_value: float = 1.0
    alpha: float = ALPHA

    @property
    def explained(self) -> bool:
        return self.p_value >= self.alpha

    def to_dict(self) -> dict[str, Any]:
        return {"observed": self.observed, "expected": round(self.expected, 4), "substitutes": self.substitutes,
                "p_value": self.p_value, "alpha": self.alpha, "explained": self.explained}


def poisson_tail(k: int, lam: float) -> float:
    """``P(X >= k)`` for a Poisson count of mean ``lam``, summed from ``k`` up (precise where it is tiny)."""
    if k <= 0:
        return 1.0
    if lam <= 0:
        return 0.0
    log_term = -lam + k * math.log(lam) - math.lgamma(k + 1)
    total, i = 0.0, k
    while i < k + 100000:
        t = math.exp(log_term)
        total += t
        if i > lam and t < total * 1e-12:
            break
        i += 1
        log_term += math.log(lam / i)
    return min(1.0, total)


@lru_cache(maxsize=4096)
def draw_sample(label: str, shape: str | None, n: int = DRAWS) -> tuple[str, ...]:
    """``n`` seeded draws of the fill's typed draw for ``label`` in ``shape`` (plain words for other labels)."""
    from veil.fill import typed

    rng = random.Random(f"veil verify {label} {shape}")
    if typed.has_fallback(label):
        try:
            return tuple(typed.fake_value(label, rng, shape) for _ in range(n))
        except (KeyError, ValueError, IndexError):  # a shape the draw cannot keep: the fill drew without it
            if shape is not None:
                return draw_sample(label, None, n)
    return tuple(typed.plain_word(rng) for _ in range(n))


def judge(groups: Sequence[tuple[Any, Sequence[tuple[str, Any, str | None, bool]]]],
          alpha: float = ALPHA) -> tuple[Chance, list[SubstituteHit]]:
    """``groups``: (a matcher of the group's removed values, its entities as (doc id, a substitution,
    shape, whether the substitute holds a removed value)) -> the count judged, the chance matches."""
    from veil.audit.verify_match import TextIndex

    chance = Chance(alpha=alpha)
    hits: list[SubstituteHit] = []
    for matcher, subs in groups:
        memo: dict[tuple[str, str | None], int] = {}
        for doc, s, shape, matched in subs:
            key = (s.label, shape)
            if key not in memo:
                memo[key] = sum(any(matcher.scan(TextIndex(d))) for d in draw_sample(s.label, shape))
            h = memo[key]
            q = (h + 1) / (DRAWS + 2)
            chance.substitutes += 1
            chance.expected += q
            if matched:
                chance.observed += 1
                hits.append(SubstituteHit(doc, s.placeholder, s.label, s.start, s.end, s.substitute,
                                          round(1 / q, 1), DRAWS, h))
    chance.p_value = poisson_tail(chance.observed, chance.expected)
    return chance, hits
