"""The Ray executor gives the local executor's results (issue 9, item 2).

A real local Ray (``ray.init(num_cpus=2)``), started once for this module: Ray
takes several seconds to start, so these tests are few and marked slow. Work
functions are defined inside the tests so that Ray pickles them by value (the
workers cannot import test modules).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Iterator
from typing import Any

import pytest

import ragmeter
from ragmeter._executor import Outcome, run_concurrently
from ragmeter.errors import ConfigError
from ragmeter.goldset import GoldSet
from ragmeter.store import Store


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ragmeter[ray]')")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="warning")
    try:
        yield ray
    finally:
        ray.shutdown()


def outcomes(runner: Any, items: list[Any], work: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
    got: list[Outcome[Any, Any]] = []
    runner(items, work, on_outcome=got.append, **kwargs)
    assert all(o.error is not None or o.elapsed_ms is not None for o in got)
    return sorted((repr(o.item), o.value, o.error) for o in got)


@pytest.mark.slow
def test_same_outcomes_as_local_executor(local_ray: Any) -> None:
    """Issue 9: values, error rows and timeouts match run_concurrently, item for item."""
    from ragmeter._ray_executor import run_on_ray

    def work(x: int) -> dict[str, int]:
        if x % 97 == 13:
            raise ValueError(f"bad item {x}")
        if x == 500:
            time.sleep(3)  # longer than the timeout below
        return {"x": x, "square": x * x}

    async def awork(x: int) -> int:
        await asyncio.sleep(0)
        if x == 7:
            raise KeyError("seven")
        return x + 1

    items = list(range(1_000)) + [13, 13]  # repeats are separate items with separate outcomes
    local = outcomes(run_concurrently, items, work, timeout=1.0)
    remote = outcomes(run_on_ray, items, work, timeout=1.0)
    assert remote == local
    assert len(remote) == 1_002
    assert ("500", None, "timed out after 1 s") in remote
    assert ("13", None, "ValueError: bad item 13") in remote

    assert inspect.iscoroutinefunction(awork)
    local_async = outcomes(run_concurrently, list(range(50)), awork)
    remote_async = outcomes(run_on_ray, list(range(50)), awork, batch_size=7, workers=3)
    assert remote_async == local_async and ("7", None, "KeyError: 'seven'") in remote_async


GOLD = [
    {"id": f"q{i}", "question": f"question {i}", "relevant": [{"doc": f"d{i % 7}.md"}]}
    for i in range(200)
]


@pytest.mark.slow
def test_evaluate_on_ray_matches_local(local_ray: Any) -> None:
    """Issue 9: per-question retrieval on Ray stores the same run as the local executor."""
    from ragmeter._ray_executor import pick_executor

    def search(question: str, k: int) -> list[dict[str, Any]]:
        n = int(question.split()[-1])
        if n == 42:
            raise RuntimeError("index shard down")
        docs = [f"d{(n + j) % 9}.md" for j in range(k)]
        return [{"id": f"{d}#0", "doc": d, "score": 10.0 - j} for j, d in enumerate(docs)]

    gold = GoldSet.from_records(GOLD, name="ray")
    evaluate_params = inspect.signature(ragmeter.evaluate).parameters
    with Store.memory() as store:
        local = ragmeter.evaluate(gold, search, k=5, store=store, name="local", commit="x")
        if "executor" in evaluate_params:
            remote = ragmeter.evaluate(
                gold, search, k=5, store=store, name="ray", commit="x", executor="ray"
            )

            # Latency is measured, not computed: the rest must be identical.
            def scored(metrics: dict[str, float]) -> dict[str, float]:
                return {m: v for m, v in metrics.items() if not m.startswith("latency")}

            assert scored(remote.metrics) == scored(local.metrics)
            by_id = {r.item_id: r for r in store.results(local.run.id)}
            for row in store.results(remote.run.id):
                expected = by_id[row.item_id]
                assert (row.hits, row.error, row.extra) == (
                    expected.hits,
                    expected.error,
                    expected.extra,
                )
    # The per-question call evaluate() makes, run through both executors.
    from ragmeter.evaluation import _work
    from ragmeter.retrievers import as_retriever

    work, is_async = _work(as_retriever(search), 5)
    for runner in (run_concurrently, pick_executor("ray")):
        got: list[Outcome[Any, Any]] = []
        runner(list(gold), work, concurrency=4, timeout=None, on_outcome=got.append,
               is_async=is_async)  # fmt: skip
        by_item = {o.item.id: o for o in got}
        assert len(by_item) == 200
        assert by_item["q42"].error is not None and "index shard down" in by_item["q42"].error
        assert [h.doc for h in by_item["q3"].value.hits] == [f"d{j % 9}.md" for j in range(3, 8)]


def test_executor_choice_errors() -> None:
    """Issue 9: an unknown executor or a Ray address without Ray is a clear input error."""
    from ragmeter._ray_executor import pick_executor

    with pytest.raises(ConfigError, match="unknown executor 'spark'"):
        pick_executor("spark")
    with pytest.raises(ConfigError, match="--ray-address needs --executor ray"):
        pick_executor("local", ray_address="ray://head:10001")
