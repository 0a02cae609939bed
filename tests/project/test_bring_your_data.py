"""Issue 18.5: every example in docs/bring-your-data.md runs and prints what the page shows.

The page's ``file=PATH`` blocks are written, each ``$ ragmeter …`` line of a ``console`` block
is run (leading ``NAME=value`` words set the environment), and its output is compared with the
lines under it; ``...`` matches any text (a run id) or, on a line of its own, any lines. A
``file=PATH check`` block is compared with the file the commands wrote. ``python`` blocks run.
Blocks tagged ``otlp`` run against a real ``ingest serve`` (the ``server`` block, started by
the test on a free port instead of 8766).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from _paths import ROOT
from ragmeter.cli import main

PAGE = ROOT / "docs" / "bring-your-data.md"
_BLOCK = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _blocks() -> list[tuple[str, str, str]]:
    return [(m.group(1), m.group(2).strip(), m.group(3)) for m in _BLOCK.finditer(PAGE.read_text())]


def _matches(expected: list[str], actual: list[str]) -> bool:
    pattern = "".join(
        "(?:.*\n)*?" if line == "..." else re.escape(line).replace(r"\.\.\.", ".*") + "\n"
        for line in expected
    )
    return re.fullmatch(pattern, "".join(a + "\n" for a in actual)) is not None


def _run(command: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, list[str]]:
    words = shlex.split(command)
    env: dict[str, str] = {}
    while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    assert words[0] == "ragmeter", command
    with monkeypatch.context() as m:
        for name, value in env.items():
            m.setenv(name, value)
        result = CliRunner().invoke(main, words[1:])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output.splitlines()


@pytest.mark.slow
def test_every_example_on_the_page_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 18.5: the import, export and tracker examples run exactly as written."""
    pytest.importorskip("mlflow", reason="MLflow is not installed (pip install 'ragmeter[mlflow]')")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    ran = 0
    for lang, info, body in _blocks():
        if {"otlp", "server"} & set(info.split()):
            continue  # needs a server: see test_the_opentelemetry_example_runs
        target = re.search(r"file=(\S+)", info)
        if target and "check" in info.split():
            assert Path(target.group(1)).read_text(encoding="utf-8") == body, target.group(1)
        elif target:
            Path(target.group(1)).parent.mkdir(parents=True, exist_ok=True)
            Path(target.group(1)).write_text(body, encoding="utf-8")
        elif lang == "console":
            lines = body.splitlines()
            starts = [i for i, line in enumerate(lines) if line.startswith("$ ")]
            for n, start in enumerate(starts):
                end = starts[n + 1] if n + 1 < len(starts) else len(lines)
                code, output = _run(lines[start][2:], monkeypatch)
                expected = lines[start + 1 : end]
                assert code == (2 if expected[:1] and expected[0].startswith("Error:") else 0)
                assert _matches(expected, output), (lines[start], output)
                ran += 1
        elif lang == "python":
            with monkeypatch.context() as m:
                m.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
                exec(compile(body, str(PAGE), "exec"), {})  # noqa: S102 - the page's own example
            ran += 1
    assert ran >= 10
    assert os.path.exists("mlruns")


@pytest.mark.slow
def test_the_opentelemetry_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 18.5: the page's OTLP example exports to a real `ingest serve`, and the failed
    query comes out of `flywheel export` with the page it retrieved."""
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    import yaml

    from _ingest import ingest_process

    monkeypatch.chdir(tmp_path)
    with ingest_process("logs.db", "--token", "s3cret") as server:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", server.base)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer s3cret")
        (python,) = [b for lang, info, b in _blocks() if lang == "python" and "otlp" in info]
        exec(compile(python, str(PAGE), "exec"), {})  # noqa: S102 - the page's own example
    assert server.returncode == 0, server.output
    (console,) = [b for lang, info, b in _blocks() if lang == "console" and "otlp" in info]
    code_, lines = _run(console.splitlines()[0][2:], monkeypatch)
    assert code_ == 0, lines
    (item,) = yaml.safe_load(Path("candidates.yaml").read_text(encoding="utf-8"))
    assert item["question"] == "how do I clean the cache"
    assert item["metadata"]["retrieved"] == [
        {"id": "install.md#0", "doc": "install.md", "text": "Run the installer script"}
    ]
    assert item["metadata"]["comments"] == ["that is the install page"]
