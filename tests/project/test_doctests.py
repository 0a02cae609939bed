"""Every docstring example under src/ragmeter runs and shows what it says.

STYLE.md asks for an example in every public docstring; nothing ran them, so one went stale
unseen (``GoldSet.save``'s used ``load_gold`` without importing it). They run here as
``pytest --doctest-modules src/ragmeter`` would (same flags, same warnings-as-errors), one
test per module so the workers share them, in a scratch folder so none writes into the
checkout. Examples marked ``+SKIP`` (a server, a file the reader has) stay skipped.
"""

from __future__ import annotations

import doctest
import importlib
import io
import pkgutil
from pathlib import Path

import pytest

import ragmeter

MODULES = ["ragmeter"] + sorted(
    info.name
    for info in pkgutil.walk_packages(ragmeter.__path__, "ragmeter.")
    if not info.name.endswith("__main__")  # importing it runs the command line
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24 (noticed there): each module's examples pass, as written."""
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(name)
    out = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in doctest.DocTestFinder().find(module, name):
        if test.examples:
            runner.run(test, out=out.write)
    assert runner.failures == 0, out.getvalue()


def test_every_module_is_found() -> None:
    """The list is the package's modules, not an empty walk."""
    assert {"ragmeter.gold.goldset", "ragmeter.evaluation.resumed"} <= set(MODULES)
    assert len(MODULES) > 150
