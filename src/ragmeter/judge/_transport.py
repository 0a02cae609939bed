"""The request loop under :class:`~ragmeter.judge.client.JudgeClient`: one chat call,
retried by the shared policy of :mod:`ragmeter._http`, with structured-output probing.

``openai`` is imported here on first use only, so ``import ragmeter.judge`` stays
free of HTTP libraries.

Replies are read the way :mod:`ragmeter._http` reads every body (issue 19.4): the
``openai`` package would read a reply whole, so its HTTP client gets a
:func:`bounded_transport` that streams each body, decompresses it here, stops at
``max_bytes`` after decompression and at a deadline per attempt (a trickled body),
and hands ``openai`` the bounded bytes.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import ModuleType
from typing import Any, cast

from ragmeter._http import (
    ACCEPT_ENCODING,
    BodyTooLarge,
    DeadlineExceeded,
    Retryable,
    RetryPolicy,
    aread_body,
    parse_retry_after,
)
from ragmeter._redact import mask_known
from ragmeter.judge._structured import (
    MODES,
    REPAIR_PROMPT,
    SchemaError,
    parse_reply,
    response_format,
)
from ragmeter.judge._types import JudgeRequest, JudgeResult, Usage

__all__ = ["NO_KEY", "ChatSession", "Failed", "bounded_transport", "http_module"]

#: Sent when no key is configured: local servers accept anything, and the ``openai``
#: package would otherwise read ``OPENAI_API_KEY`` behind our back.
NO_KEY = "no-key"


def http_module() -> ModuleType:
    """The HTTP library the installed ``openai`` package uses (``httpx`` or its fork).

    Tests build ``http_module().MockTransport(handler)`` with it, so an injected
    transport always matches the client's.
    """
    import openai

    base = openai.DefaultAsyncHttpxClient.__mro__[1]
    return importlib.import_module(base.__module__.split(".")[0])


# Headers that described the body on the wire, not the decoded bytes handed on.
_WIRE_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


def bounded_transport(inner: Any, *, max_bytes: int, timeout: float) -> Any:
    """An async transport over ``inner`` whose response bodies are bounded.

    Each body is streamed and decompressed here (gzip and deflate only, so
    ``Accept-Encoding`` says just that), never past ``max_bytes`` decoded bytes
    (:class:`~ragmeter._http.BodyTooLarge`) and never past ``timeout`` seconds from
    the start of the attempt (:class:`~ragmeter._http.DeadlineExceeded`). ``inner``
    is ``None`` for the network, or e.g. a ``MockTransport``.

    >>> bounded_transport(None, max_bytes=1024, timeout=5.0).max_bytes
    1024
    """
    mod = http_module()

    class BoundedTransport(mod.AsyncBaseTransport):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            self.inner = inner if inner is not None else mod.AsyncHTTPTransport()
            self.max_bytes = max_bytes
            self.timeout = timeout

        async def handle_async_request(self, request: Any) -> Any:
            deadline = time.monotonic() + self.timeout
            request.headers["Accept-Encoding"] = ACCEPT_ENCODING
            response = await self.inner.handle_async_request(request)
            try:
                body = await aread_body(response, max_bytes=self.max_bytes, deadline=deadline)
            finally:
                await response.aclose()
            headers = [
                (name, value)
                for name, value in response.headers.multi_items()
                if name.lower() not in _WIRE_HEADERS
            ]
            return mod.Response(
                response.status_code,
                headers=headers,
                content=body,
                request=request,
                extensions=response.extensions,
            )

        async def aclose(self) -> None:
            await self.inner.aclose()

    return BoundedTransport()


class Failed(Exception):
    """A request that will not succeed (after retries, or refused outright)."""


class _Unsupported(Exception):
    """The server rejected the structured-output mode (try the next one)."""


class ChatSession:
    """The sending half of the judge client (its settings live on the client).

    Subclasses set ``model``, ``base_url``, ``timeout``, ``max_retries``,
    ``max_tokens``, ``_api_key``, ``_transport`` and ``_sleep``; the mode probe state
    (``_mode``, ``_mode_known``) is shared by every request of the client.
    """

    model: str
    base_url: str
    timeout: float
    max_retries: int
    max_tokens: int
    temperature: float
    seed: int | None
    max_response_bytes: int
    _api_key: str | None
    _transport: Any
    _sleep: Callable[[float], Awaitable[None]]
    _mode: int
    _mode_known: bool

    def _openai(self) -> Any:
        """A new ``openai.AsyncOpenAI`` session (close it in the loop that used it)."""
        import openai

        transport = bounded_transport(
            self._transport, max_bytes=self.max_response_bytes, timeout=self.timeout
        )
        http_client = openai.DefaultAsyncHttpxClient(transport=transport)
        return openai.AsyncOpenAI(
            api_key=self._api_key or NO_KEY,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=0,  # we retry, with the shared policy and our accounting
            http_client=http_client,
        )

    async def _judge_one(
        self, api: Any, request: JudgeRequest, schema: Mapping[str, Any], usage: Usage
    ) -> JudgeResult:
        """One verdict: send, parse, ask once for a repair; failures become the result."""
        messages = [dict(m) for m in request.messages]
        try:
            content = await self._complete(api, messages, usage, schema=schema)
            try:
                return JudgeResult(request.id, value=parse_reply(content, schema))
            except SchemaError as problem:
                # One repair attempt: show the model its reply and what was wrong.
                messages += [
                    {"role": "assistant", "content": content},
                    {"role": "user", "content": REPAIR_PROMPT.format(problem=problem)},
                ]
                content = await self._complete(api, messages, usage, schema=schema)
                try:
                    return JudgeResult(request.id, value=parse_reply(content, schema))
                except SchemaError as again:
                    raise Failed(f"invalid JSON after one repair attempt: {again}") from None
        except Failed as failure:
            usage.errors += 1
            return JudgeResult(request.id, error=str(failure))

    async def _complete(
        self,
        api: Any,
        messages: list[dict[str, str]],
        usage: Usage,
        *,
        schema: Mapping[str, Any] | None = None,
        json_object: bool = False,
    ) -> str:
        """The assistant's text, after retries; raises :class:`Failed`."""
        policy = RetryPolicy(retries=self.max_retries)
        attempt = 0
        while True:
            mode = self._mode
            try:
                return await self._send(api, messages, usage, schema, mode, json_object)
            except _Unsupported as refused:
                if self._mode_known or mode + 1 >= len(MODES):
                    raise Failed(f"the server refused the request: {refused}") from None
                # Another task may have moved on already; only ever step forward.
                self._mode = max(self._mode, mode + 1)
                continue
            except Retryable as failure:
                if attempt >= policy.retries:
                    raise Failed(f"{failure} (gave up after {attempt + 1} attempts)") from None
                usage.retries += 1
                await self._sleep(policy.delay(attempt, failure.wait))
                attempt += 1

    async def _send(
        self,
        api: Any,
        messages: list[dict[str, str]],
        usage: Usage,
        schema: Mapping[str, Any] | None,
        mode: int,
        json_object: bool = False,
    ) -> str:
        import openai

        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }
        if self.seed is not None:
            kwargs["seed"] = self.seed
        if schema is not None:
            kwargs["response_format"] = response_format(MODES[mode], schema)
        elif json_object:
            kwargs["response_format"] = {"type": "json_object"}
        usage.requests += 1
        try:
            response = await api.chat.completions.create(**kwargs)
        except BodyTooLarge as error:  # never retried: the same request gets the same reply
            raise Failed(f"the judge's reply was refused: {error}") from None
        except DeadlineExceeded:
            raise Retryable(f"the reply did not finish within {self.timeout:g} s") from None
        except openai.RateLimitError as error:
            wait = parse_retry_after(error.response.headers)
            raise Retryable("HTTP 429 rate limited", wait=wait) from None
        except openai.APITimeoutError:
            raise Retryable(f"timed out after {self.timeout:g} s") from None
        except openai.APIConnectionError as error:
            raise Retryable(f"connection failed: {error}") from None
        except openai.APIStatusError as error:
            status = error.status_code
            # A server that cannot do this structured-output mode answers 400/422/500
            # (llama.cpp: 500 for json_schema). Probe the next mode before retrying.
            if schema is not None and not self._mode_known and status in (400, 422, 500, 501):
                raise _Unsupported(f"HTTP {status}") from None
            if status >= 500:
                raise Retryable(f"HTTP {status} from the server") from None
            secrets = [self._api_key] if self._api_key else []
            raise Failed(f"HTTP {status}: {_short(error.message, secrets)}") from None
        if schema is not None:
            self._mode_known = True
        if response.usage is not None:
            usage.prompt_tokens += response.usage.prompt_tokens or 0
            usage.completion_tokens += response.usage.completion_tokens or 0
        if not response.choices:
            raise Retryable("the server answered with no choices")
        content = response.choices[0].message.content
        return cast(str, content or "")


def _short(text: str, secrets: Sequence[str] = (), limit: int = 200) -> str:
    # A server may echo the key it was sent (issue 27.4): masked before anything is cut.
    text = " ".join(mask_known(str(text), secrets).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
