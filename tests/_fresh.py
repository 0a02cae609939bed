"""A ``python -m ragmeter`` command in a fresh interpreter, and what it imported.

The lazy-import tests (issue 29.2/29.3) run a whole command in a new process, then read its
``sys.modules``: a module-level import that drags a heavy package back onto the path fails
there. This checkout's ragmeter comes first on the child's path, from any working folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ragmeter

#: This checkout's ``src`` (a relative ``PYTHONPATH`` would not reach it from ``cwd``).
SOURCE = str(Path(ragmeter.__file__).resolve().parents[1])

_COMMAND_THEN_MODULES = """
import io, json, runpy, sys
out = io.StringIO()
sys.stdout, real = out, sys.stdout
sys.argv = ["ragmeter", *json.loads(sys.argv[1])]
code = 0
try:
    runpy.run_module("ragmeter", run_name="__main__")
except SystemExit as stop:
    code = stop.code
sys.stdout = real
print(json.dumps({"code": code, "output": out.getvalue(), "modules": sorted(sys.modules)}))
"""


@dataclass(frozen=True)
class Ran:
    """What the command printed on stdout and every module loaded when it ended."""

    output: str
    modules: frozenset[str]


def command_modules(args: Sequence[str], cwd: Path) -> Ran:
    """``python -m ragmeter ARGS`` in a fresh interpreter in ``cwd``; it must succeed."""
    out, stderr = fresh_json(_COMMAND_THEN_MODULES, cwd, json.dumps(list(args)))
    assert out["code"] in (0, None), stderr
    return Ran(output=out["output"], modules=frozenset(out["modules"]))


def fresh_json(code: str, cwd: Path, *args: str) -> tuple[Any, str]:
    """Run ``code`` (with ``args``) in a fresh interpreter in ``cwd`` with this checkout first
    on its path; the JSON of its last line of stdout, and its stderr. It must succeed."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": SOURCE},
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr
