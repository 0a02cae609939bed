"""Issue 27 (findings 1, 12, 17): the ingest server under hostile bodies, on real loopback.

Each test sends the red-team's request to ``ragmeter ingest serve``'s app under real uvicorn
and counts the rows the store holds afterwards: the bound is on rows written, never on time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from _otlp import ingest_served
from ragmeter.feedback._joiner import MAX_RECENT_TRACES, MAX_TRACE_QUERIES, MAX_TRACE_VOTES
from ragmeter.store import Store
from ragmeter.web.budget import Budget

pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")

RETRIEVER = {"openinference.span.kind": "RETRIEVER"}


def _attrs(values: dict[str, str]) -> list[dict[str, Any]]:
    return [{"key": k, "value": {"stringValue": v}} for k, v in values.items()]


def _span(trace: int, span: int, attributes: dict[str, str], events: int = 0) -> dict[str, Any]:
    """One OTLP/JSON span; ``events`` thumbs-down feedback events, each a distinct verdict."""
    return {
        "traceId": f"{trace:032x}", "spanId": f"{span:016x}", "name": "s",
        "startTimeUnixNano": "1000", "endTimeUnixNano": "2000",
        "attributes": _attrs(attributes),
        "events": [{"name": "feedback", "timeUnixNano": str(n + 1),
                    "attributes": _attrs({"label": "thumbs-down"})} for n in range(events)],
    }  # fmt: skip


def _export(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def _amplifier(trace: int, n: int) -> dict[str, Any]:
    """The red-team body: n retriever spans and n feedback events in one trace."""
    spans = [_span(trace, s + 1, RETRIEVER | {"input.value": f"q{s}"}) for s in range(n)]
    spans.append(_span(trace, n + 1, {}, events=n))
    return _export(spans)


def _rows(db: Path) -> int:
    with Store.open(db) as store:
        return sum(store.query_log_counts())


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[httpx.Client, Path]]:
    db = tmp_path / "logs.db"
    with ingest_served(db) as base, httpx.Client(base_url=base, timeout=60) as client:
        yield client, db


def test_finding_01_otlp_feedback_amplification_is_bounded(
    served: tuple[httpx.Client, Path],
) -> None:
    """Issue 27.1: one trace of 300 retriever spans and 300 feedback events wrote
    300 + 300 x 300 = 90,300 rows (1,000 of each: 1,000,000). Now each verdict goes to at most
    MAX_TRACE_QUERIES retriever spans and a trace keeps MAX_TRACE_VOTES verdicts: 300 + 20 x 10
    rows, and what was left out is said in the reply. Span annotations likewise."""
    client, db = served
    n = 300
    answer = client.post("/v1/traces", json=_amplifier(1, n))
    assert answer.status_code == 200, answer.text
    assert _rows(db) == n + MAX_TRACE_QUERIES * MAX_TRACE_VOTES
    message = answer.json()["partialSuccess"]["errorMessage"]
    assert f"{n - MAX_TRACE_VOTES} feedback events over the {MAX_TRACE_VOTES} verdicts" in message
    assert f"{n - MAX_TRACE_QUERIES} retriever spans over the {MAX_TRACE_QUERIES}" in message
    # The same request again (an exporter's retry) writes nothing new.
    assert client.post("/v1/traces", json=_amplifier(1, n)).status_code == 200
    assert _rows(db) == n + MAX_TRACE_QUERIES * MAX_TRACE_VOTES

    # Span annotations: 30 retriever spans, then 1,000 distinct annotations on the trace.
    before = _rows(db)
    spans = [_span(2, 5_001 + s, RETRIEVER | {"input.value": f"a{s}"}) for s in range(30)]
    assert client.post("/v1/traces", json=_export(spans)).status_code == 200
    annotations = [{"span_id": f"{5_001:016x}", "name": f"feedback-{k}", "identifier": f"u{k}",
                    "result": {"label": "thumbs-down"}} for k in range(1_000)]  # fmt: skip
    reply = client.post("/v1/span_annotations", json={"data": annotations})
    assert reply.status_code == 200, reply.text
    assert _rows(db) - before == 30 + MAX_TRACE_VOTES * MAX_TRACE_QUERIES
    assert len(reply.json()["data"]) == MAX_TRACE_VOTES
    assert len(reply.json()["skipped"]) == 1_000 - MAX_TRACE_VOTES
    # A changed verdict under an identifier already kept still counts.
    changed = [annotations[0] | {"result": {"label": "thumbs-up"}}]
    assert client.post("/v1/span_annotations", json={"data": changed}).json()["skipped"] == []


def test_finding_01_a_client_over_its_budget_is_refused_and_writes_nothing(
    tmp_path: Path,
) -> None:
    """Issue 27.1: a per-client budget of rows a second (and a cap of rows per request): a
    request over either is refused whole, with the API's error shape, and writes nothing; the
    joiner forgets what the refused request taught it, so a later retry joins again."""
    db = tmp_path / "logs.db"
    budget = Budget(rows_per_s=10, bytes_per_s=0, burst_s=10, max_request_rows=300)
    with ingest_served(db, budget=budget) as base, httpx.Client(base_url=base) as client:
        too_big = client.post("/v1/traces", json=_amplifier(1, 140))  # 140 + 200 rows
        assert too_big.status_code == 413
        assert too_big.json()["error"]["message"] == (
            "this request would write 340 rows, over 300: send fewer spans per request"
        )
        assert _rows(db) == 0
        first = client.post("/v1/traces", json=_amplifier(2, 80))  # 80 + 200 rows: a burst
        assert first.status_code == 200
        assert _rows(db) == 280
        second = client.post("/api/log", json={"query": "one more"})
        assert second.status_code == 429
        assert int(second.headers["retry-after"]) >= 1
        assert "budget of 10 rows a second" in second.json()["error"]["message"]
        refused = client.post("/v1/traces", json=_export([_span(3, 1, RETRIEVER | {"input.value": "x"})]))  # fmt: skip
        assert refused.status_code == 429
        assert _rows(db) == 280


@pytest.mark.parametrize(
    ("path", "content_type", "status"),
    [
        ("/v1/traces", "application/json", 400),
        ("/v1/span_annotations", "application/json", 422),
        ("/api/log", "application/json", 422),
        ("/api/feedback", "application/json", 422),
    ],
    ids=["traces", "span-annotations", "log", "feedback"],
)
def test_finding_12_deep_json_is_refused_in_the_error_shape(
    served: tuple[httpx.Client, Path], path: str, content_type: str, status: int
) -> None:
    """Issue 27.12: 100,000 nested brackets raised RecursionError, answered as a plain-text
    500. Now the route's malformed-body status in the one error shape, and nothing written;
    a body nested 65 deep (under Python's limit, over ours) too."""
    client, db = served
    for body in (b"[" * 100_000 + b"]" * 100_000, b'{"data": ' + b"[" * 65 + b"]" * 65 + b"}"):
        answer = client.post(path, content=body, headers={"Content-Type": content_type})
        assert answer.status_code == status, answer.text
        assert answer.json() == {
            "error": {"status": status, "message": "body: nested more than 64 levels deep",
                      "fields": ["body"]},
        }  # fmt: skip
    assert _rows(db) == 0


def test_finding_17_annotation_after_eviction_is_listed_in_skipped(
    served: tuple[httpx.Client, Path],
) -> None:
    """Issue 27.17: the retriever span of trace 1 was logged, then MAX_RECENT_TRACES newer
    traces pushed trace 1 out of the joiner, then its LLM span arrived. An annotation on that
    span answered ``{"data": [{"query_ids": []}], "skipped": []}``, read as applied although
    no stored query got it. Now it is in ``skipped``, held, with the reason."""
    client, db = served
    retriever = _span(1, 1, RETRIEVER | {"input.value": "refund window?"})
    assert client.post("/v1/traces", json=_export([retriever])).status_code == 200
    newer = [_span(1_000 + t, 1_000 + t, {}) for t in range(MAX_RECENT_TRACES)]
    for start in range(0, len(newer), 2_500):  # four requests under the body limit
        assert client.post("/v1/traces", json=_export(newer[start : start + 2_500])).is_success
    llm = _span(1, 2, {"openinference.span.kind": "LLM", "output.value": "30 days"})
    assert client.post("/v1/traces", json=_export([llm])).status_code == 200
    note = {"span_id": f"{2:016x}", "name": "user_feedback", "result": {"label": "thumbs-down"}}
    reply = client.post("/v1/span_annotations", json={"data": [note]}).json()
    assert reply["data"] == []
    (skipped,) = reply["skipped"]
    assert skipped["held"] is True and skipped["index"] == 0
    assert "no retriever span of its trace is known to this server" in skipped["reason"]
    assert "/api/feedback" in skipped["reason"]
    with Store.open(db) as store:
        assert store.query_log_counts() == (1, 0)
    assert json.dumps(reply)  # the reply stays plain JSON


def test_finding_01_waiting_rows_are_counted_in_rows(store: Store) -> None:
    """Issue 27.1: the bound on what waits to be written counted queued requests, so one
    request of a million rows was one. Now it counts rows: with 50 rows waiting and room for
    100, a request of 60 is refused (the ingest endpoint answers 503) and writes nothing."""
    from ragmeter.errors import StoreError
    from ragmeter.feedback.querylog import FeedbackRecord, QueryLogger, feedback_row

    # The writer waits a minute for more unacknowledged rows: the 50 stay queued.
    logger = QueryLogger(store, flush_interval=60, max_pending=100)
    for n in range(50):
        logger.log(f"q{n}", [])
    rows = [feedback_row(FeedbackRecord(query_id=f"x{n}", thumbs_up=True)) for n in range(60)]
    with pytest.raises(StoreError, match="50 rows already wait to be written"):
        logger.submit([], rows, on_written=lambda error, skipped: None)
    logger.close()
    assert store.query_log_counts() == (50, 0)
    store.close()
