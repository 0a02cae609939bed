"""The judge on an executor other than the local one (``executor="ray"``): cache here, requests on the workers.

Each ``(request, repeat)`` pair is one job (issue 17.4): its cache key is the repeat's
(:func:`~ragmeter.judge._types.request_key` with ``repeat=r``), looked up and written here,
and only the pairs that miss the cache run on workers, each holding a copy of the client
(no cache, no store). Accounting stays here too, in the one process that owns the store.
A request's repeats are gathered in repeat order and combined by the rule the local path
uses (:func:`~ragmeter.judge._types.combine_repeats`); ``on_result`` fires once per
request, when its last repeat lands.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from ragmeter.executors._aio import LoopSession
from ragmeter.executors.base import Executor
from ragmeter.executors.pickling import Transient
from ragmeter.judge._types import (
    JudgeCache,
    JudgeRequest,
    JudgeResult,
    Usage,
    combine_repeats,
    request_key,
)


class JudgeClient(Protocol):
    """What the spread reads of a ``client.JudgeClient`` (a protocol: the client calls this
    module, and this module names no class of the client's, so there is no import circle)."""

    model: str
    temperature: float
    seed: int | None
    repeats: int
    concurrency: int
    cache: JudgeCache | None
    executor: Executor

    def _price(self, usage: Usage) -> None: ...
    def _openai(self) -> Any: ...
    async def _judge_one(
        self, api: Any, request: JudgeRequest, schema: Mapping[str, Any], usage: Usage
    ) -> JudgeResult: ...


__all__ = ["judge_spread"]

# (request position, repeat index, request): one job on a worker.
Job = tuple[int, int, JudgeRequest]


def judge_spread(
    client: JudgeClient,
    requests: Sequence[JudgeRequest],
    schema: Mapping[str, Any],
    prompt_version: str,
    on_result: Callable[[JudgeResult], None] | None,
) -> tuple[list[JudgeResult], Usage]:
    """``client.judge_many`` through ``client.executor``, every repeat its own job."""
    from ragmeter.executors.local import Outcome

    usage = Usage()
    repeats = client.repeats
    results: list[JudgeResult | None] = [None] * len(requests)
    tries: list[list[JudgeResult | None]] = [[None] * repeats for _ in requests]
    waiting = [repeats] * len(requests)  # repeats of each request not landed yet
    cache = client.cache

    def key(request: JudgeRequest, repeat: int) -> str:
        return request_key(
            client.model,
            prompt_version,
            request.inputs,
            temperature=client.temperature,
            seed=client.seed,
            repeat=repeat,
        )

    def land(index: int, repeat: int, result: JudgeResult) -> None:
        tries[index][repeat] = result
        waiting[index] -= 1
        if waiting[index]:
            return
        done = [t for t in tries[index] if t is not None]
        results[index] = combined = combine_repeats(requests[index].id, done)
        if on_result is not None:
            on_result(combined)

    misses: list[Job] = []
    for index, request in enumerate(requests):
        for repeat in range(repeats):
            hit = cache.judge_cache_get(key(request, repeat)) if cache is not None else None
            if hit is None:
                misses.append((index, repeat, request))
            else:
                usage.cached += 1
                land(index, repeat, JudgeResult(request.id, value=hit, cached=True))

    def on_outcome(outcome: Outcome[Job, tuple[JudgeResult, Usage]]) -> None:
        index, repeat, request = outcome.item
        if outcome.value is None:  # the worker itself failed (lost, killed, ...)
            usage.errors += 1
            land(index, repeat, JudgeResult(request.id, error=f"executor: {outcome.error}"))
            return
        result, part = outcome.value
        usage.add(part)
        if result.value is not None and cache is not None:
            cache.judge_cache_put(
                key(request, repeat),
                model=client.model,
                prompt_version=prompt_version,
                value=result.value,
            )
        land(index, repeat, result)

    client.executor.run(
        misses,
        _RemoteJudge(client, schema),
        concurrency=client.concurrency,
        timeout=None,  # each request has its own timeout and retries
        on_outcome=on_outcome,
        is_async=True,
    )
    client._price(usage)
    return [r for r in results if r is not None], usage


class _RemoteJudge(Transient):
    """One repeat of a request as an executor worker runs it, with a client copy that has no
    cache.

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

    async def __call__(self, job: Job) -> tuple[JudgeResult, Usage]:
        usage = Usage()
        api = await self._sessions.get()
        result = await self.client._judge_one(api, job[2], self.schema, usage)
        return result, usage
