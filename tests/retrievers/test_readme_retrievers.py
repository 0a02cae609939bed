"""The README's "Bring your own retriever" examples, run as written (issue 14.1, 14.5).

The Python blocks run in order in one namespace over the bundled demo; each `ragmeter eval`
line of the shell block runs against the loopback service of the HTTP shape tests, its
host swapped for the server's.
"""

from __future__ import annotations

import json
import re
import shlex
import warnings
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_retrievers_http_shapes import project, url  # noqa: F401 - fixtures used below

from _paths import ROOT
from ragmeter.cli import main

README = ROOT / "README.md"


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Bring your own retriever")
    return text[start : text.index("\n## ", start + 1)]


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", _section(), flags=re.S)


def test_readme_python_examples_run() -> None:
    """Issue 14.1: each framework example in the README runs and finds the demo's docs."""
    blocks = _blocks("python")
    assert len(blocks) == 4
    namespace: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # langchain-community's sunset note
        exec(blocks[0], namespace)  # noqa: S102 - our own README
        for block in blocks[1:]:
            exec(block, namespace)  # noqa: S102 - our own README
            report = namespace["report"]
            title = block.splitlines()[0]
            assert report.n_errors == 0, title
            docs = {h.doc for result in report.results.values() for h in result.hits}
            assert docs and all((namespace["docs"] / doc).is_file() for doc in docs), title
            if "MockEmbedding" not in block:  # a constant embedding ranks arbitrarily
                assert report.metrics["hit@10"] > 0.5, title


def test_readme_http_examples_run(
    project: Path,  # noqa: F811
    url: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 14.5: each HTTP example command in the README scores the loopback service."""
    monkeypatch.setenv("OPENAI_AUTH", "Bearer test")
    lines = [line for line in _blocks("sh")[0].splitlines() if line.startswith("ragmeter eval")]
    assert len(lines) == 5
    for line in lines:
        args = shlex.split(re.sub(r"https?://[^/\s']+", url, line))[1:]
        result = CliRunner().invoke(main, [*args, "-k", "3", "--json"])
        assert result.exit_code == 0, (line, result.output)
        assert json.loads(result.stdout)["metrics"]["hit@1"] == 1.0, line
