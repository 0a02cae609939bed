"""Old stores keep no secrets (issue 19.2 leftover): ``ragmeter store redact`` and ``store copy``.

A store is written "the old way" — raw SQL inserts of an unredacted retriever URL, run
config, judge config and calibration config, as ragmeter wrote them before issue 19.2 —
then the command runs and the SQLite file and its write-ahead log are grepped as bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from sqlalchemy import insert

import _postgres
from ragmeter.cli import _LazyGroup
from ragmeter.cli.store import store as store_group
from ragmeter.store import Store, schema
from ragmeter.store._judge import judge_calibrations, judge_runs

PASSWORD = "oldpass9931"
KEY = "sk-old-planted-4471"
JUDGE_PASSWORD = "judgeold5520"
HEADER = "Bearer tok-old-8812"
SECRETS = (PASSWORD, KEY, JUDGE_PASSWORD, HEADER)
URL = f"http://user:{PASSWORD}@127.0.0.1:9/ok?api_key={KEY}&k=3"


class Gold:
    hash, name = "gold-old", "faq"

    def to_records(self) -> list[dict[str, str]]:
        return [{"id": "q1", "question": "How long?"}]


def plant(path: Path | str) -> None:
    """A store with secrets in every spec/config column, inserted past ``redact()``."""
    with Store.open(path) as store:
        store.save_gold(Gold())

        def tx(conn: object) -> None:
            conn.execute(  # type: ignore[attr-defined]
                insert(schema.runs).values(
                    id=1,
                    name="old",
                    note="",
                    created="2025-01-01T00:00:00Z",
                    git_commit=None,
                    gold_hash="gold-old",
                    retriever=URL,
                    config=json.dumps({"url": URL, "headers": {"Authorization": HEADER}}),
                    k=10,
                    level="doc",
                    status="complete",
                    n_questions=1,
                    n_errors=0,
                )
            )
            judge = {"base_url": f"http://me:{JUDGE_PASSWORD}@127.0.0.1:9/v1", "model": "m"}
            conn.execute(  # type: ignore[attr-defined]
                insert(judge_runs).values(
                    run_id=1,
                    judge="faithfulness",
                    created="2025-01-01T00:00:00Z",
                    config=json.dumps(judge),
                    usage="{}",
                    calibration_id=None,
                )
            )
            conn.execute(  # type: ignore[attr-defined]
                insert(judge_calibrations).values(
                    created="2025-01-01T00:00:00Z",
                    model="m",
                    prompt_version="v1",
                    set_name="cal",
                    config=json.dumps(judge),
                    n=1,
                    agreement=1.0,
                    kappa=None,
                    flagged=0,
                    result="{}",
                )
            )

        store._write(tx)


def file_bytes(path: Path) -> bytes:
    """The database file and whatever its write-ahead log and shared memory hold."""
    parts = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
    return b"".join(p.read_bytes() for p in parts if p.exists())


def leaked(data: bytes) -> list[str]:
    return [s for s in SECRETS if s.encode() in data]


def cli() -> _LazyGroup:
    return _LazyGroup(name="ragmeter", commands={"store": store_group})


def test_store_redact_rewrites_an_old_store(tmp_path: Path) -> None:
    """Issue 19.2: `store redact` removes secrets an old store holds, from the file and WAL."""
    db = tmp_path / "old.db"
    plant(db)
    assert leaked(file_bytes(db)) == list(SECRETS)  # the old way really stored them

    dry = CliRunner().invoke(cli(), ["store", "redact", "--dry-run", "--store", str(db)])
    assert dry.exit_code == 0, dry.output
    assert dry.output.splitlines() == [
        f"Would redact 4 stored values in sqlite:///{db}:",
        "  runs.retriever                    1",
        "  runs.config                       1",
        "  judge_runs.config                 1",
        "  judge_calibrations.config         1",
    ]
    assert leaked(file_bytes(db)) == list(SECRETS)  # a dry run changes nothing

    result = CliRunner().invoke(cli(), ["store", "redact", "--store", str(db), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["redacted"] == {
        "runs.retriever": 1,
        "runs.config": 1,
        "judge_runs.config": 1,
        "judge_calibrations.config": 1,
    }
    assert leaked(file_bytes(db)) == []
    with Store.open(db, read_only=True) as store:
        run = store.list_runs()[0]
        assert run.retriever == "http://user:***@127.0.0.1:9/ok?api_key=***&k=3"
        assert store.judge_runs(1)["faithfulness"]["config"]["base_url"] == (
            "http://me:***@127.0.0.1:9/v1"
        )

    again = CliRunner().invoke(cli(), ["store", "redact", "--store", str(db)])
    assert (again.exit_code, again.output) == (0, f"Redacted 0 stored values in sqlite:///{db}.\n")


def test_store_copy_redacts_as_it_copies(tmp_path: Path) -> None:
    """Issue 19.2: `store copy` of an old store writes no secret into the destination."""
    plant(tmp_path / "old.db")
    result = CliRunner().invoke(
        cli(), ["store", "copy", str(tmp_path / "old.db"), str(tmp_path / "new.db")]
    )
    assert result.exit_code == 0, result.output
    with Store.open(tmp_path / "new.db") as dest:
        assert dest.list_runs()[0].retriever == "http://user:***@127.0.0.1:9/ok?api_key=***&k=3"
        assert dest.get_run(1).config["headers"] == {"Authorization": "***"}
    assert leaked(file_bytes(tmp_path / "new.db")) == []


def test_store_redact_on_postgresql(postgres_url: str) -> None:
    """Issue 19.2: the same rewrite on PostgreSQL, then VACUUM FULL of the rewritten tables."""
    plant(postgres_url)
    with Store.open(postgres_url) as store:
        assert store.redact_secrets(dry_run=True) == {
            "runs.retriever": 1,
            "runs.config": 1,
            "judge_runs.config": 1,
            "judge_calibrations.config": 1,
        }
        assert sum(store.redact_secrets().values()) == 4
        assert store.redact_secrets() == {}
    rows = [
        *_postgres.execute(postgres_url, "SELECT retriever, config FROM runs"),
        *_postgres.execute(postgres_url, "SELECT config FROM judge_runs"),
        *_postgres.execute(postgres_url, "SELECT config FROM judge_calibrations"),
    ]
    assert leaked(repr(rows).encode()) == []
    assert rows[0][0] == "http://user:***@127.0.0.1:9/ok?api_key=***&k=3"


def test_finding_08_store_redact_never_reports_success_with_the_secret_on_disk(
    tmp_path: Path,
) -> None:
    """Issue 27.8: while another connection held a read transaction, `store redact` said
    "Redacted" with every secret still in the file and its WAL (the TRUNCATE checkpoint was
    busy and its answer ignored). Now it waits --wait seconds, then exits 3 naming the
    process holding the store; run again once the reader is gone, the bytes are gone."""
    import os
    import sqlite3
    import threading

    db = tmp_path / "old.db"
    plant(db)
    reader = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM runs").fetchone() == (1,)  # a read snapshot
    busy = CliRunner().invoke(cli(), ["store", "redact", "--wait", "0.5", "--store", str(db)])
    assert busy.exit_code == 3, busy.output
    assert f"pid {os.getpid()} (this process)" in busy.output
    assert (
        "copies stay on disk" in busy.output and "run `ragmeter store redact` again" in busy.output
    )
    assert leaked(file_bytes(db)) != []  # what it said is true: the old bytes are still there

    # A reader that lets go while the command waits: it finishes, and the bytes are gone.
    threading.Timer(0.3, reader.rollback).start()
    done = CliRunner().invoke(cli(), ["store", "redact", "--wait", "10", "--store", str(db)])
    assert done.exit_code == 0, done.output
    reader.close()
    assert leaked(file_bytes(db)) == []
