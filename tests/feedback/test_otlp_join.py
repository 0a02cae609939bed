"""Issue 18.4: OTel GenAI retrieval spans, and a trace's spans joined across export requests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from fastapi import FastAPI

from _otlp import exporting_provider, ingest_served
from ragmeter.feedback.otlp import TraceJoiner, decode_traces
from ragmeter.feedback.querylog import QueryLogger
from ragmeter.gold.files import load_gold
from ragmeter.store import Store
from ragmeter.web.ingest import ingest_router

pb2 = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")

PROTO = {"Content-Type": "application/x-protobuf"}


@pytest.fixture
def ingest_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`ragmeter ingest serve`'s app under real uvicorn on loopback; the store file."""
    db = tmp_path / "logs.db"
    with ingest_served(db) as base:
        yield base, db


def _tracer(base: str) -> Any:
    # One export request per span as it ends: the retriever span, the chat span and the root
    # span carrying the feedback event reach the server in three different requests.
    return exporting_provider(base)


def test_genai_retrieval_spans_from_the_real_sdk_join_across_requests(
    ingest_server: tuple[str, Path], tmp_path: Path
) -> None:
    """Issue 18.4: a GenAI-convention retrieval span (gen_ai.operation.name=retrieval,
    gen_ai.retrieval.query.text, gen_ai.retrieval.documents as the JSON string the SDK can
    carry) becomes a logged query; the chat span's gen_ai.output.messages, exported in a later
    request, becomes its answer; the root span's thumbs-down, in a third request, its verdict;
    `flywheel export` returns it with what was retrieved."""
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    from ragmeter.cli.flywheel import flywheel

    base, db = ingest_server
    provider = _tracer(base)
    tracer = provider.get_tracer("app")
    documents = [
        {"id": "cache.md#0", "score": 0.91, "content": "uv cache clean",
         "metadata": {"source": "cache.md"}},
        {"id": "install.md#2", "score": 0.42},
    ]  # fmt: skip
    with tracer.start_as_current_span("rag") as root:
        with tracer.start_as_current_span("retrieval docs") as span:
            span.set_attribute("gen_ai.operation.name", "retrieval")
            span.set_attribute("gen_ai.data_source.id", "docs")
            span.set_attribute("gen_ai.retrieval.query.text", "how do I clear the uv cache")
            span.set_attribute("gen_ai.retrieval.documents", json.dumps(documents))
        with tracer.start_as_current_span("chat m") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            messages = [{"role": "assistant", "finish_reason": "stop",
                         "parts": [{"type": "text", "content": "Run uv cache clean."}]}]  # fmt: skip
            chat.set_attribute("gen_ai.output.messages", json.dumps(messages))
        root.add_event("feedback", {"thumbs_up": False, "comment": "wrong command"})
    provider.shutdown()
    with Store.open(db) as store:  # a 200 means committed: no need to stop the server first
        assert store.query_log_counts() == (1, 1)
        (logged,) = store.logged_queries()
    assert logged.query == "how do I clear the uv cache"
    assert logged.hits == (
        {"id": "cache.md#0", "doc": "cache.md", "score": 0.91, "text": "uv cache clean"},
        {"id": "install.md#2", "doc": "install.md#2", "score": 0.42},
    )
    assert logged.meta["answer"] == "Run uv cache clean."
    assert logged.meta["convention"] == "gen_ai"
    assert logged.thumbs_down and logged.feedback[0][1] == "wrong command"
    out = tmp_path / "c.yaml"
    result = CliRunner().invoke(
        flywheel, ["export", "--since", "1d", "--out", str(out), "--store", str(db)]
    )
    assert result.exit_code == 0, result.output
    (item,) = load_gold(out).items
    assert item.question == "how do I clear the uv cache"
    assert [h["id"] for h in item.metadata["retrieved"]] == ["cache.md#0", "install.md#2"]


def _span(trace: int, span: int, attributes: dict[str, Any], **fields: Any) -> dict[str, Any]:
    def value(v: Any) -> dict[str, Any]:
        if isinstance(v, str):
            return {"stringValue": v}
        if isinstance(v, bool):
            return {"boolValue": v}
        if isinstance(v, float):
            return {"doubleValue": v}
        if isinstance(v, list):
            return {"arrayValue": {"values": [value(x) for x in v]}}
        return {"kvlistValue": {"values": [{"key": k, "value": value(x)} for k, x in v.items()]}}

    body = {
        "traceId": f"{trace:032x}", "spanId": f"{span:016x}", "name": "s",
        "startTimeUnixNano": "1000000", "endTimeUnixNano": str(2_000_000 + span),
        "attributes": [{"key": k, "value": value(v)} for k, v in attributes.items()],
    }  # fmt: skip
    return body | fields


