"""HTTP ingest for the query log: ``/api/log``, ``/api/feedback``, ``/v1/traces``, annotations.

For services that are not written in Python. ``POST /v1/traces`` takes OTLP/HTTP trace
exports (see ``ragmeter.feedback.otlp``); a body that is not one is 400.
``POST /v1/span_annotations`` takes Arize Phoenix / OpenInference span annotations (thumbs
up/down, score, explanation) on traced spans (see ``ragmeter.feedback.annotations``) and
answers ``{"data": [...], "skipped": [...]}``. The others are JSON::

    POST /api/log       {"query": "...", "hits": [{"id": "faq.md#4", "doc": "faq.md",
                         "score": 12.5, "text": "..."}], "latency_ms": 84, "user": "u1",
                         "meta": {...}}                       -> {"query_id": "..."}
    POST /api/feedback  {"query_id": "...", "thumbs_up": false, "comment": "..."}
                                                              -> {"ok": true}

Errors share one shape, ``{"error": {"status": 422, "message": "...", "fields": [...]}}``:
a malformed payload is 422 naming the field, a body over ``MAX_BODY_BYTES`` is 413,
a missing or wrong bearer token is 401, a body not sent as
``Content-Type: application/json`` is 415 (so a form on another site cannot post
here). A request is validated whole before anything is queued, so a refused
request writes nothing.

**Bounded work** (issue 27.1): bodies are decoded off the event loop; a request that would
write over ``MAX_REQUEST_ROWS`` rows is 413, and each client address has a budget of
rows and bytes a second (``ragmeter.web.budget``): a request over it is 429 with
``Retry-After``. Both are refused before anything is queued.

**Durable acknowledgement**: a 200 means the row is committed to the store. The
request waits while the writer thread commits it (rows of concurrent requests share
one transaction, so waiting costs little throughput); if the write fails, or
``MAX_PENDING`` rows already wait, or the commit has not started within ``ACK_TIMEOUT_S``
(the rows are then withdrawn, never written), the answer is 503 with ``Retry-After`` and
the caller should send the row again (a query id may then be stored twice — it is never
acknowledged and lost).

``ingest_router(logger, token)`` gives the routes to mount in another FastAPI app
(the dashboard does); ``create_ingest_app(store_url, token)`` is a standalone app.

>>> app = create_ingest_app("sqlite://")
>>> sorted(app.openapi()["paths"])
['/api/feedback', '/api/log', '/v1/span_annotations', '/v1/traces']
"""

from __future__ import annotations

import asyncio
import ipaddress
import math
import secrets
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ValidationError

from ragmeter.errors import ConfigError, InputError, StoreError
from ragmeter.feedback.annotations import decode_annotations
from ragmeter.feedback.otlp import TraceJoiner, decode_traces
from ragmeter.feedback.querylog import (
    FeedbackRecord,
    LogRecord,
    QueryLogger,
    feedback_row,
    parse_body,
    query_row,
    validation_message,
)
from ragmeter.web.budget import Budget
from ragmeter.web.guard import HostGuard, NotJSON, allowed_hosts, require_json

__all__ = [
    "ACK_TIMEOUT_S",
    "MAX_BODY_BYTES",
    "check_bind",
    "create_ingest_app",
    "error_response",
    "ingest_router",
    "is_loopback",
]

#: Largest request body accepted (bytes); larger ones get HTTP 413.
MAX_BODY_BYTES = 1_000_000
#: Longest a request waits for its row to be committed before answering 503 (seconds).
ACK_TIMEOUT_S = 30.0
#: Seconds a client is told to wait before retrying after a 503.
RETRY_AFTER_S = 1


class _Refused(Exception):
    def __init__(self, status: int, message: str, fields: list[str] | None = None,
                 retry_after: float | None = None) -> None:  # fmt: skip
        super().__init__(message)
        self.status, self.message, self.fields = status, message, fields or []
        self.retry_after = retry_after


def error_response(
    status: int, message: str, fields: list[str] | None = None, retry_after: float | None = None
) -> JSONResponse:
    """The one error shape of ragmeter's HTTP API (``retry_after``: seconds, for 429/503)."""
    body = {"error": {"status": status, "message": message, "fields": fields or []}}
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    if status in (429, 503):
        headers = {"Retry-After": str(max(RETRY_AFTER_S, math.ceil(retry_after or 0)))}
    return JSONResponse(body, status_code=status, headers=headers)


