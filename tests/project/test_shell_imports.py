"""Issue 25: the shells render, they do not compose. ``ragmeter.cli`` and ``ragmeter.web``
import the public API (the modules behind ``ragmeter.__all__``), the read side
(``ragmeter.read``) and only the modules listed, with a reason each, in
docs/architecture.md's "What the shells import" table. ``lint-imports`` forbids them what
the read side composes; this test holds the allow-list (import-linter has no "only these").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import pytest
from tests._paths import ROOT

import ragmeter

grimp = pytest.importorskip("grimp", reason="import-linter (a dev dependency) brings grimp")

SHELLS = ("cli", "web")
_ROW = re.compile(r"^\| `(ragmeter[\w.]*(?:\.\*)?)` \| ([a-z, ]+) \| (.+) \|$")


def _table() -> dict[str, set[str]]:
    """The documented exceptions: module (or ``pkg.*``) -> the shells that may import it."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("### What the shells import", 1)[1].split("\n#", 1)[0]
    rows = {}
    for line in section.splitlines():
        found = _ROW.match(line)
        if found:
            rows[found[1]] = {s.strip() for s in found[2].split(",")}
    assert rows, "docs/architecture.md lost its table of shell imports"
    return rows


def _public() -> set[str]:
    return set(ragmeter._EXPORTS.values()) | {"ragmeter"}


def _covers(pattern: str, module: str) -> bool:
    if pattern.endswith(".*"):
        base = pattern[:-2]
        return module == base or module.startswith(base + ".")
    return module == pattern


def _shell_imports(graph: object, shell: str) -> dict[str, set[str]]:
    """Library module -> the shell modules that import it (annotations left out)."""
    own = f"ragmeter.{shell}"
    used: dict[str, set[str]] = {}
    for module in graph.modules:  # type: ignore[attr-defined]
        if module != own and not module.startswith(own + "."):
            continue
        for imported in graph.find_modules_directly_imported_by(module):  # type: ignore[attr-defined]
            if imported.startswith("ragmeter") and not imported.startswith(own):
                used.setdefault(imported, set()).add(module)
    return used


def unlisted(
    used: dict[str, set[str]], shell: str, table: dict[str, set[str]], public: Iterable[str]
) -> list[str]:
    """The shell's imports neither public, nor the read side, nor in the table."""
    allowed = set(public)
    return sorted(
        f"{module} (by {', '.join(sorted(used[module]))})"
        for module in used
        if module not in allowed
        and not _covers("ragmeter.read.*", module)
        and not any(shell in shells and _covers(p, module) for p, shells in table.items())
    )


@pytest.fixture(scope="module")
def graph() -> object:
    return grimp.build_graph("ragmeter", exclude_type_checking_imports=True)


@pytest.mark.parametrize("shell", SHELLS)
def test_shells_import_the_public_api_the_read_side_and_the_listed(
    graph: object, shell: str
) -> None:
    """Issue 25: every library module a shell imports is public, the read side, or listed
    (with its reason) in docs/architecture.md."""
    found = unlisted(_shell_imports(graph, shell), shell, _table(), _public())
    assert found == [], (
        f"ragmeter.{shell} imports modules that are not public, not the read side and not in "
        "docs/architecture.md's 'What the shells import': " + "; ".join(found)
    )


def test_every_listed_exception_is_still_needed(graph: object) -> None:
    """Issue 25: the table stays short: a row no shell needs any more is removed."""
    used = {shell: _shell_imports(graph, shell) for shell in SHELLS}
    stale = [
        f"{pattern} ({shell})"
        for pattern, shells in _table().items()
        for shell in shells
        if not any(_covers(pattern, module) for module in used[shell])
    ]
    assert stale == []


def test_a_planted_violation_is_caught(graph: object) -> None:
    """Issue 25: the check bites: a shell importing the report builder's internals (the
    brief report the read side decodes) is named."""
    used = _shell_imports(graph, "cli") | {"ragmeter.evaluation.brief": {"ragmeter.cli.show"}}
    assert unlisted(used, "cli", _table(), _public()) == [
        "ragmeter.evaluation.brief (by ragmeter.cli.show)"
    ]
