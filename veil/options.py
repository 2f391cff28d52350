"""Option values checked against the types their owner declares: one line for ``--set dlp.min_score=abc``.

A component's constructor (a masker, a filler) and a settings dataclass (``LMSettings``,
``TaskSettings``, ``ASRSettings``) declare their options' types in their annotations. A value of
another type -- text where a number belongs, as ``--set dlp.min_score=abc`` or an experiment's
``--set lm.finetune_epochs=abc`` give -- used to pass construction and fail deep in the work (a
comparison of a float with a string) with a traceback, or after hours of pre-training. Here it is
one line before the work. Only simple annotations are checked (``int``, ``float``, ``bool``,
``str``, ``None`` and their unions); richer ones are left to their owner.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable, Mapping

from veil.errors import VeilError

_SIMPLE: dict[str, tuple[type, ...]] = {"int": (int,), "float": (int, float), "bool": (bool,), "str": (str,),
                                        "None": (type(None),)}
_WORDS = {"int": "a whole number", "float": "a number", "bool": "true or false", "str": "text", "None": "null"}


def _annotation_text(annotation: Any) -> str | None:
    if annotation is inspect.Parameter.empty:
        return None
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("NoneType", "None")


def check_value(label: str, value: Any, annotation: Any) -> None:
    """Refuse ``value`` for the option ``label`` names when its simple ``annotation`` does not admit it."""
    text = _annotation_text(annotation)
    if text is None:
        return
    parts = [p.strip() for p in text.replace("Optional[", "").rstrip("]").split("|")]
    if not parts or any(p not in _SIMPLE for p in parts):
        return  # a richer type: its owner checks it
    allowed = tuple(t for p in parts for t in _SIMPLE[p])
    ok = isinstance(value, allowed) and not (isinstance(value, bool) and bool not in allowed)
    if not ok:
        want = " or ".join(_WORDS[p] for p in parts)
        raise VeilError(f"{label} must be {want}, got {value!r}")


def check_call_options(fn: Callable[..., Any], options: Mapping[str, Any], what: str) -> None:
    """The keyword ``options`` for ``fn`` (a class: its ``__init__``), checked against its annotations."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return
    for name, value in options.items():
        if name in params:
            check_value(f"{what}: option {name}", value, params[name].annotation)


def check_dataclass_options(cls: type, options: Mapping[str, Any], what: str) -> None:
    """``options`` for the dataclass ``cls``, checked against its fields' annotations."""
    types = {f.name: f.type for f in dataclasses.fields(cls)}
    for name, value in options.items():
        if name in types:
            check_value(f"{what}.{name}" if what else name, value, types[name])
