"""A failure at any stage of a run reaches the caller promptly, once (issue 19.1, 19.11).

Stages: the retriever (user code), ``on_outcome`` (the caller's callback), the
writer thread (the store), and the final metrics. Each is injected for real: a
retriever that raises, a callback that raises, a ``Store`` whose writes fail.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

import ragmeter
from _net import wait_until
from ragmeter.errors import RunInterruptedError, StoreError
from ragmeter.executors.local import Outcome, run_concurrently
from ragmeter.executors.writer import BatchWriter
from ragmeter.gold.goldset import GoldSet
from ragmeter.store import Store

# How long a waiting stage polls before the test gives up on it (not a speed budget: how
# promptly each failure stops a run is benchmarks/promptness.py's).
PROMPT_S = 5.0
#: How long a "hanging" call waits to be released: far past any prompt stop.
HANG_S = 30.0


class Broken(Exception):
    """The failure the tests inject."""


class Hanging:
    """Calls that hang until released (or ``HANG_S``) and record that they returned: a run
    that stops promptly raises while ``returned`` is still empty, whatever the machine's
    load; one that waits for its calls cannot."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.returned: list[object] = []

    def call(self, item: object) -> None:
        self.release.wait(HANG_S)
        self.returned.append(item)

    async def acall(self, item: object) -> None:
        await asyncio.sleep(HANG_S)  # cancelled when the run stops
        self.returned.append(item)


def _gold(n: int) -> GoldSet:
    return GoldSet.from_records(
        [{"id": f"q{i}", "question": f"q{i}", "relevant": [{"doc": "a.md"}]} for i in range(n)]
    )


def _search(question: str, k: int) -> list[dict[str, Any]]:
    time.sleep(0.002)
    return [{"id": "a.md#0", "doc": "a.md"}]


def _slow_search(question: str, k: int) -> list[dict[str, Any]]:
    time.sleep(0.02)  # slow enough for the writer to write several batches
    return [{"id": "a.md#0", "doc": "a.md"}]


class FailingStore(Store):
    """A real SQLite store whose result writes (or final metrics) fail after a while."""

    def __init__(self, url: str, *, fail_results_after: int | None, fail_metrics: bool) -> None:
        super().__init__(url)
        self.fail_results_after = fail_results_after
        self.fail_metrics = fail_metrics
        self.batches = 0

    def add_result_rows(
        self, run_id: int, rows: Iterable[tuple[Any, ...]], *, replace: bool = True
    ) -> None:
        """Every batch of results goes through here (``add_results`` too)."""
        self.batches += 1
        if self.fail_results_after is not None and self.batches > self.fail_results_after:
            raise StoreError(f"store {self.url}: cannot write: database or disk is full")
        super().add_result_rows(run_id, rows, replace=replace)

    def set_metrics(
        self,
        run_id: int,
        means: Mapping[str, float],
        per_query: Mapping[str, Mapping[str, float]],
    ) -> None:
        if self.fail_metrics:
            raise StoreError(f"store {self.url}: cannot write: database or disk is full")
        super().set_metrics(run_id, means, per_query)


@pytest.mark.parametrize("is_async", [False, True], ids=["threads", "asyncio"])
def test_on_outcome_failure_stops_the_run_once(is_async: bool) -> None:
    """Issue 19.1: a callback that raises stops the run at once and is raised once, in the
    caller's thread (it used to kill the worker threads and leave the main thread waiting)."""
    calls: list[int] = []
    lock = threading.Lock()

    def on_outcome(outcome: Outcome[int, int]) -> None:
        with lock:
            calls.append(outcome.item)
        raise Broken("store full")

    def work(x: int) -> int:
        time.sleep(0.001)
        return x

    async def awork(x: int) -> int:
        await asyncio.sleep(0.001)
        return x

    with pytest.raises(Broken, match="store full"):
        run_concurrently(
            list(range(500)), awork if is_async else work, concurrency=8, on_outcome=on_outcome
        )
    assert len(calls) == 1  # nothing delivered after the failure


def test_on_outcome_failure_on_a_timeout_stops_the_run() -> None:
    """Issue 19.1: the watchdog's own delivery (a timed-out call) failing stops the run too."""

    def on_outcome(outcome: Outcome[int, int]) -> None:
        raise Broken("store full")

    calls = Hanging()
    try:
        with pytest.raises(Broken):
            run_concurrently([1, 2], calls.call, timeout=0.1, concurrency=2, on_outcome=on_outcome)
        assert calls.returned == []  # stopped at the timeout, not when the calls returned
    finally:
        calls.release.set()


@pytest.mark.parametrize("is_async", [False, True], ids=["threads", "asyncio"])
def test_retriever_exception_is_an_error_row(is_async: bool) -> None:
    """Issue 19.1: a retriever's ordinary exception is its question's error row; the run goes on."""

    def work(x: int) -> int:
        raise Broken(f"no {x}")

    async def awork(x: int) -> int:
        raise Broken(f"no {x}")

    seen: list[str | None] = []
    run_concurrently(
        [1, 2, 3], awork if is_async else work, on_outcome=lambda o: seen.append(o.error)
    )
    assert sorted(e or "" for e in seen) == ["Broken: no 1", "Broken: no 2", "Broken: no 3"]


