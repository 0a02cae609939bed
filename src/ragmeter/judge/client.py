"""The one module that talks to a model: an OpenAI-compatible chat client.

Everything is explicit, HTTPX style: ``model``, ``base_url``, ``api_key``,
``timeout`` and even the HTTP ``transport`` are arguments, and nothing here reads
the environment (the CLI's config loader does, see ``judge/config.py``). There is
no default model.

What the client adds to the ``openai`` package:

- bounded concurrency (a semaphore per batch);
- retries with backoff on 429 (honouring ``Retry-After``), 5xx, timeouts and
  connection errors — our own loop, so the limits are the named constants below;
- structured output that works on many servers: try ``response_format`` of type
  ``json_schema``; when the server refuses it fall back to
  ``{"type": "json_object", "schema": ...}`` (what llama.cpp's server enforces),
  then to plain ``json_object``; parse strictly (``json.loads(strict=False)``,
  then the schema) and ask once for a repair when the reply does not parse;
- a persistent cache keyed by ``sha256(model, prompt version, inputs)``, so a
  re-run with unchanged inputs makes no request at all;
- token counts and cost per batch from a configurable price table;
- ``executor="ray"``: the requests that miss the cache run on Ray workers, each
  holding a copy of this client (no cache, no store), while the cache lookups,
  cache writes and accounting stay here, in the one process that owns the store.

The API key is held only by the ``openai`` client object: it is never part of a
cache key, a stored config, an error message or a ``repr``.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import ModuleType
from typing import Any, Generic, Protocol, TypeVar, cast

from ragmeter.errors import ConfigError, JudgeCallError
from ragmeter.executors._aio import LoopSession
from ragmeter.executors.pickling import Transient
from ragmeter.judge._schema import SchemaError, validate

__all__ = [
    "BACKOFF_FIRST_S",
    "BACKOFF_MAX_S",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TIMEOUT",
    "JudgeBatch",
    "JudgeCache",
    "JudgeCallError",
    "JudgeClient",
    "JudgeRequest",
    "JudgeResult",
    "Price",
    "Usage",
    "cache_key",
    "http_module",
]

#: Seconds one request may take before it counts as timed out (and is retried).
DEFAULT_TIMEOUT = 60.0
#: Requests in flight at once within one batch.
DEFAULT_CONCURRENCY = 4
#: Retries of one request after a 429, 5xx, timeout or connection error.
DEFAULT_MAX_RETRIES = 4
#: First backoff; each later one doubles, up to ``BACKOFF_MAX_S``.
BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 20.0
#: A server's ``Retry-After`` is honoured up to this many seconds.
RETRY_AFTER_MAX_S = 60.0
#: Completion budget of one verdict; string fields carry a ``maxLength`` to fit in it.
DEFAULT_MAX_TOKENS = 512
#: Sent when no key is configured: local servers accept anything, and the ``openai``
#: package would otherwise read ``OPENAI_API_KEY`` behind our back.
NO_KEY = "no-key"

# Structured-output modes, most to least strict. A server that rejects one gets the next.
_MODES = ("json_schema", "json_object_schema", "json_object")
_REPAIR_PROMPT = (
    "Your previous reply was not a valid JSON object for the required schema ({problem}). "
    "Reply again with only the JSON object, no other text."
)


def http_module() -> ModuleType:
    """The HTTP library the installed ``openai`` package uses (``httpx`` or its fork).

    Tests build ``http_module().MockTransport(handler)`` with it, so an injected
    transport always matches the client's.
    """
    import importlib

    import openai

    base = openai.DefaultAsyncHttpxClient.__mro__[1]
    return importlib.import_module(base.__module__.split(".")[0])


@dataclass(frozen=True, slots=True)
class Price:
    """Dollars per million tokens, prompt and completion.

    >>> Price(prompt=0.15, completion=0.60).cost(1_000_000, 500_000)
    0.45
    """

    prompt: float
    completion: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return round(
            (prompt_tokens * self.prompt + completion_tokens * self.completion) / 1_000_000, 10
        )


@dataclass
class Usage:
    """What a batch cost: requests sent, answers served from the cache, tokens, dollars.

    ``cost`` is ``None`` when the model has no entry in the price table (unknown,
    rather than a made-up zero).
    """

    requests: int = 0
    cached: int = 0
    retries: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None

    def add(self, other: Usage) -> None:
        """Count ``other`` in (its ``cost`` is not added: :meth:`JudgeClient` prices totals)."""
        self.requests += other.requests
        self.cached += other.cached
        self.retries += other.retries
        self.errors += other.errors
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "cached": self.cached,
            "retries": self.retries,
            "errors": self.errors,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": self.cost,
        }


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """One call: an id to report under, the chat messages, and the inputs that define it.

    ``inputs`` is what the cache key hashes (with the model and prompt version);
    two requests with equal inputs get the same answer from the cache.
    """

    id: str
    messages: Sequence[Mapping[str, str]]
    inputs: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class JudgeResult:
    """One call's outcome: the parsed JSON object, or an error message."""

    id: str
    value: dict[str, Any] | None = None
    error: str | None = None
    cached: bool = False


