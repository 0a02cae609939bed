"""The public API is ``__all__``; importing ragmeter stays cheap."""

from __future__ import annotations

import subprocess
import sys

import ragmeter


def test_all_names_resolve() -> None:
    """Issue 2: every name in __all__ exists, and nothing public is missing from it."""
    for name in ragmeter.__all__:
        assert getattr(ragmeter, name) is not None, name
    assert sorted(ragmeter.__all__) == ragmeter.__all__
    assert set(ragmeter._EXPORTS) == set(ragmeter.__all__)
    # Issue 25.3: one job spec and its runner are for users too.
    assert {"EvalJob", "run_job", "evaluate", "read_run"} <= set(ragmeter.__all__)


def test_unknown_attribute_raises() -> None:
    """Issue 2: a typo gives AttributeError, not a silent None."""
    try:
        ragmeter.does_not_exist  # noqa: B018
    except AttributeError as error:
        assert "does_not_exist" in str(error)
    else:
        raise AssertionError("expected AttributeError")


def test_import_is_light() -> None:
    """Issue 2: `import ragmeter` and the metrics path import numpy but not pydantic/yaml/sqlalchemy."""
    code = (
        "import sys, ragmeter; ragmeter.compute_metrics({'q': {'d': 1}}, {'q': ['d']}, ['mrr']);"
        "heavy = [m for m in ('pydantic', 'yaml', 'sqlalchemy', 'httpx', 'bm25s', 'rich') "
        "if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_one_version_from_package_metadata() -> None:
    """Issue 13.3: the version lives in pyproject.toml only; ragmeter reads it from metadata."""
    import importlib.metadata
    import inspect

    from click.testing import CliRunner

    from ragmeter.cli import main

    installed = importlib.metadata.version("ragmeter")
    assert ragmeter.__version__ == installed
    assert installed not in inspect.getsource(ragmeter)
    assert CliRunner().invoke(main, ["--version"]).output.endswith(f"{installed}\n")
