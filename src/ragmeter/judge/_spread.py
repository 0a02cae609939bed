"""The judge on an executor (``executor="ray"``): cache here, requests on the workers.

The requests that miss the cache run on workers, each holding a copy of the client
(no cache, no store); cache lookups, cache writes and accounting stay in the one
process that owns the store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragmeter.executors._aio import LoopSession
from ragmeter.executors.pickling import Transient
from ragmeter.judge._types import JudgeRequest, JudgeResult, Usage, request_key

if TYPE_CHECKING:
    from ragmeter.judge.client import JudgeClient

__all__ = ["judge_spread"]


def judge_spread(
    client: JudgeClient,
    requests: Sequence[JudgeRequest],
    schema: Mapping[str, Any],
    prompt_version: str,
    on_result: Callable[[JudgeResult], None] | None,
) -> tuple[list[JudgeResult], Usage]:
    """``client.judge_many`` through ``client.executor``."""
    from ragmeter.executors.local import Outcome
    from ragmeter.executors.ray import pick_executor

    usage = Usage()
    results: list[JudgeResult | None] = [None] * len(requests)
    keys = [
        request_key(
            client.model,
            prompt_version,
            r.inputs,
            temperature=client.temperature,
            seed=client.seed,
        )
        for r in requests
    ]
    cache = client.cache

    def land(index: int, result: JudgeResult) -> None:
        results[index] = result
        if on_result is not None:
            on_result(result)

    misses: list[tuple[int, JudgeRequest]] = []
    for index, request in enumerate(requests):
        hit = cache.judge_cache_get(keys[index]) if cache is not None else None
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
        if result.value is not None and cache is not None:
            cache.judge_cache_put(
                keys[index], model=client.model, prompt_version=prompt_version, value=result.value
            )
        land(index, result)

    runner = pick_executor(client.executor, ray_address=client.ray_address)
    runner(
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
