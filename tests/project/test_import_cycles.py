"""Issue 25: no import circle between sibling modules or packages, annotations included.

``lint-imports`` checks the same with imports under ``if TYPE_CHECKING:`` left out (they are
annotations, not runtime edges). Counted with them there were four circles
(``compare/diff↔gate↔markdown``, ``evaluation/report↔rows``, ``judge/_spread↔client``,
``gold↔formats``): a module typed on a class whose module calls it back. The renderers and
helpers now name protocols (``compare/_shapes.py`` and the like), so even the annotations
draw no circle.
"""

from __future__ import annotations

import pytest

grimp = pytest.importorskip("grimp", reason="import-linter (a dev dependency) brings grimp")


def _child(package: str, module: str) -> str:
    return package + "." + module[len(package) + 1 :].split(".")[0]


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of a small directed graph, or None (depth-first, three colours)."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return None

    for start in sorted(edges):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_no_sibling_import_circle_even_through_annotations() -> None:
    """Issue 25: every package's direct children import each other without a circle."""
    graph = grimp.build_graph("ragmeter", exclude_type_checking_imports=False)
    packages = {m.rsplit(".", 1)[0] for m in graph.modules if "." in m}
    circles = {}
    for package in sorted(packages):
        edges: dict[str, set[str]] = {}
        for module in graph.modules:
            if not module.startswith(package + "."):
                continue
            for imported in graph.find_modules_directly_imported_by(module):
                if not imported.startswith(package + "."):
                    continue
                a, b = _child(package, module), _child(package, imported)
                if a != b:
                    edges.setdefault(a, set()).add(b)
        found = _cycle(edges)
        if found:
            circles[package] = " -> ".join(found)
    assert circles == {}


def test_the_cycle_finder_finds_a_cycle() -> None:
    """The finder itself, on a graph drawn by hand."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}}) is None
