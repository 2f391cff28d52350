"""The package's import graph follows the stage order: no cycle, no two-way tie, no import back up the stages.

The graph is read from the code's own imports (``ast``): module-level and function-level imports
alike, since a lazy import is still a dependency. Two graphs are checked:

- **sub-packages** (``veil/mask/``, ``veil/fill/``, ...; a core module such as ``veil/types.py`` is a
  unit of its own): an import may point only to a unit of the same or an earlier stage of
  :data:`STAGES`, and the graph has no cycle;
- **modules**: no circle of imports (``a`` imports ``b`` imports ``a``), inside a sub-package too.

A new sub-package must be placed in :data:`STAGES`; an exception needs a line in :data:`EXCEPTIONS`
with its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "veil"

#: the stages, earliest first; imports point only from a later stage to an earlier one (or within a stage
#: of several units, without a cycle)
STAGES: list[set[str]] = [
    {"types", "markers", "shapes", "registry", "errors", "textutil", "textforms", "cache", "training", "numeric",
     "config", "gazetteer", "_callable"},  # core (gazetteer: the place and name lists shapes and draws read)
    {"io"},
    {"models"},  # the shipped models: loading one, or warming one up, reads files through io
    {"mask"},
    {"fill"},
    {"run"},
    {"downstream"},
    {"audit"},
    {"review"},
    {"report"},
    # the runner orchestrates every stage, the report's included (it writes results.md / report.html at
    # the end of a run; experiment.gap writes its tables through the report's writer), so it comes last
    {"experiment"},
    {"cli", "api", "demo", "__main__", "veil"},  # the commands, the Python API, the package's lazy exports
]

#: (importing module, imported module) -> why it may point up the stages
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("veil._callable", "veil.api"): "veil.mask / veil.fill are the stage packages made callable: a call runs the API",
}


def _modules() -> dict[str, Path]:
    out = {}
    for f in PACKAGE.rglob("*.py"):
        parts = f.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts).removesuffix(".__init__")] = f
    return out


def _imports(path: Path, known: dict[str, Path]) -> set[str]:
    """The veil modules ``path`` imports, anywhere in the file (``from veil.x import y``: ``veil.x.y`` when
    that is a module, else ``veil.x``)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for n in names:
            while n and n not in known:
                n = n.rpartition(".")[0]
            if n.startswith("veil"):
                out.add(n)
    return out


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "veil"


def _rank() -> dict[str, int]:
    return {u: i for i, units in enumerate(STAGES) for u in units}


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {m: {d for d in _imports(f, known) if d != m and not m.startswith(d + ".")} for m, f in known.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def _allowed(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    return {m: {d for d in ds if (m, d) not in EXCEPTIONS} for m, ds in graph.items()}


def test_every_sub_package_has_a_stage():
    rank = _rank()
    missing = sorted({_unit(m) for m in _modules()} - set(rank))
    assert not missing, f"place these in STAGES: {missing}"


def test_no_import_points_up_the_stages():
    rank = _rank()
    up = sorted(f"{m} -> {d}" for m, ds in _allowed(_graph()).items() for d in ds
                if rank.get(_unit(d), 0) > rank.get(_unit(m), 0))
    assert not up, "imports against the stage order:\n" + "\n".join(up)


def test_sub_packages_have_no_cycle_and_no_two_way_tie():
    units: dict[str, set[str]] = {}
    for m, ds in _allowed(_graph()).items():
        units.setdefault(_unit(m), set()).update(_unit(d) for d in ds if _unit(d) != _unit(m))
    assert not _cycles(units), _cycles(units)


def test_modules_have_no_import_cycle():
    cycles = _cycles(_allowed(_graph()))
    assert not cycles, cycles


def test_exceptions_are_still_needed():
    graph = _graph()
    stale = [k for k in EXCEPTIONS if k[1] not in graph.get(k[0], set())]
    assert not stale, f"no longer imported, drop from EXCEPTIONS: {stale}"


def test_the_checks_can_fail():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
