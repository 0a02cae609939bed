"""Reading a store needs no write access; odd run references are clean errors (issue 19.11)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import ragmeter
from ragmeter.cli import main
from ragmeter.errors import StoreError
from ragmeter.gold.goldset import GoldSet
from ragmeter.store import Store

GOLD = [{"id": "q1", "question": "refunds?", "relevant": [{"doc": "refunds.md"}]}]


def _search(question: str, k: int) -> list[dict[str, Any]]:
    return [{"id": "refunds.md#0", "doc": "refunds.md"}]


def _make_store(folder: Path) -> Path:
    folder.mkdir()
    path = folder / "runs.db"
    with Store.open(path) as store:
        ragmeter.evaluate(GoldSet.from_records(GOLD), _search, store=store, name="base")
    return path


@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder holding a store that this process cannot write.

    As root, permissions do not bind, so the folder is a read-only bind mount;
    otherwise it is ``chmod 555``.
    """
    source = tmp_path / "store"
    _make_store(source)
    if os.geteuid() != 0:
        (source / "runs.db").chmod(0o444)
        source.chmod(0o555)
        try:
            yield source
        finally:
            source.chmod(0o755)
        return
    target = tmp_path / "ro"
    target.mkdir()
    mounted = subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot bind-mount as root: {mounted.stderr!r}")
    try:
        subprocess.run(
            ["mount", "-o", "remount,ro,bind", str(target)], check=True, capture_output=True
        )
        yield target
    finally:
        subprocess.run(["umount", str(target)], check=True)


def test_runs_and_show_read_a_store_in_a_read_only_folder(read_only_folder: Path) -> None:
    """Issue 19.11: a store in a read-only folder made even ``runs`` fail with "cannot
    write" (opening it migrated it); reading commands now open it read-only."""
    assert not os.access(read_only_folder, os.W_OK)
    store = str(read_only_folder / "runs.db")
    runner = CliRunner()
    listed = runner.invoke(main, ["runs", "--store", store, "--json"])
    assert listed.exit_code == 0, listed.output
    assert [run["name"] for run in json.loads(listed.output)] == ["base"]
    shown = runner.invoke(main, ["show", "base", "--store", store, "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["metrics"]["mrr"] == 1.0


def test_a_read_only_store_refuses_writes(tmp_path: Path) -> None:
    """Issue 19.11: ``Store.open(read_only=True)`` reads, and writing through it is an error."""
    path = _make_store(tmp_path / "store")
    with Store.open(path, read_only=True) as store:
        assert store.get_run("base").status == "complete"
        with pytest.raises(StoreError, match="open read-only"):
            store.update_run(1, note="x")
    with pytest.raises(StoreError, match="does not exist"):
        Store.open(tmp_path / "missing.db", read_only=True)


def test_a_read_only_open_does_not_migrate(tmp_path: Path) -> None:
    """Issue 19.11: a store that needs migrating says so instead of being changed."""
    path = tmp_path / "old.db"
    Store.open(path, schema_version=1).close()
    with pytest.raises(StoreError, match="needs migrating"):
        Store.open(path, read_only=True)


@pytest.mark.parametrize(
    "ref", ["99999999999999999999999", "2147483648"], ids=["huge", "just-past-32-bit"]
)
def test_show_a_huge_run_id_is_a_clean_exit_2(tmp_path: Path, ref: str) -> None:
    """Issue 19.11: ``show 99999999999999999999999`` printed an OverflowError traceback."""
    path = _make_store(tmp_path / "store")
    result = CliRunner().invoke(main, ["show", ref, "--store", str(path)])
    assert result.exit_code == 2, result.output
    assert f'Error: no run "{ref}" in the store' in result.output


def test_build_report_only_reads_and_finalize_run_writes(tmp_path: Path) -> None:
    """Issue 13.5: ``build_report(finalize=True)`` read a run *and* wrote it; now
    ``build_report`` works on a read-only store and ``finalize_run`` is the one that writes."""
    from ragmeter.evaluation.report import build_report, finalize_run

    path = _make_store(tmp_path / "store")
    with Store.open(path, read_only=True) as store:
        report = build_report(store, "base")
        assert report.metrics["mrr"] == 1.0 and report.run.status == "complete"
        with pytest.raises(StoreError, match="open read-only"):
            finalize_run(store, "base")
    with Store.open(path) as store:
        store.set_metrics(1, {}, {})
        assert build_report(store, "base").metrics == {}  # reading never re-scores
        again = finalize_run(store, "base")
        assert again.metrics["mrr"] == 1.0
        assert build_report(store, "base").metrics == again.metrics
