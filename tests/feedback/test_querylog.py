"""Issue 7: the query log — batched background writes, feedback, JSONL import, log() latency."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from ragmeter.documents import Hit
from ragmeter.errors import InputError, StoreError
from ragmeter.feedback.querylog import BATCH_SIZE, QueryLogger, import_jsonl
from ragmeter.store import Store


def test_log_and_feedback_round_trip(tmp_path: Path) -> None:
    """Issue 7: log() returns an id at once; rows reach the SQLite file on flush()."""
    db = tmp_path / "q.db"
    with QueryLogger(store=str(db)) as logger:
        hits = [Hit(id="a.md#0", doc="a.md", score=2.5, text="alpha"), {"id": "b.md#1"}]
        qid = logger.log("how do I install", hits, latency_ms=12.5, user="u1", meta={"ab": 2})
        logger.feedback(qid, thumbs_up=False, comment="wrong page")
        logger.flush()
        assert logger.store.query_log_counts() == (1, 1)
    with Store.open(db) as store:
        [row] = store.logged_queries()
    assert row.id == qid and row.query == "how do I install" and row.user == "u1"
    assert row.hits == (
        {"id": "a.md#0", "doc": "a.md", "score": 2.5, "text": "alpha"},
        {"id": "b.md#1", "doc": "b.md#1"},
    )
    assert row.latency_ms == 12.5 and row.meta == {"ab": 2}
    assert row.thumbs_down and row.feedback[0][:2] == (False, "wrong page")


def test_close_writes_what_is_queued_and_then_refuses(tmp_path: Path) -> None:
    """Issue 7: close() flushes; a closed logger raises rather than dropping rows."""
    logger = QueryLogger(store=str(tmp_path / "q.db"), flush_interval=60)
    for i in range(1000):
        logger.log(f"query {i}", [])
    logger.close()
    with Store.open(tmp_path / "q.db") as store:
        assert store.query_log_counts() == (1000, 0)
    with pytest.raises(StoreError, match="closed"):
        logger.log("late", [])
    with pytest.raises(InputError, match="non-empty"):
        QueryLogger(Store.memory()).log("  ", [])


class _WhereWritten(Store):
    """A real SQLite store that records which thread each query-log write ran on."""

    writes: list[tuple[str, int]]  # (thread name, queries written)

    def add_query_log(self, queries: Any, feedback: Any = (), answers: Any = None) -> Any:
        self.writes.append((threading.current_thread().name, len(queries)))
        return super().add_query_log(queries, feedback, answers=answers)


def test_log_never_writes_on_the_request_path(tmp_path: Path) -> None:
    """Issue 7: log() never blocks the request path: the store is written only on the
    logger's own thread, in batches, while the caller logs 3,000 queries to a SQLite file.
    (log()'s p50/p99 in ms are benchmarks/hot_paths.py's "query log" line: 2 ms p99.)"""
    hits = [{"id": f"d{i}.md#0", "doc": f"d{i}.md", "score": 1.0, "text": "x" * 300}
            for i in range(10)]  # fmt: skip
    store = _WhereWritten(str(tmp_path / "q.db"))
    store.writes = []
    with QueryLogger(store) as logger:
        for i in range(3000):
            logger.log(f"query {i}", hits, latency_ms=12.0, user="u")
        logger.flush()
        assert store.query_log_counts() == (3000, 0)
    store.close()
    assert {thread for thread, _ in store.writes} == {"ragmeter-querylog"}
    sizes = [n for _, n in store.writes]
    assert sum(sizes) == 3000 and 1 < max(sizes) <= BATCH_SIZE  # batches, not a write a query


def test_import_jsonl(tmp_path: Path, store: Store) -> None:
    """Issue 7: bulk import of logs with inline or separate feedback."""
    path = tmp_path / "log.jsonl"
    lines = [
        {"id": "q1", "query": "reset password", "hits": [{"id": "a#0", "doc": "a"}],
         "created": "2025-01-02T03:04:05Z", "thumbs_up": False, "comment": "nope"},
        {"query": "export data", "hits": [], "latency_ms": 30},
        {"query_id": "q1", "thumbs_up": True},
    ]  # fmt: skip
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n")
    assert import_jsonl(path, store) == (2, 2, 0)
    rows = {r.query: r for r in store.logged_queries()}
    assert rows["reset password"].created == "2025-01-02T03:04:05.000Z"
    assert [f[0] for f in rows["reset password"].feedback] == [False, True]
    assert not rows["reset password"].thumbs_down  # the latest feedback counts


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"query": "", "hits": []}', "line 2: query: String should have at least 1 character"),
        ('{"query": "q", "hits": [{"doc": "a"}]}', "line 2: hits.0.id: Field required"),
        ('{"query_id": "q1"}', "line 2: thumbs_up: Field required"),
        ('{"query": "q", "latency_ms": -1}', "line 2: latency_ms: Input should be greater"),
        ("[1, 2]", "line 2: expected a JSON object"),
        ("{oops", "line 2: invalid JSON at column 2"),
    ],
    ids=["empty-query", "hit-without-id", "feedback-without-verdict", "negative-latency",
         "not-object", "bad-json"],
)  # fmt: skip
def test_import_jsonl_bad_line_writes_nothing(
    tmp_path: Path, line: str, message: str, store: Store
) -> None:
    """Issue 7: a bad line names file, line and field, and nothing is imported."""
    path = tmp_path / "log.jsonl"
    path.write_text('{"query": "fine", "hits": []}\n' + line + "\n")
    with pytest.raises(InputError, match=message.replace("(", r"\(")) as error:
        import_jsonl(path, store)
    assert str(path) in str(error.value)
    assert store.query_log_counts() == (0, 0)