class JudgeCache(Protocol):
    """Where verdicts persist between runs (``Store`` implements it)."""

    def judge_cache_get(self, key: str) -> dict[str, Any] | None: ...

    def judge_cache_put(
        self, key: str, *, model: str, prompt_version: str, value: Mapping[str, Any]
    ) -> None: ...


def cache_key(model: str, prompt_version: str, inputs: Mapping[str, Any]) -> str:
    """The cache key of a call: sha256 over model, prompt version and inputs.

    >>> cache_key("m", "faithfulness/1", {"a": 1}) == cache_key("m", "faithfulness/1", {"a": 1})
    True
    >>> cache_key("m", "faithfulness/1", {"a": 1}) == cache_key("m", "faithfulness/2", {"a": 1})
    False
    """
    blob = json.dumps(
        {"model": model, "prompt_version": prompt_version, "inputs": inputs},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class _Retryable(Exception):
    def __init__(self, message: str, wait: float | None = None) -> None:
        super().__init__(message)
        self.wait = wait


class _Unsupported(Exception):
    """The server rejected the structured-output mode (try the next one)."""


def _retry_after(headers: Mapping[str, str] | None) -> float | None:
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return min(float(millis) / 1000.0, RETRY_AFTER_MAX_S)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = (when - datetime.now(UTC)).total_seconds()
    return min(max(seconds, 0.0), RETRY_AFTER_MAX_S)


class JudgeClient:
    """An OpenAI-compatible chat client for judges and generators.

    >>> client = JudgeClient(model="judge", base_url="http://127.0.0.1:8011/v1")
    >>> client
    JudgeClient(model='judge', base_url='http://127.0.0.1:8011/v1')

    ``transport`` (an ``http_module().AsyncBaseTransport``) replaces the network,
    e.g. with a ``MockTransport`` in tests. ``cache`` is usually a ``Store``.
    ``sleep`` is how backoff waits (tests pass a recorder).

    ``executor="ray"`` (and ``ray_address``, as for ``evaluate()``) sends the
    requests that miss the cache to Ray workers; ``concurrency`` then applies per
    worker. The client travels to the workers pickled, API key included (in
    memory, as Ray ships any argument), but never its cache: the cache is read and
    written here.
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        concurrency: int = DEFAULT_CONCURRENCY,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        transport: Any = None,
        cache: JudgeCache | None = None,
        prices: Mapping[str, Price] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        executor: str = "local",
        ray_address: str | None = None,
    ) -> None:
        from ragmeter.executors.ray import pick_executor

        if not model:
            raise ConfigError("a judge needs a model: no model is ever chosen silently")
        if not base_url:
            raise ConfigError("a judge needs a base URL (an OpenAI-compatible /v1 endpoint)")
        if concurrency < 1:
            raise ConfigError(f"judge concurrency must be at least 1, got {concurrency}")
        if timeout <= 0:
            raise ConfigError(f"judge timeout must be positive, got {timeout}")
        self.model = model
        self.base_url = base_url
        self.timeout = timeout
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self.cache = cache
        self.prices = dict(prices or {})
        self._api_key = api_key
        self._transport = transport
        self._sleep = sleep
        # Checks the choice now (an unknown executor is a config error, not a late failure).
        pick_executor(executor, ray_address=ray_address)
        self.executor = executor
        self.ray_address = ray_address
        # The first mode the server accepted; probing starts here next time.
        self._mode = 0
        self._mode_known = False

    def __repr__(self) -> str:
        return f"JudgeClient(model={self.model!r}, base_url={self.base_url!r})"

    def __getstate__(self) -> dict[str, Any]:
        # What a worker receives: no cache (a store stays with the process that opened
        # it) and the local executor (a worker never fans out again).
        state = dict(self.__dict__)
        state.update(cache=None, executor="local", ray_address=None)
        return state

    def describe(self) -> dict[str, Any]:
        """The configuration worth storing with a run — never the key."""
        return {
            "model": self.model,
            "base_url": self.base_url,
            "timeout": self.timeout,
            "concurrency": self.concurrency,
            "max_retries": self.max_retries,
            "max_tokens": self.max_tokens,
        }

    # -- sessions --------------------------------------------------------------------

    def _openai(self) -> Any:
        import openai

        http_client = openai.DefaultAsyncHttpxClient(transport=self._transport)
        return openai.AsyncOpenAI(
            api_key=self._api_key or NO_KEY,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=0,  # we retry, with our own limits and accounting
            http_client=http_client,
        )

    def _price(self, usage: Usage) -> None:
        price = self.prices.get(self.model)
        usage.cost = price.cost(usage.prompt_tokens, usage.completion_tokens) if price else None

    # -- JSON verdicts ---------------------------------------------------------------

    def judge_many(
        self,
        requests: Sequence[JudgeRequest],
        *,
        schema: Mapping[str, Any],
        prompt_version: str,
        on_result: Callable[[JudgeResult], None] | None = None,
    ) -> tuple[list[JudgeResult], Usage]:
        """Send every request (cache first), at most ``concurrency`` at a time.

        Returns one result per request, in order, and the batch's usage. A request
        that still fails after its retries is a result with ``error`` set; this
        never raises for a per-request failure.
        """
        if self.executor != "local":
            return self._judge_spread(requests, schema, prompt_version, on_result)
        return asyncio.run(
            self.ajudge_many(
                requests, schema=schema, prompt_version=prompt_version, on_result=on_result
            )
        )

    async def ajudge_many(
        self,
        requests: Sequence[JudgeRequest],
        *,
        schema: Mapping[str, Any],
        prompt_version: str,
        on_result: Callable[[JudgeResult], None] | None = None,
    ) -> tuple[list[JudgeResult], Usage]:
        """Async twin of :meth:`judge_many`."""
        if self.executor != "local":
            return await asyncio.to_thread(
                self._judge_spread, requests, schema, prompt_version, on_result
            )
        usage = Usage()
        semaphore = asyncio.Semaphore(self.concurrency)
        results: list[JudgeResult | None] = [None] * len(requests)
        api: Any = None

        async def one(index: int, request: JudgeRequest) -> None:
            nonlocal api
            key = cache_key(self.model, prompt_version, request.inputs)
            hit = self.cache.judge_cache_get(key) if self.cache is not None else None
            if hit is not None:
                usage.cached += 1
                result = JudgeResult(request.id, value=hit, cached=True)
            else:
                async with semaphore:
                    if api is None:
                        api = self._openai()
                    result = await self._judge_one(api, request, schema, usage)
                if result.value is not None and self.cache is not None:
                    self.cache.judge_cache_put(
                        key, model=self.model, prompt_version=prompt_version, value=result.value
                    )
            results[index] = result
            if on_result is not None:
                on_result(result)

        try:
            await asyncio.gather(*(one(i, r) for i, r in enumerate(requests)))
        finally:
            if api is not None:
                await api.close()
        self._price(usage)
        return [r for r in results if r is not None], usage

    def _judge_spread(
        self,
        requests: Sequence[JudgeRequest],
        schema: Mapping[str, Any],
        prompt_version: str,
        on_result: Callable[[JudgeResult], None] | None,
    ) -> tuple[list[JudgeResult], Usage]:
        """``judge_many`` through ``self.executor``: cache here, requests on the workers."""
        from ragmeter.executors.local import Outcome
        from ragmeter.executors.ray import pick_executor

        usage = Usage()
        results: list[JudgeResult | None] = [None] * len(requests)
        keys = [cache_key(self.model, prompt_version, r.inputs) for r in requests]

        def land(index: int, result: JudgeResult) -> None:
            results[index] = result
            if on_result is not None:
                on_result(result)

        misses: list[tuple[int, JudgeRequest]] = []
        for index, request in enumerate(requests):
            hit = self.cache.judge_cache_get(keys[index]) if self.cache is not None else None
            if hit is None:
                misses.append((index, request))
            else:
                usage.cached += 1
                land(index, JudgeResult(request.id, value=hit, cached=True))

        def on_outcome(
            outcome: Outcome[tuple[int, JudgeRequest], tuple[JudgeResult, Usage]],
        ) -> None:
            index, request = outcome.item
            if outcome.value is None:  # the worker itself failed (lost, killed, ...)
                usage.errors += 1
                land(index, JudgeResult(request.id, error=f"executor: {outcome.error}"))
                return
            result, part = outcome.value
            usage.add(part)
            if result.value is not None and self.cache is not None:
                self.cache.judge_cache_put(
                    keys[index], model=self.model, prompt_version=prompt_version, value=result.value
                )
            land(index, result)

        runner = pick_executor(self.executor, ray_address=self.ray_address)
        runner(
            misses,
            _RemoteJudge(self, schema),
            concurrency=self.concurrency,
            timeout=None,  # each request has its own timeout and retries
            on_outcome=on_outcome,
            is_async=True,
        )
        self._price(usage)
        return [r for r in results if r is not None], usage

    async def _judge_one(
        self, api: Any, request: JudgeRequest, schema: Mapping[str, Any], usage: Usage
    ) -> JudgeResult:
        messages = [dict(m) for m in request.messages]
        try:
            content = await self._complete(api, messages, usage, schema=schema)
            try:
                return JudgeResult(request.id, value=_parse(content, schema))
            except SchemaError as problem:
                # One repair attempt: show the model its reply and what was wrong.
                messages += [
                    {"role": "assistant", "content": content},
                    {"role": "user", "content": _REPAIR_PROMPT.format(problem=problem)},
                ]
                content = await self._complete(api, messages, usage, schema=schema)
                try:
                    return JudgeResult(request.id, value=_parse(content, schema))
                except SchemaError as again:
                    raise _Failed(f"invalid JSON after one repair attempt: {again}") from None
        except _Failed as failure:
            usage.errors += 1
            return JudgeResult(request.id, error=str(failure))

    # -- free text (generation) ------------------------------------------------------

    async def acomplete_text(
        self, messages: Sequence[Mapping[str, str]], *, usage: Usage | None = None
    ) -> str:
        """One chat completion as text, with the same retries (used by generators).

        Raises :class:`JudgeCallError` when it still fails after the retries.
        """
        api = self._openai()
        try:
            return await self._complete(api, [dict(m) for m in messages], usage or Usage())
        except _Failed as failure:
            raise JudgeCallError(str(failure)) from None
        finally:
            await api.close()

    # -- the request loop ------------------------------------------------------------

    async def _complete(
        self,
        api: Any,
        messages: list[dict[str, str]],
        usage: Usage,
        *,
        schema: Mapping[str, Any] | None = None,
    ) -> str:
        delay = BACKOFF_FIRST_S
        attempt = 0
        while True:
            mode = self._mode
            try:
                return await self._send(api, messages, usage, schema, mode)
            except _Unsupported as refused:
                if self._mode_known or mode + 1 >= len(_MODES):
                    raise _Failed(f"the server refused the request: {refused}") from None
                # Another task may have moved on already; only ever step forward.
                self._mode = max(self._mode, mode + 1)
                continue
            except _Retryable as failure:
                attempt += 1
                if attempt > self.max_retries:
                    raise _Failed(f"{failure} (gave up after {attempt} attempts)") from None
                usage.retries += 1
                wait = failure.wait if failure.wait is not None else delay
                await self._sleep(wait)
                delay = min(delay * 2, BACKOFF_MAX_S)

    async def _send(
        self,
        api: Any,
        messages: list[dict[str, str]],
        usage: Usage,
        schema: Mapping[str, Any] | None,
        mode: int,
    ) -> str:
        import openai

        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": self.max_tokens,
            "temperature": 0,
        }
        if schema is not None:
            kwargs["response_format"] = _response_format(_MODES[mode], schema)
        usage.requests += 1
        try:
            response = await api.chat.completions.create(**kwargs)
        except openai.RateLimitError as error:
            raise _Retryable(
                "HTTP 429 rate limited", _retry_after(error.response.headers)
            ) from None
        except openai.APITimeoutError:
            raise _Retryable(f"timed out after {self.timeout:g} s") from None
        except openai.APIConnectionError as error:
            raise _Retryable(f"connection failed: {error}") from None
        except openai.APIStatusError as error:
            status = error.status_code
            # A server that cannot do this structured-output mode answers 400/422/500
            # (llama.cpp: 500 for json_schema). Probe the next mode before retrying.
            if schema is not None and not self._mode_known and status in (400, 422, 500, 501):
                raise _Unsupported(f"HTTP {status}") from None
            if status >= 500:
                raise _Retryable(f"HTTP {status} from the server") from None
            raise _Failed(f"HTTP {status}: {_short(error.message)}") from None
        if schema is not None:
            self._mode_known = True
        if response.usage is not None:
            usage.prompt_tokens += response.usage.prompt_tokens or 0
            usage.completion_tokens += response.usage.completion_tokens or 0
        if not response.choices:
            raise _Retryable("the server answered with no choices")
        content = response.choices[0].message.content
        return cast(str, content or "")


class _RemoteJudge(Transient):
    """One request as an executor worker runs it, with a client copy that has no cache.

    Pickled once per worker. A worker runs each batch on a new event loop, and a
    session (an ``openai.AsyncOpenAI``, ~30 ms of CPU to build) belongs to the loop
    that opened it, so one session is opened per loop and closed when that loop ends.
    """

    _TRANSIENT = {"_sessions": lambda judge: judge._new_sessions()}

    def __init__(self, client: JudgeClient, schema: Mapping[str, Any]) -> None:
        self.client = client
        self.schema = dict(schema)
        self._sessions = self._new_sessions()

    def _new_sessions(self) -> LoopSession[Any]:
        async def close(api: Any) -> None:
            await api.close()

        return LoopSession(self.client._openai, close)

    async def __call__(self, job: tuple[int, JudgeRequest]) -> tuple[JudgeResult, Usage]:
        usage = Usage()
        api = await self._sessions.get()
        result = await self.client._judge_one(api, job[1], self.schema, usage)
        return result, usage


class _Failed(Exception):
    """A request that will not succeed (after retries, or refused outright)."""


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _response_format(mode: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": "verdict", "schema": dict(schema), "strict": True},
        }
    if mode == "json_object_schema":
        return {"type": "json_object", "schema": dict(schema)}
    return {"type": "json_object"}


def _parse(content: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """Strict parse: one JSON object (raw newlines in strings tolerated), then the schema."""
    text = content.strip()
    if text.startswith("```"):
        # Models without enforced output like to fence their JSON.
        text = text.strip("`")
        text = text[4:] if text.lower().startswith("json") else text
    try:
        value = json.loads(text, strict=False)
    except json.JSONDecodeError as error:
        raise SchemaError(f"not JSON ({error.msg} at character {error.pos})") from None
    checked: dict[str, Any] = validate(value, schema)
    return checked


V = TypeVar("V")


@dataclass
class JudgeBatch(Generic[V]):
    """What a judge hands back: verdicts and errors by id, and what it cost."""

    verdicts: dict[str, V] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    judge: dict[str, Any] = field(default_factory=dict)

    @property
    def coverage(self) -> float:
        """Share of cases with a verdict (errors stay in the denominator)."""
        total = len(self.verdicts) + len(self.errors)
        return len(self.verdicts) / total if total else 0.0
