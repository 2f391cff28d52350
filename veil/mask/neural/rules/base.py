"""Detect and mask stage: the registry of the tagger's span rules, and the context one text's rules share.

A rule is a named post-processor of the tagger's spans (labels are tagger types: PER, ORG, LOC, ...):

- a *span* rule reads one span at a time, in text order, and returns it changed, or ``None`` to drop it; it
  sees the spans kept so far (``out``) and may change them (joining a first and a last name);
- a *list* rule takes all spans after the span rules and returns new ones;
- a *drop* rule says of span ``i`` whether it goes; consecutive drop rules judge the same list (a span beside
  one another rule drops still counts as beside a span).

Rules run in the order they are registered (span rules first). Each has a name, a docstring that says what it
does and why, and a switch (:func:`select`: ``rules=default``, ``all``, ``none``, ``-breed,-trim_edges`` or
an explicit list).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from veil.errors import VeilError
from veil.types import Span

KINDS = ("span", "list", "drop")


@dataclass(frozen=True)
class Rule:
    name: str
    kind: str
    fn: Callable[..., Any]
    #: a span rule whose result depends on the span alone (not on the spans kept so far): :func:`run` computes
    #: it once per distinct span, so the many pieces of one spelled run the tagger may read cost one
    pure: bool = True
    #: whether ``rules=default`` runs it (a rule measured not to pay stays, off, for those who name it)
    default: bool = True

    @property
    def doc(self) -> str:
        return (self.fn.__doc__ or "").strip()

    @property
    def summary(self) -> str:
        return " ".join(self.doc.split("\n\n")[0].split())


#: every rule, in the order it runs
REGISTRY: dict[str, Rule] = {}


def rule(kind: str, pure: bool = True, default: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as a rule of ``kind`` named after it (without a leading underscore);
    ``pure=False`` for a span rule that reads or changes the spans kept so far; ``default=False`` for one that
    runs only when named."""
    if kind not in KINDS:
        raise ValueError(f"unknown rule kind {kind!r}")

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        name = fn.__name__.lstrip("_")
        if name in REGISTRY:
            raise ValueError(f"rule {name!r} registered twice")
        if kind == "span" and any(r.kind != "span" for r in REGISTRY.values()):
            raise ValueError(f"span rule {name!r} registered after a list or drop rule")
        if not (fn.__doc__ or "").strip():
            raise ValueError(f"rule {name!r} has no docstring")
        REGISTRY[name] = Rule(name, kind, fn, pure, default)
        return fn

    return register


def select(spec: str | Sequence[str] | None = None) -> tuple[Rule, ...]:
    """The rules a setting turns on, in registry order: ``None`` / ``"default"`` those on by default, ``"all"``
    every one, ``"none"`` none, ``"-breed,-trim_edges"`` the default ones but those, ``"trim_edges,valid_type"``
    (or a list) only those.
    An unknown name is an error that lists the known ones."""
    defaults = tuple(r for r in REGISTRY.values() if r.default)
    if spec is None:
        return defaults
    if not isinstance(spec, (str, list, tuple)) or not all(isinstance(x, str) for x in spec):
        raise VeilError(f"rules must be default, all, none or rule names separated by commas, not {spec!r}")
    items = [x.strip() for x in (spec.split(",") if isinstance(spec, str) else spec) if str(x).strip()]
    if items == ["default"]:
        return defaults
    if items == ["all"]:
        return tuple(REGISTRY.values())
    if items in ([], ["none"]):
        return ()
    negative = [x.startswith("-") for x in items]
    if any(negative) and not all(negative):
        raise VeilError(f"rules={','.join(items)}: either name the rules to run or, each with a '-', the rules "
                        "to leave out, not both")
    names = [x.lstrip("-") for x in items]
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise VeilError(f"unknown rule(s) {', '.join(unknown)}; the rules are {', '.join(REGISTRY)} "
                        "(or default, all, none)")
    if all(negative):
        return tuple(r for r in defaults if r.name not in names)
    return tuple(r for r in REGISTRY.values() if r.name in names)


@dataclass
class Context:
    """One text and what its rules compute once for it (the spelled-letter runs, its words, whether it talks
    of pets or of spelling), so no rule searches the whole text again for each span."""

    text: str
    written: bool
    _cache: dict[str, Any] = field(default_factory=dict)

    def once(self, key: str, make: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def letters_run(self, s: int, e: int) -> tuple[int, int] | None:
        """The run of spelled single letters (``lexical.LETTERS``) holding ``[s, e)``, if any."""
        from veil.mask.neural.rules.lexical import LETTERS

        runs = self.once("letters", lambda: [m.span() for m in LETTERS.finditer(self.text)])
        k = bisect.bisect_right(runs, (s, len(self.text) + 1)) - 1
        if k >= 0 and runs[k][0] <= s and e <= runs[k][1]:
            return runs[k]
        return None


def span(sp: Span, s: int, e: int, label: str | None = None) -> Span | None:
    """``sp`` moved to ``[s, e)`` (and relabelled), ``None`` when nothing is left."""
    if s >= e:
        return None
    if (s, e) == (sp.start, sp.end) and (label is None or label == sp.label):
        return sp
    return Span(s, e, label or sp.label, sp.source, sp.score)


def run(text: str, spans: Sequence[Span], written: bool, rules: Sequence[Rule]) -> list[Span]:
    """``spans`` after ``rules`` (in the order given)."""
    ctx = Context(text, written)
    span_rules = [r for r in rules if r.kind == "span"]
    out: list[Span] = []
    memo: dict[tuple[str, int, int, str], tuple[int, int, str] | None] = {}
    for sp in sorted(spans, key=lambda x: (x.start, x.end)):
        cur: Span | None = sp
        for r in span_rules:
            if not r.pure:
                cur = r.fn(ctx, cur, out)
            else:  # the same span again (a spelled run read in pieces): the same answer
                key = (r.name, cur.start, cur.end, cur.label)
                if key not in memo:
                    got = r.fn(ctx, cur, out)
                    memo[key] = None if got is None else (got.start, got.end, got.label)
                    cur = got
                else:
                    hit = memo[key]
                    cur = None if hit is None else span(cur, *hit)
            if cur is None:
                break
        else:
            out.append(cur)
    rest = [r for r in rules if r.kind != "span"]
    i = 0
    while i < len(rest):
        if rest[i].kind == "list":
            out = rest[i].fn(ctx, out)
            i += 1
            continue
        j = i
        while j < len(rest) and rest[j].kind == "drop":
            j += 1
        judges = [r.fn for r in rest[i:j]]
        out = [sp for k, sp in enumerate(out) if not any(fn(ctx, out, k) for fn in judges)]
        i = j
    return out
