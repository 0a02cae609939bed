"""Warnings stored on a run are shown later: ``runs`` marks the run, ``show`` and the
dashboard's run page list them (issue 19 leftover: "never guess silently").

The run is a real ``eval`` over a corpus that lacks one gold document, whose warning
used to reach only the ``eval`` output and was never stored.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
import yaml
from click.testing import CliRunner

from ragmeter.cli import main
from ragmeter.store import Store
from ragmeter.web.app import create_app

WARNING = (
    "1 document(s) named by the gold set are not in the corpus and can never be found: gone.md"
)
GOLD = [
    {"id": "refund", "question": "how long do refunds take?", "relevant": [{"doc": "refunds.md"}]},
    {"id": "gone", "question": "where is the removed page?", "relevant": [{"doc": "gone.md"}]},
]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "refunds.md").write_text("# Refunds\nRefunds take 30 days.\n")
    (docs / "shipping.md").write_text("# Shipping\nWe ship in two days.\n")
    (tmp_path / "gold.yaml").write_text(yaml.safe_dump(GOLD, sort_keys=False))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGMETER_STORE", f"sqlite:///{tmp_path / 'runs.db'}")
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def _cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_stored_warnings_are_marked_in_runs_and_listed_in_show(project: Path) -> None:
    """Issue 19: a run's warnings are stored and shown by `runs`, `runs --json` and `show`."""
    _cli("eval", "--gold", "gold.yaml", "--corpus", "docs", "--retriever", "bm25", "--name", "a")
    with Store.open(project / "runs.db", read_only=True) as store:
        assert store.get_run("a").warnings == [WARNING]

    table = _cli("runs", "-m", "hit@5")
    header = table.splitlines()[1]
    assert "warn" in header and "⚠ 1" in table
    assert table.splitlines()[-1] == "⚠ run 1 stored warnings: ragmeter show 1 lists them"
    assert json.loads(_cli("runs", "--json"))[0]["warnings"] == [WARNING]

    shown = CliRunner().invoke(main, ["show", "a"])
    assert shown.exit_code == 0
    assert f"warning: {WARNING}" in shown.output
    assert json.loads(_cli("show", "a", "--json"))["warnings"] == [WARNING]


def test_runs_without_warnings_have_no_marker(project: Path) -> None:
    """Issue 19: the warn column appears only when some run has warnings."""
    (project / "docs" / "gone.md").write_text("# Gone\nThe removed page is here.\n")
    _cli("eval", "--gold", "gold.yaml", "--corpus", "docs", "--retriever", "bm25")
    table = _cli("runs")
    assert "warn" not in table and "⚠" not in table


def test_the_dashboard_run_page_lists_stored_warnings(project: Path) -> None:
    """Issue 19: /runs/N shows each stored warning."""
    _cli("eval", "--gold", "gold.yaml", "--corpus", "docs", "--retriever", "bm25", "--name", "a")

    async def get() -> str:
        app = create_app(str(project / "runs.db"))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            response = await client.get("/runs/1")
            assert response.status_code == 200
            return response.text

    page = asyncio.run(get())
    assert f'<p class="warning">⚠ {WARNING}</p>' in page
