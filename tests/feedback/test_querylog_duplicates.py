"""Issue 18.4: a query-log id already stored is skipped and counted, never a lost batch."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from fastapi import FastAPI

from ragmeter.feedback.querylog import LogRecord, QueryLogger, import_jsonl, query_row
from ragmeter.store import Store
from ragmeter.web.ingest import ingest_router


def row(query_id: str, query: str) -> dict[str, Any]:
    return query_row(LogRecord(query=query, id=query_id))


def test_a_stored_id_is_skipped_and_the_rest_of_the_batch_written(store_url: str) -> None:
    """Issue 18.4: on SQLite and PostgreSQL, a batch holding an id already stored (and one id
    twice) writes every other row, keeps the first row of each id, and says which it skipped.
    Before, the primary-key violation rolled the whole batch back."""
    with Store.open(store_url) as store:
        first = store.add_query_log([row("a", "first a")])
        assert (first.queries, first.duplicates) == (1, 0)
        feedback = [{"query_id": "b", "created": "2026-01-01T00:00:00.000Z", "thumbs_up": 0,
                     "comment": None}]  # fmt: skip
        batch = [row("b", "b"), row("a", "second a"), row("c", "c"), row("c", "c again")]
        written = store.add_query_log(batch, feedback)
        assert (written.queries, written.feedback, written.skipped) == (2, 1, (1, 3))
        assert written.duplicates == 2
        stored = {q.id: q for q in store.logged_queries()}
        assert sorted(stored) == ["a", "b", "c"]
        assert (stored["a"].query, stored["c"].query) == ("first a", "c")
        assert stored["b"].thumbs_down
        assert store.query_log_counts() == (3, 1)


def test_a_large_batch_with_duplicates_spans_statement_chunks(store_url: str) -> None:
    """Issue 18.4: positions of skipped rows stay right past one INSERT statement's rows."""
    with Store.open(store_url) as store:
        store.add_query_log([row(f"q{i}", "x") for i in range(0, 2500, 2)])
        written = store.add_query_log([row(f"q{i}", "y") for i in range(2500)])
        assert written.skipped == tuple(range(0, 2500, 2))
        assert written.queries == 1250
        assert store.query_log_counts() == (2500, 0)


def test_importing_a_log_twice_skips_what_is_stored(tmp_path: Path) -> None:
    """Issue 18.4: `flywheel import` of an already-imported file writes no query twice and
    says how many it skipped (before, the second import failed with an integrity error)."""
    from ragmeter.cli.flywheel import flywheel

    log = tmp_path / "log.jsonl"
    log.write_text(
        json.dumps({"id": "q1", "query": "reset password"}) + "\n"
        + json.dumps({"id": "q2", "query": "export data"}) + "\n"
    )  # fmt: skip
    db = tmp_path / "s.db"
    with Store.open(db) as store:
        assert import_jsonl(log, store) == (2, 0, 0)
    log.write_text(log.read_text() + json.dumps({"id": "q3", "query": "new one"}) + "\n")
    result = CliRunner().invoke(flywheel, ["import", str(log), "--store", str(db)])
    assert result.exit_code == 0, result.output
    assert result.stdout == "imported 1 queries and 0 feedback rows\n"
    assert result.stderr == "skipped 2 queries whose id was already stored\n"
    with Store.open(db) as store:
        assert store.query_log_counts() == (3, 0)


def _otlp_span(trace: bytes, span_id: bytes, question: str) -> bytes:
    pb2 = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    request = pb2.ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = trace, span_id, "retrieve"
    for key, value in (("openinference.span.kind", "RETRIEVER"), ("input.value", question)):
        span.attributes.append(KeyValue(key=key, value=AnyValue(string_value=value)))
    return bytes(request.SerializeToString())


def test_a_resent_span_after_a_restart_is_acknowledged_and_counted(file_store: Store) -> None:
    """Issue 18.4: a span re-sent to a restarted server (its trace joiner empty) is 200 with
    the duplicate reported in partialSuccess, and a request sharing its writer batch is
    still stored. Before, both answered 503 and the exporter retried forever."""
    pb2 = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    headers = {"Content-Type": "application/x-protobuf"}
    old = _otlp_span(b"\x01" * 16, b"\x02" * 8, "old question")
    new = _otlp_span(b"\x03" * 16, b"\x04" * 8, "new question")
    for _ in range(2):  # two server lifetimes over one store
        logger = QueryLogger(file_store, flush_interval=1)
        # An unacknowledged item first makes the writer wait one interval before it
        # drains the queue, so the two requests below share one writer batch.
        logger.submit([], [])
        app = FastAPI()
        app.include_router(ingest_router(logger))

        async def send(app: FastAPI = app) -> list[httpx.Response]:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
                bodies = [old, new] if file_store.query_log_counts()[0] else [old]
                posts = (c.post("/v1/traces", content=b, headers=headers) for b in bodies)
                return list(await asyncio.gather(*posts))

        answers = asyncio.run(send())
        logger.close()
    assert [a.status_code for a in answers] == [200, 200]
    replies = [pb2.ExportTraceServiceResponse.FromString(a.content) for a in answers]
    assert replies[0].partial_success.error_message == ("1 retriever spans already stored, skipped")
    assert replies[0].partial_success.rejected_spans == 0
    assert replies[1].partial_success.error_message == ""
    assert sorted(q.query for q in file_store.logged_queries()) == ["new question", "old question"]
