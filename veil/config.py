"""Core: settings mappings (an experiment file's sections, filler options) checked into dataclasses.

Every settings section is a dataclass with its defaults on one screen; :func:`from_mapping` builds one
from a mapping and refuses, in one line, a key the dataclass does not have (a misspelt setting is
never silently ignored). Checks of the values stay with each dataclass.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Iterable, Mapping, TypeVar

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
    try:
        return cls(**d)
    except TypeError as e:
        raise VeilError(f"{what}: {e}") from None
