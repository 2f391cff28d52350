"""Core: settings mappings (an experiment file's sections, filler options) checked into dataclasses.

Every settings section is a dataclass with its defaults on one screen; :func:`from_mapping` builds one
from a mapping and refuses, in one line, a key the dataclass does not have (a misspelt setting is
never silently ignored) or a value of another type than the field declares. Checks of the values'
ranges stay with each dataclass.

The declared types are checked here for component options too (:func:`check_call_options`: a
masker's or a filler's constructor). A value of another type -- text where a number belongs, as
``--set dlp.min_score=abc`` or an experiment's ``--set lm.finetune_epochs=abc`` give -- used to pass
construction and fail deep in the work (a float compared with a string) with a traceback, or after
hours of pre-training. Only simple annotations are checked (``int``, ``float``, ``bool``, ``str``,
``None`` and their unions); richer ones are left to their owner.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import fields
from typing import Any, Callable, Iterable, Mapping, TypeVar

from veil.errors import VeilError

T = TypeVar("T")


def check_keys(d: Mapping[str, Any], known: Iterable[str], what: str, noun: str = "key",
               list_known: bool = True) -> None:
    """``VeilError`` naming the keys of ``d`` not in ``known`` (and, with ``list_known``, the known ones)."""
    known = set(known)
    unknown = sorted(set(d) - known)
    if unknown:
        tail = f"; known: {', '.join(sorted(known))}" if list_known else ""
        raise VeilError(f"{what}: unknown {noun}(s) {', '.join(unknown)}{tail}")


def field_names(cls: type) -> list[str]:
    """The names a dataclass takes as settings."""
    return [f.name for f in fields(cls) if f.init]


def from_mapping(cls: type[T], d: Mapping[str, Any] | None, what: str, noun: str = "key",
                 list_known: bool = True) -> T:
    """``cls(**d)``: an unknown key, or a value its constructor refuses, is one ``VeilError`` line."""
    d = dict(d or {})
    check_keys(d, field_names(cls), what, noun, list_known)
    check_dataclass_options(cls, d, what)
    try:
        return cls(**d)
    except TypeError as e:
        raise VeilError(f"{what}: {e}") from None


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
