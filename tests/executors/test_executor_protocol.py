"""Issue 25.3: executors are objects with one declared protocol, names only at the boundary."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

import ragmeter
from ragmeter.errors import ConfigError
from ragmeter.executors.base import Executor, LocalExecutor
from ragmeter.executors.local import Outcome
from ragmeter.executors.ray import RayExecutor, executor_for


class _Reversed:
    """An executor of our own: every item one at a time, last first, all recorded."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    @property
    def name(self) -> str:
        return "reversed"

    def run(
        self,
        items: Sequence[Any],
        work: Callable[[Any], Any],
        *,
        concurrency: int,
        timeout: float | None,
        on_outcome: Callable[[Outcome[Any, Any]], None],
        is_async: bool | None = None,
        failed: Callable[[], BaseException | None] | None = None,
    ) -> None:
        for item in reversed(items):
            self.seen.append(item)
            start = time.perf_counter()
            value = work(item)
            on_outcome(Outcome(item, value, None, (time.perf_counter() - start) * 1000))


def _gold() -> ragmeter.GoldSet:
    records = [
        {"id": f"q{i}", "question": f"question {i}", "relevant": [{"doc": f"d{i}.md"}]}
        for i in range(6)
    ]
    return ragmeter.GoldSet.from_records(records)


def _retriever(question: str, k: int) -> list[dict[str, str]]:
    n = int(question.split()[-1])
    # The relevant document at rank n % 3 + 1: reciprocal ranks 1, 1/2, 1/3, 1, 1/2, 1/3.
    return [{"doc": f"other{j}.md"} for j in range(n % 3)] + [{"doc": f"d{n}.md"}]


def test_an_executor_object_runs_the_work_of_evaluate() -> None:
    mine = _Reversed()
    assert isinstance(mine, Executor) and isinstance(LocalExecutor(), Executor)
    report = ragmeter.evaluate(_gold(), _retriever, k=5, executor=mine)
    assert [item.id for item in mine.seen] == [f"q{i}" for i in reversed(range(6))]
    expected = sum(1 / (n % 3 + 1) for n in range(6)) / 6
    assert report.metrics["mrr"] == pytest.approx(expected)
    local = ragmeter.evaluate(_gold(), _retriever, k=5, executor=LocalExecutor())

    def quality(metrics: dict[str, float]) -> dict[str, float]:
        return {name: v for name, v in metrics.items() if not name.startswith("latency")}

    assert quality(dict(local.metrics)) == quality(dict(report.metrics))


def test_names_become_objects_at_the_boundary() -> None:
    assert executor_for("local") == LocalExecutor()
    assert executor_for("ray", ray_address="ray://head:10001") == RayExecutor("ray://head:10001")
    mine = _Reversed()
    assert executor_for(mine) is mine
    with pytest.raises(ConfigError, match="unknown executor 'spark'"):
        executor_for("spark")
    with pytest.raises(ConfigError, match="--ray-address needs --executor ray"):
        executor_for("local", ray_address="auto")
