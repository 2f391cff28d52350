"""Detect and mask stage: the tagger's span rules, named, switchable and each tested on its own.

:func:`tidy` runs the registered rules (:data:`REGISTRY`, in order) on the tagger's spans before they become
placeholders; ``rules`` (``NeuralTaggerMasker(rules=...)``, ``--set neural_tagger.rules=...``) chooses them:
``default``, ``none``, ``-breed,-trim_edges`` (all but those) or a list of names. :func:`describe` lists
them, one line each.
"""

from __future__ import annotations

from typing import Sequence

# the modules register their rules on import, in this order: a span's ends and type, a name made whole,
# then the rules on all spans, then the naming contexts
from veil.mask.neural.rules import spans as _spans  # noqa: F401
from veil.mask.neural.rules import names as _names  # noqa: F401
from veil.mask.neural.rules import lists as _lists  # noqa: F401
from veil.mask.neural.rules import naming as _naming  # noqa: F401
from veil.mask.neural.rules.base import REGISTRY, Rule, run, select
from veil.types import Span

__all__ = ["REGISTRY", "Rule", "apply_rule", "describe", "select", "tidy"]


def tidy(text: str, spans: Sequence[Span], written: bool | None = None,
         rules: str | Sequence[str] | Sequence[Rule] | None = None) -> list[Span]:
    """``spans`` (tagger types) after the span rules ``rules`` (default: those on by default, in registry order); ``written``
    says whether the text is a written document (default: ``detectors.base.is_written``)."""
    from veil.mask.detectors.base import is_written

    written = is_written(text) if written is None else written
    chosen = rules if rules and all(isinstance(r, Rule) for r in rules) else select(rules)  # type: ignore[arg-type]
    return run(text, spans, written, chosen)  # type: ignore[arg-type]


def apply_rule(name: str, text: str, spans: Sequence[Span], written: bool = False) -> list[Span]:
    """``spans`` after the one rule ``name`` alone (sorted, as :func:`tidy` sorts them): a rule's table test."""
    return run(text, spans, written, select([name]))


def describe() -> list[tuple[str, str, str]]:
    """``(name, kind, first paragraph of its docstring)`` of every rule, in the order they run."""
    return [(r.name, r.kind, r.summary) for r in REGISTRY.values()]