async def _write_durably(
    logger: QueryLogger,
    queries: list[dict[str, Any]],
    feedback: list[dict[str, Any]],
    answers: dict[str, str] | None = None,
) -> int:
    """Queue rows and return once they are committed; ``_Refused(503)`` when they are not.

    Returns how many of ``queries`` were skipped because their id was already stored.
    """
    loop = asyncio.get_running_loop()
    written: asyncio.Future[tuple[BaseException | None, int]] = loop.create_future()

    def settle(error: BaseException | None, skipped: int) -> None:
        if not written.done():
            written.set_result((error, skipped))

    def on_written(error: BaseException | None, skipped: int) -> None:  # the writer thread
        loop.call_soon_threadsafe(settle, error, skipped)

    try:
        submission = logger.submit(queries, feedback, answers=answers, on_written=on_written)
    except StoreError as refused:
        raise _Refused(503, f"not stored, retry later: {refused}") from None
    try:
        error, skipped = await asyncio.wait_for(asyncio.shield(written), ACK_TIMEOUT_S)
    except TimeoutError:
        if submission.withdraw():  # never written: a 503 is a request that wrote nothing
            raise _Refused(503, f"not stored within {ACK_TIMEOUT_S:g} s, retry later") from None
        error, skipped = await written  # being written now: answer what happened
    if error is not None:
        raise _Refused(503, f"not stored, retry later: {type(error).__name__}: {error}")
    return skipped


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach.

    >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("0.0.0.0")
    (True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without a token (ConfigError, exit 2)."""
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"binding {host} exposes the ingest API beyond this machine: give --token "
            "(or RAGMETER_INGEST_TOKEN) so every request must carry it"
        )


async def _read_body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise _Refused(413, f"request body over {MAX_BODY_BYTES} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise _Refused(413, f"request body over {MAX_BODY_BYTES} bytes")
    return bytes(body)


def _parse(body: bytes, model: type[BaseModel]) -> Any:
    try:
        data = parse_body(body)
    except InputError as error:
        raise _Refused(422, str(error), ["body"]) from None
    if not isinstance(data, dict):
        raise _Refused(422, "body: expected a JSON object", ["body"])
    # Server-side fields only bulk import may set.
    for key in ("id", "created", "thumbs_up", "comment") if model is LogRecord else ("created",):
        if key in data:
            raise _Refused(422, f"{key}: not accepted here", [key])
    try:
        return model.model_validate(data)
    except ValidationError as error:
        message, fields = validation_message(error)
        raise _Refused(422, message, fields) from None


def ingest_router(
    logger: QueryLogger, token: str | None = None, *, budget: Budget | None = None
) -> APIRouter:
    """The ingest routes, writing through ``logger``; with ``token``, every call needs it.

    ``budget`` is what each client address may send (default ``Budget()``, see
    ``ragmeter.web.budget``); a request over it is 429 and writes nothing.

    >>> from ragmeter.store import Store
    >>> router = ingest_router(QueryLogger(Store.memory()), token="s3cret")
    >>> [r.path for r in router.routes]
    ['/api/log', '/api/feedback', '/v1/traces', '/v1/span_annotations']
    """
    router = APIRouter()
    expected = f"Bearer {token}".encode() if token else None
    joiner = TraceJoiner()  # joins a trace's spans across export requests
    join_lock = threading.Lock()
    budget = budget if budget is not None else Budget()

    def guarded(
        handler: Callable[[Request], Awaitable[dict[str, Any] | Response]],
        json_only: bool = True,
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                if expected is not None:
                    given = request.headers.get("authorization", "").encode()
                    if not secrets.compare_digest(given, expected):
                        raise _Refused(401, "missing or wrong bearer token")
                if json_only:
                    try:
                        require_json(request.headers)
                    except NotJSON as refused:
                        raise _Refused(refused.status, str(refused), ["content-type"]) from None
                result = await handler(request)
                return result if isinstance(result, Response) else JSONResponse(result)
            except _Refused as refused:
                return error_response(
                    refused.status, refused.message, refused.fields, refused.retry_after
                )

        return endpoint

    def client(request: Request) -> str:
        return request.client.host if request.client else "unknown"

    async def body_of(request: Request) -> bytes:
        body = await _read_body(request)
        wait = budget.charge(client(request), bytes=len(body))
        if wait:
            raise _Refused(429, f"over this client's budget of {budget.rates['bytes']:g} "
                           "request bytes a second, retry later", retry_after=wait)  # fmt: skip
        return body

    async def joined(decode: Callable[[], Any]) -> Any:
        # Off the event loop (a 1 MB body takes a while to decode); one join at a time.
        def run() -> Any:
            with join_lock:
                return decode()

        return await asyncio.to_thread(run)

    async def write(request: Request, queries: list[dict[str, Any]], feedback: list[dict[str, Any]],
                    answers: dict[str, str] | None = None,
                    added: list[tuple[str, str, str]] | None = None) -> int:  # fmt: skip
        """Write one request's rows, or refuse it whole (undoing what it taught the joiner)."""
        try:
            rows = len(queries) + len(feedback) + len(answers or {})
            if rows > budget.max_request_rows:
                raise _Refused(413, f"this request would write {rows} rows, over "
                               f"{budget.max_request_rows}: send fewer spans per request")  # fmt: skip
            wait = budget.charge(client(request), rows=max(rows, 1))
            if wait:
                raise _Refused(429, f"this request would write {rows} rows, over this client's "
                               f"budget of {budget.rates['rows']:g} rows a second, retry later",
                               retry_after=wait)  # fmt: skip
            return await _write_durably(logger, queries, feedback, answers)
        except _Refused:
            if added:  # not stored: a retry must join again
                await joined(lambda: joiner.forget(added))
            raise

    async def log(request: Request) -> dict[str, Any]:
        body = await body_of(request)
        record = await asyncio.to_thread(_parse, body, LogRecord)
        row = query_row(record)
        await write(request, [row], [])
        return {"query_id": row["id"]}

    async def feedback(request: Request) -> dict[str, Any]:
        body = await body_of(request)
        record = await asyncio.to_thread(_parse, body, FeedbackRecord)
        await write(request, [], [feedback_row(record)])
        return {"ok": True}

    async def traces(request: Request) -> Response:
        # OTLP/HTTP (protobuf or JSON): retriever spans become logged queries.
        body = await body_of(request)
        try:
            batch = await joined(
                lambda: decode_traces(
                    body,
                    request.headers.get("content-type", ""),
                    encoding=request.headers.get("content-encoding", ""),
                    limit=MAX_BODY_BYTES,
                    joiner=joiner,
                )
            )
        except InputError as error:
            raise _Refused(400, str(error), ["body"]) from None
        duplicates = await write(request, batch.queries, batch.feedback, batch.answers, batch.added)
        return Response(batch.reply(duplicates), media_type=batch.media_type)

    async def annotations(request: Request) -> dict[str, Any]:
        # Phoenix's span-annotation shape: a verdict on the trace of any recently seen span.
        body = await body_of(request)
        try:
            batch = await joined(lambda: decode_annotations(body, joiner))
        except InputError as error:
            raise _Refused(422, str(error), ["body"]) from None
        await write(request, [], batch.feedback, added=batch.added)
        return {"data": batch.data, "skipped": batch.skipped}

    def schema(model: type[BaseModel]) -> dict[str, Any]:
        content = {"application/json": {"schema": model.model_json_schema()}}
        return {"requestBody": {"required": True, "content": content}}

    router.add_api_route(
        "/api/log",
        guarded(log),
        methods=["POST"],
        summary="Log one query and the hits it retrieved",
        openapi_extra=schema(LogRecord),
    )
    router.add_api_route(
        "/api/feedback",
        guarded(feedback),
        methods=["POST"],
        summary="Thumbs up or down on a logged query",
        openapi_extra=schema(FeedbackRecord),
    )
    router.add_api_route(
        "/v1/traces",
        guarded(traces, json_only=False),  # the decoder checks its own content types
        methods=["POST"],
        summary="OTLP/HTTP traces: OpenInference and GenAI retriever spans become logged queries",
    )
    router.add_api_route(
        "/v1/span_annotations",
        guarded(annotations),
        methods=["POST"],
        summary="Phoenix/OpenInference span annotations: thumbs up or down on a traced span",
    )
    return router


def create_ingest_app(
    store_url: str,
    token: str | None = None,
    *,
    hosts: Iterable[str] | None = None,
    budget: Budget | None = None,
) -> FastAPI:
    """A standalone ingest app; the logger opens with the app and is flushed when it stops.

    ``hosts`` are the Host names answered (default: the loopback forms, see
    ``ragmeter.web.guard``); a request naming any other host gets 421. ``budget`` is what
    each client address may send (default ``Budget()``).

    ``uvicorn.run(create_ingest_app("sqlite:///logs.db", token="..."), port=8766)``
    """
    logger = QueryLogger(store=store_url)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            logger.close()  # write what is queued before the process ends

    app = FastAPI(title="ragmeter ingest", lifespan=lifespan)
    app.include_router(ingest_router(logger, token, budget=budget))
    app.add_middleware(HostGuard, hosts=allowed_hosts(None) if hosts is None else hosts)
    return app
