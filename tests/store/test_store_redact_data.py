"""Issue 19.2 leftover: secrets in what a run or the query log keeps of the user's data.

``store redact`` and ``store copy`` covered specs and configs only. A chunk text, an
answer's context or an error message quoting a URL with its password (``results.extra``,
``results.error``), and ``{"api_key": ...}`` or such a URL in the ``meta`` and hits a
service logs with a query (``query_log``), stayed in the store and were copied as they
were. Each test writes a real SQLite store, "the old way" (raw SQL past ``redact()``) or
through the library, and greps the file and its write-ahead log as bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from sqlalchemy import insert, update

from ragmeter.cli import _LazyGroup
from ragmeter.cli.store import store as store_group
from ragmeter.evaluation.evaluate import evaluate
from ragmeter.feedback.querylog import QueryLogger
from ragmeter.gold.goldset import GoldSet
from ragmeter.store import Store, schema

CHUNK_PASSWORD = "chunkpw-7731"
CONTEXT_PASSWORD = "ctxpw-2290"
ERROR_PASSWORD = "errpw-5518"
LOG_KEY = "sk-meta-planted-9043"
LOG_PASSWORD = "logpw-6604"
HIT_PASSWORD = "hitpw-1187"
SECRETS = (CHUNK_PASSWORD, CONTEXT_PASSWORD, ERROR_PASSWORD, LOG_KEY, LOG_PASSWORD, HIT_PASSWORD)
COLUMNS = {"results.error": 1, "results.extra": 1, "query_log.hits": 1, "query_log.meta": 1}


def gold() -> GoldSet:
    return GoldSet.from_records(
        [{"id": f"q{n}", "question": f"question {n}?", "relevant": [{"doc": f"d{n}.md"}]}
         for n in (1, 2)]
    )  # fmt: skip


def clean_search(question: str, k: int) -> list[dict[str, Any]]:
    return [{"doc": "d1.md", "text": "nothing secret here"}]


def file_bytes(path: Path) -> bytes:
    parts = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
    return b"".join(p.read_bytes() for p in parts if p.exists())


def leaked(path: Path) -> list[str]:
    data = file_bytes(path)
    return [s for s in SECRETS if s.encode() in data]


def plant(path: Path) -> None:
    """A store whose results and query log hold secrets, written past ``redact()``."""
    with Store.open(path) as store:
        evaluate(gold(), clean_search, store=store, name="old", commit="")
        extra = {
            "texts": [f"connect with postgres://app:{CHUNK_PASSWORD}@db/prod"],
            "context": [{"id": "d1.md", "doc": "d1.md",
                         "text": f"see https://bot:{CONTEXT_PASSWORD}@wiki.example/page"}],
        }  # fmt: skip
        meta = {"api_key": LOG_KEY, "upstream": f"http://svc:{LOG_PASSWORD}@127.0.0.1:9/x"}
        hits = [{"id": "d1.md", "doc": "d1.md", "text": f"ftp://u:{HIT_PASSWORD}@files/x"}]

        def tx(conn: Any) -> None:
            results = schema.results
            conn.execute(
                update(results).where(results.c.item_id == "q1").values(extra=json.dumps(extra))
            )
            conn.execute(
                update(results)
                .where(results.c.item_id == "q2")
                .values(error=f"GET http://me:{ERROR_PASSWORD}@127.0.0.1:9/s: 500")
            )
            conn.execute(
                insert(schema.query_log).values(
                    id="log1",
                    created="2025-01-01T00:00:00.000Z",
                    query="refunds?",
                    hits=json.dumps(hits),
                    latency_ms=None,
                    user=None,
                    meta=json.dumps(meta),
                )  # fmt: skip
            )

        store._write(tx)


def cli() -> _LazyGroup:
    return _LazyGroup(name="ragmeter", commands={"store": store_group})


def test_store_redact_hides_secrets_in_results_and_the_query_log(tmp_path: Path) -> None:
    """Issue 19.2: `store redact` rewrites results.extra/error and query_log.meta/hits; the
    file and its log keep no copy; what is not a secret stays readable."""
    db = tmp_path / "old.db"
    plant(db)
    assert leaked(db) == list(SECRETS)  # the old way really stored them

    result = CliRunner().invoke(cli(), ["store", "redact", "--store", str(db), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["redacted"] == COLUMNS
    assert leaked(db) == []
    with Store.open(db, read_only=True) as store:
        rows = {r.item_id: r for r in store.results("old")}
        logged = store.logged_queries()[0]
    assert rows["q1"].extra["texts"] == ["connect with postgres://app:***@db/prod"]
    assert rows["q1"].extra["context"][0]["text"] == "see https://bot:***@wiki.example/page"
    assert rows["q2"].error == "GET http://me:***@127.0.0.1:9/s: 500"
    assert logged.meta == {"api_key": "***", "upstream": "http://svc:***@127.0.0.1:9/x"}
    assert logged.hits[0]["text"] == "ftp://u:***@files/x"
    again = CliRunner().invoke(cli(), ["store", "redact", "--store", str(db), "--json"])
    assert json.loads(again.output)["redacted"] == {}


def test_store_copy_hides_secrets_in_results_and_the_query_log(tmp_path: Path) -> None:
    """Issue 19.2: `store copy` of such a store writes none of them into the destination."""
    plant(tmp_path / "old.db")
    result = CliRunner().invoke(
        cli(), ["store", "copy", str(tmp_path / "old.db"), str(tmp_path / "new.db")]
    )
    assert result.exit_code == 0, result.output
    assert leaked(tmp_path / "new.db") == []
    with Store.open(tmp_path / "new.db") as dest:
        assert dest.logged_queries()[0].meta["api_key"] == "***"
        assert len(list(dest.results("old"))) == 2


def test_new_results_and_logged_queries_are_redacted_as_written(tmp_path: Path) -> None:
    """Issue 19.2: a run whose chunks and errors quote passwords, and a service that logs
    an api_key in meta, store `***` in their place from the start."""
    db = tmp_path / "new.db"

    def search(question: str, k: int) -> list[dict[str, Any]]:
        if question == "question 2?":
            raise RuntimeError(f"GET http://me:{ERROR_PASSWORD}@127.0.0.1:9/s failed")
        return [{"doc": "d1.md", "text": f"postgres://app:{CHUNK_PASSWORD}@db/prod"}]

    with Store.open(db) as store:
        evaluate(gold(), search, store=store, name="new", commit="")
        logger = QueryLogger(store)
        logger.log(
            "refunds?",
            [{"id": "d1.md", "text": f"ftp://u:{HIT_PASSWORD}@files/x"}],
            meta={"api_key": LOG_KEY, "upstream": f"http://svc:{LOG_PASSWORD}@h/x", "n": 3},
        )
        logger.close()
        logged = store.logged_queries()[0]
        rows = {r.item_id: r for r in store.results("new")}
    assert leaked(db) == []
    assert logged.meta == {"api_key": "***", "upstream": "http://svc:***@h/x", "n": 3}
    assert rows["q1"].extra["texts"] == ["postgres://app:***@db/prod"]
    assert rows["q2"].error is not None and "http://me:***@127.0.0.1:9/s" in rows["q2"].error
