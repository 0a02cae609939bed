"""A retriever behind an HTTP endpoint.

Protocol: ``POST {"question": q, "k": k}`` as JSON; the answer is
``{"hits": [...]}`` (optionally with ``"answer": "..."`` beside it). Failures
that may pass (HTTP 5xx, 429, connection errors, timeouts) are retried with
exponential backoff; a 4xx or a malformed answer fails at once. The retry policy and
the bounded body reading (size limit after decompression, a deadline per request)
are the shared ones of :mod:`ragmeter._http`; only the top ``k`` hits are kept.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ragmeter._http import (
    ACCEPT_ENCODING,
    DEFAULT_MAX_RESPONSE_BYTES,
    RETRY_AFTER_MAX_S,
    BodyTooLarge,
    DeadlineExceeded,
    Retryable,
    RetryPolicy,
    aread_body,
    parse_retry_after,
    read_body,
)
from ragmeter._redact import (
    mask_known,
    redact_url,
    remember_secret,
    remember_url_secrets,
    secret_name,
    template_secrets,
)
from ragmeter.documents import Hit
from ragmeter.errors import ConfigError, RetrieverError
from ragmeter.executors._aio import LoopSession
from ragmeter.executors.pickling import Transient, new_lock, unset
from ragmeter.retrievers.base import (
    DEFAULT_BACKOFF,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    RetrievalOutput,
    coerce_output,
)
from ragmeter.retrievers.ids import DocIdentity, Notes
from ragmeter.retrievers.presets import HttpShape, check_header_value

if TYPE_CHECKING:  # httpx is imported on first use, so `import ragmeter` stays fast
    import httpx

__all__ = ["MAX_CONNECTIONS", "MAX_RETRY_AFTER", "HttpRetriever", "parse_headers", "redact_url"]

#: Connections kept open to the service; above evaluate()'s usual concurrency so
#: keep-alive connections are reused instead of reopened (httpx keeps only 20 by default).
MAX_CONNECTIONS = 100
#: Longest ``Retry-After`` (seconds) we honour on a 429/503 before retrying (shared).
MAX_RETRY_AFTER = RETRY_AFTER_MAX_S
# How much of an error response's body goes into the message.
_BODY_SNIPPET = 200


def parse_headers(values: Iterable[str]) -> dict[str, str]:
    """Parse ``--header "Name: value"`` options (curl's form) into a mapping.

    >>> parse_headers(["Authorization: Bearer abc", "X-Team:search"])
    {'Authorization': 'Bearer abc', 'X-Team': 'search'}
    """
    headers: dict[str, str] = {}
    for number, value in enumerate(values, start=1):
        name, colon, content = value.partition(":")
        name = name.strip()
        if not colon or not name or any(ch.isspace() for ch in name):
            # The value is not echoed: it is usually a credential.
            raise ConfigError(f'header number {number} must look like "Name: value"')
        headers[name] = content.strip()
        check_header_value(name, headers[name])
    return headers


class HttpRetriever(Transient):
    """POST each question to ``url`` and read the hits from the JSON answer.

    ``headers`` (e.g. ``{"Authorization": "Bearer …"}``) are sent with every
    request and never appear in :attr:`config`. The async client is created
    lazily inside the running event loop; call :meth:`aclose` in that loop
    when done (``evaluate()`` does), and :meth:`close` for the sync client.
    ``transport``/``async_transport`` let tests inject ``httpx.MockTransport``, and
    ``sleep`` is how the blocking :meth:`retrieve` waits before a retry (``time.sleep``).
    ``timeout`` bounds each attempt as a whole (connect, headers and body), and a body
    past ``max_response_bytes`` once decompressed fails that question at once.
    It pickles (the Ray executor ships it to workers): the clients, their lock and
    event loop stay behind and the copy opens its own on first use; the headers go
    with it, since the worker must send them.

    >>> r = HttpRetriever("http://127.0.0.1:8000/search", timeout=5)
    >>> r.config["timeout"], r.is_async
    (5.0, False)
    """

    # Bound to this process (sockets, a lock, an event loop): rebuilt empty in a copy.
    _TRANSIENT = {
        "_client": unset,
        "_client_lock": new_lock,
        "_async": lambda retriever: retriever._new_async_session(),
    }

    def __init__(
        self,
        url: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        backoff: float = DEFAULT_BACKOFF,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
        is_async: bool = False,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        identity: DocIdentity | None = None,
        shape: HttpShape | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"retriever URL {redact_url(url)!r} is not an http(s) URL")
        if timeout <= 0:
            raise ConfigError(f"retriever timeout must be positive, got {timeout}")
        if retries < 0 or backoff < 0:
            raise ConfigError("retriever retries and backoff must not be negative")
        if max_response_bytes < 1:
            raise ConfigError(f"max response bytes must be positive, got {max_response_bytes}")
        for name, value in dict(headers or {}).items():
            check_header_value(name, value)
            if secret_name(name):
                remember_secret(value)
        remember_url_secrets(url)
        self.url = url
        # Which method evaluate() should drive; both always work. The sync client on
        # evaluate()'s worker threads measured 15x from concurrency 1 to 16 against a
        # 50 ms service, httpx's async pool 8x (benchmarks/eval_overhead.py), so sync
        # is the default and async a choice.
        self.is_async = is_async
        self.spec = redact_url(url)
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.backoff = float(backoff)
        self.max_response_bytes = int(max_response_bytes)
        self._policy = RetryPolicy(retries=self.retries, backoff=self.backoff)
        self._headers = {"Accept-Encoding": ACCEPT_ENCODING, **dict(headers or {})}
        self._transport = transport
        self._async_transport = async_transport
        self._sleep = sleep
        self.config: Mapping[str, Any] = {
            "type": "http",
            "url": self.spec,
            "timeout": self.timeout,
            "retries": self.retries,
            "backoff": self.backoff,
            "max_response_bytes": self.max_response_bytes,
            # Names only: values are often credentials.
            "headers": sorted(dict(headers or {})),
        }
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()
        self._async = self._new_async_session()
        self.identity: DocIdentity
        self.notes: Notes
        self.shape: HttpShape
        _init_identity(self, identity, shape)
        # Masked in every message this retriever makes, whatever their name or length
        # beyond the minimum: a service may echo any header back (issue 27.4).
        self._secrets = (*dict(headers or {}).values(), *template_secrets(self.shape.body))

    def __repr__(self) -> str:
        return f"HttpRetriever({self.spec!r})"

    # -- async (what evaluate() uses) -------------------------------------------------

    async def aretrieve_full(self, question: str, k: int) -> RetrievalOutput:
        """POST the question and return the hits and any answer, retrying transient failures."""
        import httpx

        client = await self._async.get()
        request = self.shape.request(question, k)
        for attempt in range(self.retries + 1):
            try:
                deadline = time.monotonic() + self.timeout
                try:
                    async with client.stream(url=self.url, **request) as response:
                        failed = response.status_code >= 400
                        body = await aread_body(
                            response,
                            max_bytes=_BODY_SNIPPET + 1 if failed else self.max_response_bytes,
                            deadline=deadline,
                            truncate=failed,  # an error answer is only quoted
                        )
                except httpx.TransportError as exc:
                    raise Retryable(self._transport_message(exc)) from exc
                except (BodyTooLarge, DeadlineExceeded) as exc:
                    raise self._body_failure(exc) from None
                return self._cut(self._read(response, body), k)
            except Retryable as failure:
                if attempt == self.retries:
                    raise RetrieverError(self._final(failure)) from None
                await asyncio.sleep(self._policy.delay(attempt, failure.wait))
        raise AssertionError("unreachable")  # pragma: no cover

    async def aretrieve(self, question: str, k: int) -> list[Hit]:
        """Return the hits for ``question`` (see :meth:`aretrieve_full`)."""
        return (await self.aretrieve_full(question, k)).hits

    async def aclose(self) -> None:
        """Close the async client; call it in the loop that used the retriever."""
        await self._async.aclose()

    @property
    def _aclient(self) -> httpx.AsyncClient | None:
        """The async client open in some loop, if any."""
        return self._async.value

    def _new_async_session(self) -> LoopSession[httpx.AsyncClient]:
        # An AsyncClient's connections belong to the loop that opened them, so a
        # retriever reused under a new loop (a second asyncio.run) gets a new one.
        def open_client() -> httpx.AsyncClient:
            import httpx

            return httpx.AsyncClient(
                headers=self._headers,
                timeout=self.timeout,
                transport=self._async_transport,
                limits=_limits(),
            )

        async def close_client(client: httpx.AsyncClient) -> None:
            await client.aclose()

        return LoopSession(open_client, close_client)

    # -- sync (one-off questions, `ragmeter retrieve`) ---------------------------------

    def retrieve_full(self, question: str, k: int) -> RetrievalOutput:
        """Blocking twin of :meth:`aretrieve_full`; safe to call from many threads."""
        import httpx

        client = self._sync_client()
        request = self.shape.request(question, k)
        for attempt in range(self.retries + 1):
            try:
                deadline = time.monotonic() + self.timeout
                try:
                    with client.stream(url=self.url, **request) as response:
                        failed = response.status_code >= 400
                        body = read_body(
                            response,
                            max_bytes=_BODY_SNIPPET + 1 if failed else self.max_response_bytes,
                            deadline=deadline,
                            truncate=failed,  # an error answer is only quoted
                        )
                except httpx.TransportError as exc:
                    raise Retryable(self._transport_message(exc)) from exc
                except (BodyTooLarge, DeadlineExceeded) as exc:
                    raise self._body_failure(exc) from None
                return self._cut(self._read(response, body), k)
            except Retryable as failure:
                if attempt == self.retries:
                    raise RetrieverError(self._final(failure)) from None
                self._sleep(self._policy.delay(attempt, failure.wait))
        raise AssertionError("unreachable")  # pragma: no cover

    def retrieve(self, question: str, k: int) -> list[Hit]:
        """Blocking twin of :meth:`aretrieve`."""
        return self.retrieve_full(question, k).hits

    def close(self) -> None:
        """Close the sync client, and the async one if its loop is idle; safe to call twice."""
        with self._client_lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()
        self._async.close()

    def _sync_client(self) -> httpx.Client:
        import httpx

        with self._client_lock:
            if self._client is None:
                self._client = httpx.Client(
                    headers=self._headers,
                    timeout=self.timeout,
                    transport=self._transport,
                    limits=_limits(),
                )
            return self._client

    # -- shared -------------------------------------------------------------------------

    def _body_failure(self, exc: BodyTooLarge | DeadlineExceeded) -> Exception:
        if isinstance(exc, DeadlineExceeded):
            return Retryable(f"timed out after {self.timeout:g} s (body too slow): {self.spec}")
        return RetrieverError(f"{exc} from {self.spec} (see --max-response-bytes)")

    def _read(self, response: httpx.Response, body: bytes) -> RetrievalOutput:
        status = response.status_code
        if status == 429 or status >= 500:
            raise Retryable(
                f"HTTP {status} from {self.spec}",
                detail=self._snippet(body),
                wait=parse_retry_after(response.headers),
            )
        if status >= 400:
            raise RetrieverError(f"HTTP {status} from {self.spec}{self._snippet(body)}")
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise RetrieverError(
                f"invalid JSON from {self.spec}: {exc}{self._snippet(body)}"
            ) from None
        return self._decode(data)

    def _decode(self, data: object) -> RetrievalOutput:
        hits = self.shape.hits_of(data, self.spec)
        if hits is not data and isinstance(data, Mapping) and not isinstance(hits, Mapping):
            # Hits found by path: keep an "answer" that sits beside them at the top.
            hits = {"hits": hits, "answer": data.get("answer")}
        return coerce_output(hits, source=self.spec, identity=self.identity)

    def _cut(self, output: RetrievalOutput, k: int) -> RetrievalOutput:
        """Only the top k are kept (and stored); said once when a service ignores k."""
        if len(output.hits) <= k:
            return output
        self.notes.say(f"{self.spec} cannot be told k; its hits were cut to k", key="cut")
        return RetrievalOutput(hits=output.hits[:k], answer=output.answer, stages=output.stages)

    def _snippet(self, body: bytes) -> str:
        """The start of an error answer, with every secret this retriever sends masked."""
        return _snippet(body, self._secrets)

    def _transport_message(self, exc: httpx.TransportError) -> str:
        # The transport's own words may quote what was sent (a header value): masked.
        return mask_known(self._transport_words(exc), self._secrets)

    def _transport_words(self, exc: httpx.TransportError) -> str:
        import httpx

        if isinstance(exc, httpx.TimeoutException):
            return f"timed out after {self.timeout:g} s: {self.spec}"
        if isinstance(exc, httpx.ConnectError) and _refused(exc):
            return f"connection refused: {self.spec}"
        if isinstance(exc, httpx.RemoteProtocolError):
            return f"{self.spec} closed the connection: {exc}"
        return f"could not reach {self.spec}: {exc or type(exc).__name__}"

    def _final(self, failure: Retryable) -> str:
        if self.retries == 0:
            return failure.message + failure.detail
        plural = "retry" if self.retries == 1 else "retries"
        return f"{failure.message} after {self.retries} {plural}{failure.detail}"


# -- what the answer means (doc ids, hits paths, presets) ---------------------------------
# Kept apart from the transport code above so the two evolve without touching each other.


def _init_identity(
    retriever: HttpRetriever, identity: DocIdentity | None, shape: HttpShape | None
) -> None:
    retriever.identity = identity or DocIdentity()
    retriever.notes = retriever.identity.notes
    retriever.shape = shape or HttpShape()
    config = dict(retriever.config)
    if retriever.identity.field:
        config["doc_field"] = retriever.identity.field
    if not retriever.shape.is_default:
        config["request"] = retriever.shape.config()
    retriever.config = config


def _limits() -> httpx.Limits:
    import httpx

    return httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_CONNECTIONS)


def _refused(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError) or "refused" in str(seen).lower():
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _snippet(body: bytes, secrets: Iterable[str] = ()) -> str:
    cut = len(body) > _BODY_SNIPPET
    text = body[:_BODY_SNIPPET].decode("utf-8", "replace")
    # Masked before spaces are folded (a secret keeps its own spacing) and, when the body
    # was cut, at its end too: half an echoed token is still a leak.
    text = mask_known(text.strip() if not cut else text.lstrip(), secrets, cut=cut)
    if not text.strip():
        return ""
    text = " ".join(text.split())
    return f": {text}{'...' if cut else ''}"
