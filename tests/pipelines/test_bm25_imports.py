"""Issue 29.3: the BM25 path does not import bm25s's optional numba, scipy and tqdm."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from _fresh import command_modules
from ragmeter.examples import example_corpus_dir, example_gold_path
from ragmeter.pipelines._lean_import import import_without
from ragmeter.pipelines.bm25 import BM25S_SKIPPED


@pytest.fixture(scope="module")
def eval_modules(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The modules a BM25 `eval` of the bundled example imported, in a fresh interpreter."""
    folder = tmp_path_factory.mktemp("bm25-imports")
    args = ["eval", "--gold", str(example_gold_path()), "--corpus", str(example_corpus_dir()),
            "--retriever", "bm25", "--store", f"sqlite:///{folder / 'runs.db'}"]  # fmt: skip
    modules = command_modules(args, folder).modules
    assert "bm25s" in modules and "ragmeter.pipelines.bm25" in modules
    return set(modules)


@pytest.mark.parametrize("package", BM25S_SKIPPED)
def test_bm25_eval_does_not_import_bm25s_optional_packages(
    package: str, eval_modules: set[str]
) -> None:
    """Issue 29.3: with numba (or scipy, tqdm) installed, a BM25 eval never imports it:
    bm25s would import it eagerly, and numba alone costs more than indexing SciFact."""
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed here, so bm25s could not import it anyway")
    assert not {m for m in eval_modules if m == package or m.startswith(package + ".")}


@pytest.fixture
def fake_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Three throwaway top-level modules: a library, an optional package, and a helper."""
    (tmp_path / "lean_lib").mkdir()
    (tmp_path / "lean_lib" / "__init__.py").write_text(
        "try:\n"
        "    import lean_optional\n"
        "    HAS_OPTIONAL = True\n"
        "except ImportError:\n"
        "    HAS_OPTIONAL = False\n"
        "import lean_helper\n"
    )
    (tmp_path / "lean_optional.py").write_text("VALUE = 1\n")
    # Another module's import of the refused package is not the library's: it goes through.
    (tmp_path / "lean_helper.py").write_text("import lean_optional\nSEES = lean_optional.VALUE\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in ("lean_lib", "lean_optional", "lean_helper"):
        sys.modules.pop(name, None)


def test_import_without_refuses_only_the_librarys_own_imports(fake_packages: Path) -> None:
    """Issue 29.3: the library sees the package as missing; a helper it imports does not,
    the finder is gone afterwards, and a second call returns the same module."""
    meta_path = list(sys.meta_path)
    lib = import_without("lean_lib", ["lean_optional"])
    assert lib.HAS_OPTIONAL is False
    assert sys.modules["lean_helper"].SEES == 1
    assert sys.meta_path == meta_path
    assert import_without("lean_lib", ["lean_optional"]) is lib
    import lean_optional

    assert lean_optional.VALUE == 1


def test_import_without_uses_a_package_imported_before(fake_packages: Path) -> None:
    """Issue 29.3: a package the process already imported costs nothing, so the library
    gets it (a user's own `import numba` keeps bm25s's numba backend)."""
    import lean_optional

    assert lean_optional.VALUE == 1
    assert import_without("lean_lib", ["lean_optional"]).HAS_OPTIONAL is True
