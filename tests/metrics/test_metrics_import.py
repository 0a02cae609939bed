"""Issue 2: the metrics path imports numpy and nothing heavy."""

from __future__ import annotations

import subprocess
import sys


def test_metrics_import_is_light() -> None:
    """Issue 2: `import ragmeter.metrics` pulls in neither pydantic nor yaml nor click."""
    code = (
        "import sys, ragmeter.metrics, ragmeter.formats.trec\n"
        "heavy = {'pydantic', 'yaml', 'click', 'sqlalchemy', 'httpx', 'bm25s', 'scipy'}\n"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
