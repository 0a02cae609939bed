"""Issue 18.4: ``ragmeter ingest serve`` takes OTLP/HTTP traces at ``POST /v1/traces``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from fastapi import FastAPI

from _ingest import ingest_process
from ragmeter.feedback.querylog import MAX_HITS, QueryLogger
from ragmeter.gold.files import load_gold
from ragmeter.store import Store
from ragmeter.web.ingest import ingest_router

pb2 = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")

AUTH = {"Authorization": "Bearer s3cret"}
PROTO = {"Content-Type": "application/x-protobuf"} | AUTH


def call(app: FastAPI, path: str, **kwargs: Any) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.post(path, **kwargs)

    return asyncio.run(go())


@pytest.fixture
def app_and_store() -> Any:
    store = Store.memory()
    logger = QueryLogger(store)
    app = FastAPI()
    app.include_router(ingest_router(logger, token="s3cret"))
    yield app, store, logger
    logger.close()


def _export(attributes: dict[str, Any]) -> bytes:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    request = pb2.ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"\x01" * 16, b"\x02" * 8, "retrieve"
    span.start_time_unix_nano, span.end_time_unix_nano = 1_000_000, 6_000_000
    for key, value in attributes.items():
        any_value = (
            AnyValue(string_value=value) if isinstance(value, str) else AnyValue(double_value=value)
        )
        span.attributes.append(KeyValue(key=key, value=any_value))
    return bytes(request.SerializeToString())


def test_a_body_that_is_not_protobuf_is_400(app_and_store: Any) -> None:
    """Issue 18.4: a bad body is 400 with a clear message; nothing is logged; auth applies."""
    app, store, logger = app_and_store
    bad = call(app, "/v1/traces", content=b"this is not protobuf", headers=PROTO)
    assert bad.status_code == 400
    error = bad.json()["error"]
    assert error["message"].startswith("body: not an OTLP protobuf trace export")
    assert error["fields"] == ["body"]
    bad_json = call(
        app, "/v1/traces", content=b"{nope", headers=AUTH | {"Content-Type": "application/json"}
    )
    assert bad_json.status_code == 400
    assert bad_json.json()["error"]["message"].startswith("body: not an OTLP/JSON trace export")
    unknown = call(app, "/v1/traces", content=b"x", headers=AUTH | {"Content-Type": "text/plain"})
    assert unknown.status_code == 400
    anonymous = call(
        app, "/v1/traces", content=_export({}), headers={"Content-Type": PROTO["Content-Type"]}
    )
    assert anonymous.status_code == 401
    logger.flush()
    assert store.query_log_counts() == (0, 0)


def test_a_span_with_10000_documents_is_truncated_and_reported(app_and_store: Any) -> None:
    """Issue 18.4: the first MAX_HITS documents are kept; the response and the entry say so."""
    app, store, logger = app_and_store
    attributes: dict[str, Any] = {"openinference.span.kind": "RETRIEVER", "input.value": "q?"}
    for n in range(10_000):
        attributes[f"retrieval.documents.{n}.document.id"] = f"d{n}"
    response = call(app, "/v1/traces", content=_export(attributes), headers=PROTO)
    assert response.status_code == 200, response.text
    reply = pb2.ExportTraceServiceResponse.FromString(response.content)
    query_id = "01" * 16 + "-" + "02" * 8
    assert reply.partial_success.error_message == (
        f"span {query_id}: 10000 documents, kept the first {MAX_HITS}"
    )
    logger.flush()
    (logged,) = store.logged_queries()
    assert logged.id == query_id and len(logged.hits) == MAX_HITS
    assert logged.hits[0]["id"] == "d0" and logged.hits[-1]["id"] == f"d{MAX_HITS - 1}"
    assert logged.meta["documents_total"] == 10_000
    assert logged.latency_ms == 5.0


def test_otlp_json_with_hex_ids(app_and_store: Any) -> None:
    """Issue 18.4: OTLP/JSON (hex trace and span ids) is read as the protobuf is."""
    app, store, logger = app_and_store
    body = {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "ab" * 16, "spanId": "cd" * 8, "name": "r",
        "attributes": [
            {"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}},
            {"key": "input.value", "value": {"stringValue": "json question"}},
            {"key": "retrieval.documents.0.document.content", "value": {"stringValue": "txt"}},
            {"key": "retrieval.documents.0.document.metadata",
             "value": {"stringValue": json.dumps({"source": "a.md"})}},
        ],
    }]}]}]}  # fmt: skip
    response = call(app, "/v1/traces", json=body, headers=AUTH)
    assert response.status_code == 200 and response.json() == {}
    logger.flush()
    (logged,) = store.logged_queries()
    assert logged.query == "json question"
    assert logged.hits == ({"id": "a.md", "doc": "a.md", "text": "txt"},)


@pytest.mark.slow
def test_real_otel_exporter_to_ingest_serve_then_flywheel_export(tmp_path: Path) -> None:
    """Issue 18.4: spans exported by the real OTel SDK become logged queries; the failed one
    (a thumbs-down feedback event) comes out of `flywheel export` with what was retrieved."""
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from ragmeter.cli.flywheel import flywheel

    db = tmp_path / "store.db"
    with ingest_process(db, "--token", "t0k") as server:
        exporter = OTLPSpanExporter(
            endpoint=f"{server.base}/v1/traces", headers={"Authorization": "Bearer t0k"}
        )
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("app")
        asked = [
            ("how do I clear the uv cache", False, True),
            ("how do I install uv", True, True),
            ("where are tools installed", None, False),  # retriever span only: partial
        ]
        for question, thumbs_up, with_llm in asked:
            with tracer.start_as_current_span("rag") as root:
                with tracer.start_as_current_span("retrieve") as span:
                    span.set_attribute("openinference.span.kind", "RETRIEVER")
                    span.set_attribute("input.value", question)
                    span.set_attribute("retrieval.documents.0.document.id", "index.md#0")
                    span.set_attribute("retrieval.documents.0.document.score", 3.5)
                    span.set_attribute("retrieval.documents.0.document.content", "uv is fast")
                    span.set_attribute(
                        "retrieval.documents.0.document.metadata",
                        json.dumps({"source": "index.md"}),
                    )
                if with_llm:
                    with tracer.start_as_current_span("llm") as llm:
                        llm.set_attribute("openinference.span.kind", "LLM")
                        llm.set_attribute("output.value", f"answer to {question}")
                if thumbs_up is not None:
                    root.add_event("feedback", {"thumbs_up": thumbs_up, "comment": "meh"})
        provider.shutdown()
    # Stopped with SIGINT (graceful: the logger flushes on shutdown).
    assert server.returncode == 0, server.output
    with Store.open(db) as store:
        # Each span went in its own request; the feedback on the root span still joined.
        assert store.query_log_counts() == (3, 2)
    out = CliRunner().invoke(
        flywheel, ["export", "--since", "1d", "--out", str(tmp_path / "c.yaml"), "--store", str(db)]
    )
    assert out.exit_code == 0, out.output
    (item,) = load_gold(tmp_path / "c.yaml").items
    assert item.question == "how do I clear the uv cache"
    assert item.metadata["retrieved"] == [
        {"id": "index.md#0", "doc": "index.md", "text": "uv is fast"}
    ]
    assert item.metadata["comments"] == ["meh"]


def test_one_request_joins_the_answer_and_feedback(app_and_store: Any) -> None:
    """Issue 18.4: a trace's LLM span gives the answer; its feedback event the verdict;
    a span sent twice (an exporter retry) is logged once."""
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    app, store, logger = app_and_store
    request = pb2.ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    for span_id, kind, key, value in [
        (b"\x01" * 8, "RETRIEVER", "input.value", "refund window?"),
        (b"\x02" * 8, "LLM", "output.value", "30 days"),
    ]:
        span = spans.add(trace_id=b"\x09" * 16, span_id=span_id, name=kind.lower())
        span.attributes.append(
            KeyValue(key="openinference.span.kind", value=AnyValue(string_value=kind))
        )
        span.attributes.append(KeyValue(key=key, value=AnyValue(string_value=value)))
    event = spans[1].events.add(name="feedback")
    event.attributes.append(KeyValue(key="label", value=AnyValue(string_value="thumbs_down")))
    body = request.SerializeToString()
    for _ in range(2):
        assert call(app, "/v1/traces", content=body, headers=PROTO).status_code == 200
    logger.flush()
    (logged,) = store.logged_queries()
    assert logged.meta["answer"] == "30 days"
    assert logged.thumbs_down


def test_docstring_examples_run() -> None:
    """Issue 18.4: the OTLP module's docstring examples are true."""
    import doctest

    import ragmeter.evaluation.tracking
    import ragmeter.feedback.otlp

    for module in (ragmeter.feedback.otlp, ragmeter.evaluation.tracking):
        failures, tried = doctest.testmod(module)
        assert (failures, tried > 0) == (0, True), module.__name__
