"""Issue 17.4: `--repeats N` combines repeats by one rule on every executor.

The executor path (``judge/_spread.py``) is exercised here without Ray: it runs its jobs
through the client's executor object, and for a client on the local executor that is
``run_concurrently``, so every repeat is a concurrent job exactly as on Ray workers. The
Ray runs themselves are in ``test_ray_executor.py`` (slow).
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Sequence
from typing import Any

import pytest

from _openai_server import serve_chat
from ragmeter.errors import ConfigError
from ragmeter.executors.base import Executor, LocalExecutor
from ragmeter.judge import JudgeClient
from ragmeter.judge._claim_checks import once
from ragmeter.judge._spread import judge_spread
from ragmeter.judge._types import JudgeResult, combine_repeats, request_key, to_batch
from ragmeter.judge.faithfulness import FaithfulnessCase, FaithfulnessVerdict, _request
from ragmeter.judge.prompts import FAITHFULNESS
from ragmeter.store import Store


def test_combine_repeats_one_rule() -> None:
    """Issue 17.4: the combining rule both executors call: one try is kept as it is; N
    tries keep every value in repeat order, are cached only when all were; any failed
    repeat makes the request an error that says how many of N failed."""
    one = JudgeResult("q", value={"v": 1}, cached=True)
    two = JudgeResult("q", value={"v": 2})
    bad = JudgeResult("q", error="HTTP 500")
    assert combine_repeats("q", [one]) is one
    assert combine_repeats("q", [bad]) is bad
    assert combine_repeats("q", [one, two, one]) == JudgeResult(
        "q", value={"v": 1}, cached=False, values=({"v": 1}, {"v": 2}, {"v": 1})
    )
    assert combine_repeats("q", [two, one]).value == {"v": 2}  # the first repeat's value
    assert combine_repeats("q", [one, one]).cached is True
    assert combine_repeats("q", [one, bad, two, bad]) == JudgeResult(
        "q", error="2 of 4 repeats failed: HTTP 500"
    )
    assert (
        combine_repeats("q", [one, JudgeResult("q")]).error == "1 of 2 repeats failed: no verdict"
    )


def test_repeats_with_ray_are_accepted_and_copies_keep_the_executor(store: Store) -> None:
    """Issue 17.4: `JudgeClient(repeats=3, executor="ray")` is no longer refused; a copy in
    this process (`once(client)` for claim extraction, the claim checks' sender) keeps the
    cache and the executor, so claims on Ray do not quietly run locally; what a worker gets
    (the pickle) still has no cache and the local executor."""
    client = JudgeClient(
        model="m", base_url="http://127.0.0.1:1/v1", repeats=3, executor="ray", cache=store
    )
    twin, single = copy.copy(client), once(client)
    assert (twin.executor.name, twin.cache, twin.repeats) == ("ray", store, 3)
    assert (single.executor.name, single.cache, single.repeats) == ("ray", store, 1)
    assert client.repeats == 3  # once() changed the copy only
    shipped = pickle.loads(pickle.dumps(client))
    assert (shipped.executor, shipped.cache, shipped.repeats) == (LocalExecutor(), None, 3)


def _cases() -> list[FaithfulnessCase]:
    # "wobbly" answers Widget N's second sight inverted (N % 5 == 1) or as prose (N % 7 == 2).
    context = tuple(f"Widget {n} does task {n}." for n in range(12))
    return [
        FaithfulnessCase(f"a{n}", f"what does widget {n} do", context, answer)
        for n in range(12)
        for answer in [f"Widget {n} does task {n}." if n % 2 else f"Widget {n} bakes bread."]
    ]


def test_executor_path_combines_repeats_as_the_local_path() -> None:
    """Issue 17.4: through the executor path, `repeats=3` gives the local path's verdicts,
    votes, stability, unstable list and errors ("1 of 3 repeats failed"), the same usage,
    one `on_result` per request (when its last repeat lands) and `values` in repeat order
    (each equal to its repeat's cache entry); the second pass sends nothing but the failed
    repeats, one request each."""
    requests = [_request(case) for case in _cases()]
    failing = {"a2", "a9"}
    unstable = {"a1", "a6", "a11"}

    def run(path: str, store: Store, server: Any) -> tuple[list[JudgeResult], Any, list[str]]:
        client = JudgeClient(model="m", base_url=server.base_url, repeats=3, cache=store)
        landed: list[str] = []

        def seen(result: JudgeResult) -> None:
            landed.append(result.id)

        schema, version = FAITHFULNESS.schema, FAITHFULNESS.version
        if path == "spread":
            return (*judge_spread(client, requests, schema, version, seen), landed)
        got = client.judge_many(requests, schema=schema, prompt_version=version, on_result=seen)
        return (*got, landed)

    def batch(results: list[JudgeResult], usage: Any) -> Any:
        return to_batch(
            results,
            usage,
            judge={},
            parse=FaithfulnessVerdict.from_dict,
            vote=lambda v: v.supported,
        )

    with (
        serve_chat("wobbly") as here,
        serve_chat("wobbly") as there,
        Store.memory() as local_store,
        Store.memory() as spread_store,
    ):
        local, local_usage, local_landed = run("local", local_store, here)
        spread, spread_usage, spread_landed = run("spread", spread_store, there)
        # Three repeats per request, and one repair for each failed repeat.
        assert len(here.requests) == len(there.requests) == 3 * len(requests) + len(failing)
        assert spread_usage == local_usage
        assert spread_usage.requests == len(there.requests) and spread_usage.errors == 2
        assert sorted(spread_landed) == sorted(local_landed) == sorted(r.id for r in requests)
        assert [r.id for r in spread] == [r.id for r in local]
        for ours, theirs in zip(spread, local, strict=True):
            assert ours.error == theirs.error and ours.cached is theirs.cached is False
            key = lambda value: repr(sorted(value.items()))  # noqa: E731
            assert sorted(ours.values, key=key) == sorted(theirs.values, key=key)
        errors = {r.id: r.error for r in spread if r.error}
        assert set(errors) == failing
        assert all(
            e and e.startswith("1 of 3 repeats failed: invalid JSON") for e in errors.values()
        )
        a, b = batch(spread, spread_usage), batch(local, local_usage)
        assert a.verdicts == b.verdicts and a.errors == b.errors and a.stability == b.stability
        assert {i for i, s in a.stability.items() if s.unstable} == unstable
        for request, result in zip(requests, spread, strict=True):
            for repeat, value in enumerate(result.values):
                entry = request_key("m", FAITHFULNESS.version, request.inputs, repeat=repeat)
                assert spread_store.judge_cache_get(entry) == value

        before = len(there.requests)
        again, usage, landed = run("spread", spread_store, there)
        # Only the failed repeat of each failing request is asked again (now its 4th sight).
        assert len(there.requests) - before == usage.requests == len(failing)
        assert usage.cached == 3 * len(requests) - len(failing) and len(landed) == len(requests)
        assert not any(r.error for r in again)
        assert all(r.cached for r in again if r.id not in failing)


class _Counting:
    """An executor of our own (the ``Executor`` protocol): this process's threads, each
    item written down, so the test sees the judge's jobs go through it."""

    def __init__(self) -> None:
        self.jobs: list[Any] = []

    @property
    def name(self) -> str:
        return "counting"

    def run(self, items: Sequence[Any], work: Any, **options: Any) -> None:
        self.jobs.extend(items)
        LocalExecutor().run(items, work, **options)


def test_the_judge_takes_an_executor_object() -> None:
    """Issue 25: the judge client takes an `Executor` object as `evaluate()` does (names
    become objects at the boundary): its requests, each repeat a job, go through that
    object and give the local path's verdicts; a name it does not know is a config error."""
    requests = [_request(case) for case in _cases()[:4]]
    schema, version = FAITHFULNESS.schema, FAITHFULNESS.version
    counting = _Counting()
    assert isinstance(counting, Executor)
    with serve_chat("ok") as server:
        here = JudgeClient(model="m", base_url=server.base_url, repeats=2)
        there = JudgeClient(model="m", base_url=server.base_url, repeats=2, executor=counting)
        assert here.executor == LocalExecutor() and there.executor is counting
        local, _ = here.judge_many(requests, schema=schema, prompt_version=version)
        spread, _ = there.judge_many(requests, schema=schema, prompt_version=version)
    assert sorted((index, repeat) for index, repeat, _ in counting.jobs) == [
        (i, r) for i in range(len(requests)) for r in range(2)
    ]
    assert [r.values for r in spread] == [r.values for r in local]
    with pytest.raises(ConfigError, match="unknown executor 'spark'"):
        JudgeClient(model="m", base_url=server.base_url, executor="spark")
