"""The one module that talks to a model: an OpenAI-compatible chat client.

Everything is explicit, HTTPX style: ``model``, ``base_url``, ``api_key``,
``timeout`` and even the HTTP ``transport`` are arguments, and nothing here reads
the environment (the CLI's config loader does, see ``judge/config.py``). There is
no default model.

What the client adds to the ``openai`` package:

- bounded concurrency (a semaphore per batch);
- retries with backoff on 429 (honouring ``Retry-After``), 5xx, timeouts and
  connection errors — our own loop, with the one policy every HTTP caller of
  ragmeter shares (``ragmeter._http``: ``DEFAULT_RETRIES``, ``BACKOFF_FIRST_S``…);
- structured output that works on many servers: try ``response_format`` of type
  ``json_schema``; when the server refuses it fall back to
  ``{"type": "json_object", "schema": ...}`` (what llama.cpp's server enforces),
  then to plain ``json_object``; parse strictly (``json.loads(strict=False)``,
  then the schema) and ask once for a repair when the reply does not parse;
- a persistent cache keyed by ``sha256(model, prompt version, inputs)``, so a
  re-run with unchanged inputs makes no request at all;
- token counts and cost per batch from a configurable price table;
- an executor other than the local one (``executor="ray"``, ``RayExecutor(address)``):
  the requests (each repeat apart) that miss the cache run on its (Ray's) workers, each holding a copy of this client (no cache, no store), while the cache
  lookups, cache writes and accounting stay here, in the one process that owns the store.

The API key is held only by the ``openai`` client object: it is never part of a
cache key, a stored config, an error message or a ``repr``.

The judge API on top of the client, by use:

- verdicts: :func:`~ragmeter.judge.faithfulness.judge_faithfulness`,
  :func:`~ragmeter.judge.relevance.judge_relevance` (batches via :func:`to_batch`);
- free text (generators): :meth:`JudgeClient.acomplete_text` / :meth:`JudgeClient.complete_text`;
- one user prompt for a pipeline stage (LLM re-ranker, query expansion):
  :func:`ragmeter.judge.chat.chat`;
- versioned prompts for gold generation: :func:`ragmeter.judge.prompting.from_client`.

The parts live apart: values and the cache key in ``_types``, structured output in
``_structured``, the request loop in ``_transport``, the executor fan-out in ``_spread``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, TypeVar

from ragmeter._http import (
    BACKOFF_FIRST_S,
    BACKOFF_MAX_S,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_RETRIES,
)
from ragmeter._redact import redact_url
from ragmeter.errors import ConfigError, JudgeCallError
from ragmeter.executors.base import Executor, LocalExecutor
from ragmeter.judge._spread import judge_spread
from ragmeter.judge._transport import ChatSession, Failed, http_module
from ragmeter.judge._types import (
    JudgeBatch,
    JudgeCache,
    JudgeRequest,
    JudgeResult,
    Price,
    Usage,
    cache_key,
    combine_repeats,
    request_key,
    to_batch,
)

__all__ = [
    "BACKOFF_FIRST_S",
    "BACKOFF_MAX_S",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TEMPERATURE",
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
    "to_batch",
]

#: Seconds one request may take before it counts as timed out (and is retried).
DEFAULT_TIMEOUT = 60.0
#: Requests in flight at once within one batch.
DEFAULT_CONCURRENCY = 4
#: Retries of one request after a 429, 5xx, timeout or connection error (the shared policy).
DEFAULT_MAX_RETRIES = DEFAULT_RETRIES
#: Completion budget of one verdict; string fields carry a ``maxLength`` to fit in it.
DEFAULT_MAX_TOKENS = 512
#: Sampling temperature of every request (0: as repeatable as the server allows).
DEFAULT_TEMPERATURE = 0.0
T = TypeVar("T")


class JudgeClient(ChatSession):
    """An OpenAI-compatible chat client for judges and generators.

    >>> client = JudgeClient(model="judge", base_url="http://127.0.0.1:8011/v1")
    >>> client
    JudgeClient(model='judge', base_url='http://127.0.0.1:8011/v1')

    Each reply is read as a stream, at most ``max_response_bytes`` after
    decompression (default 32 MiB, as every HTTP body) and within ``timeout`` seconds
    per attempt; a larger reply fails that question with a message naming the limit.

    ``transport`` (an ``http_module().AsyncBaseTransport``) replaces the network,
    e.g. with a ``MockTransport`` in tests. ``cache`` is usually a ``Store``.
    ``sleep`` is how backoff waits (tests pass a recorder).

    ``executor`` is an :class:`~ragmeter.executors.base.Executor` (``RayExecutor(address)``,
    your own) or its name, ``"local"`` / ``"ray"`` (with ``ray_address``, as for
    ``evaluate()``), turned into one here. Any but the local one gets the
    requests that miss the cache (Ray: on its workers), each repeat of a request as its own
    job (``repeats``, cached per repeat); ``concurrency`` then applies per worker.
    The client travels to the workers pickled, API key included (in memory, as Ray
    ships any argument), but never its cache: the cache is read and written here.
    ``copy.copy(client)`` is a copy in this process and keeps both.
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
        temperature: float = DEFAULT_TEMPERATURE,
        seed: int | None = None,
        repeats: int = 1,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        transport: Any = None,
        cache: JudgeCache | None = None,
        prices: Mapping[str, Price] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        executor: str | Executor = "local",
        ray_address: str | None = None,
    ) -> None:
        from ragmeter.executors.ray import executor_for

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
        if repeats < 1:
            raise ConfigError(f"judge repeats must be at least 1, got {repeats}")
        self.repeats = repeats
        if max_response_bytes < 1:
            raise ConfigError(f"max_response_bytes must be at least 1, got {max_response_bytes}")
        self.max_response_bytes = max_response_bytes
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.cache = cache
        self.prices = dict(prices or {})
        self._api_key = api_key
        self._transport = transport
        self._sleep = sleep
        # A name becomes an object here (an unknown one is a config error, not a late failure).
        self.executor: Executor = executor_for(executor, ray_address=ray_address)
        # The first mode the server accepted; probing starts here next time.
        self._mode = 0
        self._mode_known = False

    def __repr__(self) -> str:
        return f"JudgeClient(model={self.model!r}, base_url={redact_url(self.base_url)!r})"

    def __getstate__(self) -> dict[str, Any]:
        # What a worker receives: no cache (a store stays with the process that opened
        # it) and the local executor (a worker never fans out again).
        state = dict(self.__dict__)
        state.update(cache=None, executor=LocalExecutor())
        return state

    def __copy__(self) -> JudgeClient:
        # A copy in this process keeps everything, cache and executor included
        # (``__getstate__`` is what a worker gets, and is not a copy).
        twin = type(self).__new__(type(self))
        twin.__dict__.update(self.__dict__)
        return twin

    def describe(self) -> dict[str, Any]:
        """The configuration worth storing with a run — never the key, nor a URL's password."""
        return {
            "model": self.model,
            "base_url": redact_url(self.base_url),
            "timeout": self.timeout,
            "concurrency": self.concurrency,
            "max_retries": self.max_retries,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "seed": self.seed,
            "repeats": self.repeats,
        }

    def _spreads(self) -> bool:
        """Whether requests go through the executor (any but this process's own loop)."""
        return not isinstance(self.executor, LocalExecutor)

    # -- accounting ------------------------------------------------------------------

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
        if self._spreads():
            return judge_spread(self, requests, schema, prompt_version, on_result)
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
        if self._spreads():
            return await asyncio.to_thread(
                judge_spread, self, requests, schema, prompt_version, on_result
            )
        usage = Usage()
        semaphore = asyncio.Semaphore(self.concurrency)
        results: list[JudgeResult | None] = [None] * len(requests)
        api: Any = None

        async def attempt(request: JudgeRequest, repeat: int) -> JudgeResult:
            nonlocal api
            key = request_key(
                self.model,
                prompt_version,
                request.inputs,
                temperature=self.temperature,
                seed=self.seed,
                repeat=repeat,
            )
            hit = self.cache.judge_cache_get(key) if self.cache is not None else None
            if hit is not None:
                usage.cached += 1
                return JudgeResult(request.id, value=hit, cached=True)
            async with semaphore:
                if api is None:
                    api = self._openai()
                result = await self._judge_one(api, request, schema, usage)
            if result.value is not None and self.cache is not None:
                self.cache.judge_cache_put(
                    key, model=self.model, prompt_version=prompt_version, value=result.value
                )
            return result

        async def one(index: int, request: JudgeRequest) -> None:
            tries = [await attempt(request, repeat) for repeat in range(self.repeats)]
            results[index] = result = combine_repeats(request.id, tries)
            if on_result is not None:
                on_result(result)

        try:
            await asyncio.gather(*(one(i, r) for i, r in enumerate(requests)))
        finally:
            if api is not None:
                await api.close()
        self._price(usage)
        return [r for r in results if r is not None], usage

    # -- free text (generation) ------------------------------------------------------

    async def acomplete_text(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        usage: Usage | None = None,
        json_object: bool = False,
    ) -> str:
        """One chat completion as text, with the same retries (used by generators).

        ``json_object=True`` asks for ``response_format={"type": "json_object"}``
        (the text is then a JSON object on servers that honour it; parse it yourself).
        Raises :class:`JudgeCallError` when it still fails after the retries.
        """
        api = self._openai()
        try:
            return await self._complete(
                api, [dict(m) for m in messages], usage or Usage(), json_object=json_object
            )
        except Failed as failure:
            raise JudgeCallError(str(failure)) from None
        finally:
            await api.close()

    def complete_text(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        usage: Usage | None = None,
        json_object: bool = False,
    ) -> str:
        """Blocking twin of :meth:`acomplete_text`; works inside a running event loop too.

        >>> client = JudgeClient(model="m", base_url="http://127.0.0.1:8011/v1")
        >>> client.complete_text([{"role": "user", "content": "hi"}])  # doctest: +SKIP
        'Hello!'
        """
        return _run(self.acomplete_text(messages, usage=usage, json_object=json_object))


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from sync code, even under a running loop (a thread then)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as error:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = error

    thread = threading.Thread(target=target, name="ragmeter-judge-call")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value