def _export(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


@pytest.fixture
def app(store: Store) -> Iterator[tuple[FastAPI, Store, QueryLogger]]:
    logger = QueryLogger(store)
    application = FastAPI()
    application.include_router(ingest_router(logger))
    yield application, store, logger
    logger.close()


def post(app: FastAPI, body: dict[str, Any]) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            return await c.post("/v1/traces", json=body)

    return asyncio.run(go())


GENAI = {"gen_ai.operation.name": "retrieval"}


def test_genai_documents_structured_missing_or_malformed(app: Any) -> None:
    """Issue 18.4: structured gen_ai.retrieval.documents are read; a span that did not record
    them (the attribute is opt-in) is logged without hits, marked and reported, never passed
    off as "nothing retrieved" silently; one whose documents are not an array is refused."""
    application, store, logger = app
    structured = GENAI | {"gen_ai.retrieval.query.text": "structured",
                          "gen_ai.retrieval.documents": [{"id": "a.md#1", "score": 2.0}]}  # fmt: skip
    unrecorded = GENAI | {"gen_ai.retrieval.query.text": "no documents"}
    malformed = GENAI | {"gen_ai.retrieval.query.text": "bad", "gen_ai.retrieval.documents": "{"}
    no_query = GENAI | {"gen_ai.retrieval.documents": "[]"}
    answer = post(
        application,
        _export(_span(1, 1, structured), _span(2, 2, unrecorded), _span(3, 3, malformed),
                _span(4, 4, no_query)),
    )  # fmt: skip
    assert answer.status_code == 200, answer.text
    message = answer.json()["partialSuccess"]["errorMessage"].split("; ")
    assert message == [
        f"span {2:032x}-{2:016x}: no gen_ai.retrieval.documents, logged without hits",
        f"span {3:032x}-{3:016x}: gen_ai.retrieval.documents is not an array of objects",
        f"span {4:032x}-{4:016x}: retriever span without gen_ai.retrieval.query.text",
    ]
    logger.flush()
    logged = {q.query: q for q in store.logged_queries()}
    assert sorted(logged) == ["no documents", "structured"]
    assert logged["structured"].hits == ({"id": "a.md#1", "doc": "a.md#1", "score": 2.0},)
    assert logged["no documents"].hits == ()
    assert logged["no documents"].meta["documents"] == "not recorded"


def test_answer_and_feedback_sent_before_the_retriever_span_still_join(app: Any) -> None:
    """Issue 18.4: the LLM span and the feedback event arrive first, the retriever span in a
    later request: the entry gets both. Re-sending the feedback adds no second verdict; a
    second retriever span of the trace gets the earlier verdict too."""
    application, store, logger = app
    llm = _span(7, 2, {"openinference.span.kind": "LLM", "output.value": "30 days"})
    root = _span(7, 1, {}, events=[{"name": "feedback", "timeUnixNano": "5",
                                    "attributes": [{"key": "label",
                                                    "value": {"stringValue": "thumbs-down"}}]}])  # fmt: skip
    first = post(application, _export(llm, root))
    assert first.json()["partialSuccess"]["errorMessage"] == (
        f"trace {7:032x}: feedback held until a retriever span of the trace arrives"
    )
    assert post(application, _export(root)).status_code == 200  # a retry: the same event
    retriever = {"openinference.span.kind": "RETRIEVER", "input.value": "refund window?"}
    assert post(application, _export(_span(7, 3, retriever))).json() == {}
    assert (
        post(application, _export(_span(7, 4, retriever | {"input.value": "again"}))).json() == {}
    )
    logger.flush()
    logged = {q.query: q for q in store.logged_queries()}
    for query in ("refund window?", "again"):
        assert logged[query].meta["answer"] == "30 days"
        assert logged[query].thumbs_down and len(logged[query].feedback) == 1
    assert store.query_log_counts() == (2, 2)


def test_a_later_answer_is_written_onto_the_stored_entry(app: Any) -> None:
    """Issue 18.4: an answer exported after its retriever span updates the stored entry;
    of two LLM spans the one that ended last is the answer."""
    application, store, logger = app
    retriever = {"openinference.span.kind": "RETRIEVER", "input.value": "q"}
    post(application, _export(_span(9, 1, retriever)))
    rewrite = _span(9, 2, {"openinference.span.kind": "LLM", "output.value": "rewritten q"})
    final = _span(9, 3, {"openinference.span.kind": "LLM",
                         "llm.output_messages.0.message.content": "the answer",
                         "output.value": '{"generations": []}'})  # fmt: skip
    post(application, _export(final, rewrite))
    logger.flush()
    (logged,) = store.logged_queries()
    assert logged.meta["answer"] == "the answer"


def test_the_trace_table_is_bounded() -> None:
    """Issue 18.4: the joiner keeps MAX_RECENT_TRACES traces; a forgotten trace's late
    feedback is held (and reported), not attached to a guess."""
    joiner = TraceJoiner(limit=1)
    retriever = {"openinference.span.kind": "RETRIEVER", "input.value": "q"}
    for trace in (1, 2):
        decode_traces(json.dumps(_export(_span(trace, 1, retriever))).encode(),
                      "application/json", joiner=joiner)  # fmt: skip
    assert joiner.queries(f"{1:032x}") == [] and joiner.queries(f"{2:032x}") != []
    late = _span(1, 5, {}, events=[{"name": "feedback", "timeUnixNano": "1",
                                    "attributes": [{"key": "thumbs_up",
                                                    "value": {"boolValue": True}}]}])  # fmt: skip
    batch = decode_traces(json.dumps(_export(late)).encode(), "application/json", joiner=joiner)
    assert batch.feedback == []
    assert batch.warnings == [
        f"trace {1:032x}: feedback held until a retriever span of the trace arrives"
    ]


def _annotate(app: FastAPI, *annotations: dict[str, Any]) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            return await c.post("/v1/span_annotations", json={"data": list(annotations)})

    return asyncio.run(go())


def test_phoenix_span_annotations_are_feedback_on_the_trace(app: Any) -> None:
    """Issue 18.4: a Phoenix-shaped span annotation on the root span is the verdict on the
    trace's retriever span; a label wins over a score, a score of exactly 0/1 stands alone,
    any other score, an unknown label or an unknown span is skipped with its reason; the same
    identifier re-sent unchanged is not a second verdict, changed it is the newer one."""
    application, store, logger = app
    retriever = {"openinference.span.kind": "RETRIEVER", "input.value": "refund window?"}
    post(application, _export(_span(5, 1, {}), _span(5, 2, retriever)))
    root = f"{1:016x}"
    down = {"span_id": root, "name": "user_feedback", "annotator_kind": "HUMAN",
            "identifier": "u1", "result": {"label": "thumbs-down", "score": 1,
                                           "explanation": "outdated"}}  # fmt: skip
    answer = _annotate(
        application,
        down,
        {"span_id": root, "name": "stars", "result": {"score": 0.7}},
        {"span_id": root, "name": "c", "result": {"label": "correct"}},
        {"span_id": f"{99:016x}", "name": "user_feedback", "result": {"score": 1}},
    )
    assert answer.status_code == 200, answer.text
    query_id = f"{5:032x}-{2:016x}"
    assert answer.json() == {
        "data": [{"index": 0, "span_id": root, "query_ids": [query_id]}],
        "skipped": [
            {"index": 1, "span_id": root,
             "reason": f"span {root}: score 0.7 without a label: only 1 (up) or 0 (down) is a verdict"},
            {"index": 2, "span_id": root,
             "reason": f"span {root}: label 'correct' is not a thumbs up or down"},
            {"index": 3, "span_id": f"{99:016x}",
             "reason": f"span {99:016x}: not a span of a recent trace on this server"},
        ],
    }  # fmt: skip
    assert _annotate(application, down).status_code == 200  # re-sent: no second row
    logger.flush()
    (logged,) = store.logged_queries()
    assert logged.thumbs_down and [f[:2] for f in logged.feedback] == [(False, "outdated")]
    up = down | {"result": {"score": 1}}
    assert _annotate(application, up).status_code == 200  # the user changed their mind
    logger.flush()
    (logged,) = store.logged_queries()
    assert not logged.thumbs_down and len(logged.feedback) == 2
    bad = _annotate(application, {"span_id": "xyz", "name": "f"})
    assert bad.status_code == 422
    assert bad.json()["error"]["message"].startswith("data.0.span_id:")


class _FailsOnce(Store):
    """A real memory store whose first query-log write fails (a full disk, say)."""

    failed = False

    def add_query_log(self, queries: Any, feedback: Any = (), answers: Any = None) -> Any:
        if not self.failed:
            self.failed = True
            raise OSError("database or disk is full")
        return super().add_query_log(queries, feedback, answers)


def test_a_request_that_was_not_stored_joins_again_when_retried() -> None:
    """Issue 18.4: a 503 undoes what the request taught the trace table, so the exporter's
    retry logs the span and its verdict (before, the table thought both were logged)."""
    with _FailsOnce("sqlite://") as store:
        logger = QueryLogger(store)
        application = FastAPI()
        application.include_router(ingest_router(logger))
        retriever = {"openinference.span.kind": "RETRIEVER", "input.value": "q"}
        event = {"name": "feedback", "timeUnixNano": "3",
                 "attributes": [{"key": "thumbs_up", "value": {"boolValue": False}}]}  # fmt: skip
        body = _export(_span(8, 1, retriever, events=[event]))
        assert post(application, body).status_code == 503
        assert post(application, body).status_code == 200
        logger.close()
        (logged,) = store.logged_queries()
        assert logged.thumbs_down and len(logged.feedback) == 1
