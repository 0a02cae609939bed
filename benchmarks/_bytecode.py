"""Benchmarks time ragmeter as it runs installed: from compiled bytecode.

pip compiles a package's modules when it installs it, but a checkout run with
``PYTHONPATH=src`` under ``PYTHONDONTWRITEBYTECODE=1`` (set on some CI and shared machines)
compiles every ragmeter module from source in every process: ~0.15 s of CPU per command,
which the floors (installed packages) never pay. ``compile_package`` writes the bytecode
first, so both sides of a ratio are timed alike.
"""

from __future__ import annotations

import compileall
import importlib.util
from pathlib import Path


def package_dir(src: Path | None = None) -> Path:
    """The ``ragmeter`` package folder: under ``src`` when given, else the one imported here."""
    if src is not None:
        return src / "ragmeter"
    spec = importlib.util.find_spec("ragmeter")
    if spec is None or spec.origin is None:
        raise SystemExit("ragmeter is not importable: run with PYTHONPATH=src")
    return Path(spec.origin).parent


def compile_package(src: Path | None = None) -> Path:
    """Write the bytecode of every module of the package (see :func:`package_dir`)."""
    folder = package_dir(src)
    if not compileall.compile_dir(str(folder), quiet=1):
        raise SystemExit(f"could not compile {folder}")
    return folder