def test_writer_error_reaches_put_with_its_own_traceback() -> None:
    """Issue 19.1: after a write error ``put`` raises it, and raising it again and again
    does not grow its traceback (the async path printed 909 MB of tracebacks)."""

    def write(batch: list[int]) -> None:
        raise Broken("disk full")

    writer: BatchWriter[int] = BatchWriter(write)
    writer.put(1)
    wait_until(lambda: writer.error is not None, timeout=PROMPT_S, what="the write error")
    depths = []
    for _ in range(5):
        with pytest.raises(Broken) as info:
            writer.put(2)
        depths.append(len(info.traceback))
    assert len(set(depths)) == 1
    with pytest.raises(Broken):
        writer.close()


@pytest.mark.parametrize(
    ("retriever", "fail_after", "fail_metrics"),
    [
        (_slow_search, 1, False),
        (None, 1, False),
        (_search, None, True),
    ],
    ids=["writer-threads", "writer-asyncio", "final-metrics"],
)
def test_store_failure_stops_evaluate_interrupted(
    tmp_path: Path, retriever: Any, fail_after: int | None, fail_metrics: bool
) -> None:
    """Issue 19.1: a store that fails mid-run (or while writing the final metrics) stops
    ``evaluate`` within seconds with exit code 3, a one-line reason, and the run marked
    ``interrupted``; a resume on a healthy store finishes it."""

    async def asearch(question: str, k: int) -> list[dict[str, Any]]:
        await asyncio.sleep(0.02)  # slow enough for the writer to write several batches
        return [{"id": "a.md#0", "doc": "a.md"}]

    url = str(tmp_path / "runs.db")
    store = FailingStore(url, fail_results_after=fail_after, fail_metrics=fail_metrics)
    gold = _gold(300)
    with pytest.raises(RunInterruptedError) as info:
        ragmeter.evaluate(gold, retriever or asearch, store=store, name="r", concurrency=8)
    message = str(info.value)
    assert info.value.exit_code == 3
    assert "\n" not in message
    assert "database or disk is full" in message
    assert "ragmeter eval --resume 1" in message
    assert store.get_run("r").status == "interrupted"
    stored = len(store.completed_items(1))
    assert f"stopped with {stored} of 300 questions stored" in message
    store.close()
    with Store.open(url) as healthy:
        report = ragmeter.evaluate(gold, _search, store=healthy, resume="r")
        assert report.run.status == "complete"
        assert report.n_questions == 300 and report.n_errors == 0
        assert report.metrics["hit@1"] == 1.0


@pytest.mark.parametrize("is_async", [False, True], ids=["threads", "asyncio"])
def test_retriever_system_exit_marks_the_run_interrupted(is_async: bool, file_store: Store) -> None:
    """Issue 19.11: a retriever raising ``SystemExit(7)`` used to exit 7 and leave the run
    ``running``; now the run is ``interrupted`` and the error is exit 3."""

    def leaving(question: str, k: int) -> list[dict[str, Any]]:
        if question == "q3":
            raise SystemExit(7)
        return _search(question, k)

    async def aleaving(question: str, k: int) -> list[dict[str, Any]]:
        return leaving(question, k)

    with pytest.raises(RunInterruptedError, match=r"SystemExit: 7; resume with"):
        ragmeter.evaluate(
            _gold(10), aleaving if is_async else leaving, store=file_store, name="r", concurrency=1
        )
    assert file_store.get_run("r").status == "interrupted"


@pytest.mark.parametrize("is_async", [False, True], ids=["threads", "asyncio"])
def test_a_failure_outside_the_calls_stops_the_run_while_calls_hang(is_async: bool) -> None:
    """Issue 19.1: a writer that fails while every call in flight is slow (no timeout) stops
    the run within a poll, not when the next call happens to finish."""
    broken = Broken("disk full")
    calls = Hanging()
    delivered: list[int] = []

    def failed() -> BaseException | None:
        return broken if delivered else None  # the writer fails after the first outcome

    def work(x: int) -> int:
        if x:
            calls.call(x)
        return x

    async def awork(x: int) -> int:
        if x:
            await calls.acall(x)
        return x

    try:
        with pytest.raises(Broken, match="disk full"):
            run_concurrently(
                [0, 1, 2, 3], awork if is_async else work, concurrency=4,
                on_outcome=lambda o: delivered.append(o.item), failed=failed,
            )  # fmt: skip
        assert delivered == [0]
        assert calls.returned == []  # stopped within a poll, while the calls still hung
    finally:
        calls.release.set()


def test_evaluate_stops_on_a_writer_failure_while_retrievals_hang(tmp_path: Path) -> None:
    """Issue 19.1: the first batch fails to write while the other questions' retrievals take
    10 s each: ``evaluate`` stops within seconds, the run ``interrupted``."""

    calls = Hanging()

    def hanging(question: str, k: int) -> list[dict[str, Any]]:
        if question != "q0":
            calls.call(question)
        return [{"id": "a.md#0", "doc": "a.md"}]

    store = FailingStore(str(tmp_path / "runs.db"), fail_results_after=0, fail_metrics=False)
    try:
        with pytest.raises(RunInterruptedError, match="database or disk is full"):
            ragmeter.evaluate(_gold(4), hanging, store=store, name="r", concurrency=4)
        assert calls.returned == []  # stopped while the other retrievals still hung
    finally:
        calls.release.set()
    assert store.get_run("r").status == "interrupted"
    store.close()
