"""A store that fails mid-run, the way it was found (issue 19.1).

- A full disk under the real CLI in a subprocess: the file-size limit
  (``RLIMIT_FSIZE``, with ``SIGXFSZ`` ignored) makes SQLite's writes fail
  exactly as on a full volume, without needing root for a tmpfs. ``eval`` used to
  hang forever here; now it exits 3 within seconds and ``--resume`` finishes.
- A real PostgreSQL backend terminated with ``pg_terminate_backend`` mid-run: the
  lost connection is retried on a fresh one and the run completes.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

import _postgres
import ragmeter
from _net import wait_until
from _paths import ROOT
from ragmeter.gold.goldset import GoldSet
from ragmeter.store import Store

SRC = ROOT / "src"
N_QUESTIONS = 300
# Big enough for the schema and the first results, far below the 300 questions' 600 KB.
FILE_LIMIT_BYTES = 300_000
# Not a speed budget: a process that hangs (as eval did on a full disk) fails the test
# after this many seconds instead of never ending. How soon eval stops is
# benchmarks/promptness.py's "full disk" line.
HANG_GUARD_S = 90.0

RETRIEVER = """
import time

def search(question, k):
    time.sleep(0.01)
    return [{"id": f"d{i}.md#0", "doc": f"d{i}.md", "score": 1.0 - i / 100, "text": "x" * 200}
            for i in range(k)]
"""


def _write_inputs(folder: Path) -> None:
    (folder / "slowret.py").write_text(RETRIEVER, encoding="utf-8")
    with (folder / "gold.jsonl").open("w", encoding="utf-8") as out:
        for i in range(N_QUESTIONS):
            record = {"id": f"q{i}", "question": f"q {i}", "relevant": [{"doc": f"d{i % 10}.md"}]}
            out.write(json.dumps(record) + "\n")


def _limit_file_size() -> None:  # runs in the child, before exec
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails, not kills
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT_BYTES, FILE_LIMIT_BYTES))


def _ragmeter(folder: Path, *args: str, limited: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(folder)])}
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        preexec_fn=_limit_file_size if limited else None,
    )


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_full_disk_exits_3_interrupted_and_resumes(tmp_path: Path) -> None:
    """Issue 19.1: a store that fills up mid-run made ``eval`` hang forever (24 dead
    workers); now it exits 3 within seconds with a one-line reason, the run is
    ``interrupted``, and ``--resume`` completes it once there is room."""
    _write_inputs(tmp_path)
    store = str(tmp_path / "db" / "runs.db")
    done = _ragmeter(
        tmp_path,
        "eval",
        "--gold",
        "gold.jsonl",
        "--retriever",
        "slowret:search",
        "--store",
        store,
        "--json",
        limited=True,
    )
    assert done.returncode == 3, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("Error: run 1 stopped with ")
    assert "cannot write" in lines[0] and "resume with: ragmeter eval --resume 1" in lines[0]
    with Store.open(store) as opened:
        assert opened.get_run(1).status == "interrupted"
        stored = len(opened.completed_items(1))
    assert stored < N_QUESTIONS
    # The count in the message is what the store holds, not what was answered.
    assert f"stopped with {stored} of {N_QUESTIONS} questions stored" in lines[0]

    resumed = _ragmeter(tmp_path, "eval", "--resume", "1", "--store", store, "--json")
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    assert report["run"]["status"] == "complete"
    assert report["n_questions"] == N_QUESTIONS and report["n_errors"] == 0


@pytest.mark.slow
def test_postgres_backend_terminated_mid_run_is_retried(postgres_url: str) -> None:
    """Issue 19.1: ``pg_terminate_backend`` during a run left it ``running`` at 96/300 and
    the process hanging; the lost connection is now retried and the run completes."""
    app = f"ragmeter-{uuid.uuid4().hex[:8]}"
    url = f"{postgres_url}&application_name={app}"
    gold = GoldSet.from_records(
        [{"id": f"q{i}", "question": f"q{i}", "relevant": [{"doc": "a.md"}]} for i in range(300)]
    )
    terminated: list[int] = []
    fired = threading.Event()

    def search(question: str, k: int) -> list[dict[str, Any]]:
        time.sleep(0.01)
        return [{"id": "a.md#0", "doc": "a.md"}]

    def kill_backends(done: int, total: int, result: Any) -> None:
        if done >= 100 and not fired.is_set():
            fired.set()
            rows = _postgres.execute(
                postgres_url,
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                f"WHERE application_name = '{app}' AND pid <> pg_backend_pid()",
            )
            terminated.extend(1 for row in rows if row[0])

    def held() -> bool:
        query = f"SELECT count(*) FROM pg_stat_activity WHERE application_name = '{app}'"
        return int(_postgres.execute(postgres_url, query)[0][0]) > 0

    with Store.open(url) as store:
        wait_until(held, what="the store to hold a connection")  # one to terminate
        report = ragmeter.evaluate(gold, search, store=store, progress=kill_backends)
        assert terminated, "no backend was terminated: the test proved nothing"
        assert report.run.status == "complete"
        assert report.n_questions == 300 and report.n_errors == 0
        assert len(store.completed_items(report.run.id)) == 300


@pytest.mark.slow
@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="mounting a tmpfs needs root"
)
def test_full_tmpfs_exits_3_interrupted(tmp_path: Path) -> None:
    """Issue 19.1, as found: a store on a tmpfs with 700 KB free; ``eval`` hung after 24
    "database or disk is full" worker tracebacks. Now: exit 3, one line, ``interrupted``."""
    _write_inputs(tmp_path)
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=700k", "tmpfs", str(disk)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr!r}")
    try:
        store = str(disk / "runs.db")
        done = _ragmeter(
            tmp_path, "eval", "--gold", "gold.jsonl", "--retriever", "slowret:search",
            "--store", store, "--json",
        )  # fmt: skip
        assert done.returncode == 3, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "database or disk is full" in done.stderr
        with Store.open(store, read_only=True) as opened:
            assert opened.get_run(1).status == "interrupted"
    finally:
        subprocess.run(["umount", str(disk)], check=True)
