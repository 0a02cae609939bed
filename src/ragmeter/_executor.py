"""Run one piece of work per question with bounded concurrency.

The local executor: an asyncio loop that runs async work directly and sync
work on a thread pool, enforces a per-question timeout, and hands every
outcome to a callback as soon as it is known. Work that raises or times out
becomes an outcome with an error message; the run goes on.
"""

from __future__ import annotations

import asyncio
import inspect
import queue
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["DEFAULT_CONCURRENCY", "Outcome", "BatchWriter", "run_concurrently"]

DEFAULT_CONCURRENCY = 8
# How long the writer waits for more outcomes before it writes what it holds;
# short, so a killed process loses little more than the questions in flight.
WRITER_LINGER_S = 0.05
WRITER_MAX_BATCH = 1000

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Outcome(Generic[T, R]):
    """What happened to one piece of work: a value, or an error message."""

    item: T
    value: R | None
    error: str | None
    elapsed_ms: float | None


def _describe(error: BaseException) -> str:
    text = str(error).strip()
    name = type(error).__name__
    if not text:
        return name
    # Our own errors carry complete messages; others get their type for context.
    if type(error).__module__.startswith("ragmeter"):
        return text
    return f"{name}: {text}"


def run_concurrently(
    items: Sequence[T],
    work: Callable[[T], R] | Callable[[T], Awaitable[R]],
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float | None = None,
    on_outcome: Callable[[Outcome[T, R]], None],
    is_async: bool | None = None,
) -> None:
    """Call ``work(item)`` for every item, at most ``concurrency`` at a time.

    ``elapsed_ms`` times the call alone (not the queueing). A ``KeyboardInterrupt``
    stops the loop after outcomes already delivered; the caller decides what an
    interrupted run means.

    >>> seen = []
    >>> run_concurrently([1, 2, 3], lambda x: x * 10, on_outcome=lambda o: seen.append(o.value))
    >>> sorted(seen)
    [10, 20, 30]
    """
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if is_async is None:
        is_async = inspect.iscoroutinefunction(work)
    asyncio.run(_run(items, work, concurrency, timeout, on_outcome, is_async))


async def _run(
    items: Sequence[T],
    work: Callable[[T], Any],
    concurrency: int,
    timeout: float | None,
    on_outcome: Callable[[Outcome[T, R]], None],
    is_async: bool,
) -> None:
    loop = asyncio.get_running_loop()
    semaphore = asyncio.Semaphore(concurrency)
    pool = None if is_async else ThreadPoolExecutor(max_workers=concurrency)

    def timed_sync(item: T) -> tuple[R, float]:
        start = time.perf_counter()
        value = work(item)
        return value, (time.perf_counter() - start) * 1000.0

    async def timed_async(item: T) -> tuple[R, float]:
        start = time.perf_counter()
        value = await work(item)
        return value, (time.perf_counter() - start) * 1000.0

    async def one(item: T) -> None:
        async with semaphore:
            try:
                if pool is None:
                    call: Awaitable[tuple[R, float]] = timed_async(item)
                else:
                    call = loop.run_in_executor(pool, timed_sync, item)
                value, elapsed = await asyncio.wait_for(call, timeout)
            except asyncio.CancelledError:
                raise
            except TimeoutError:
                on_outcome(Outcome(item, None, f"timed out after {timeout:g} s", None))
            except Exception as error:  # noqa: BLE001 - any failure of user code is an error row
                on_outcome(Outcome(item, None, _describe(error), None))
            else:
                on_outcome(Outcome(item, value, None, elapsed))

    try:
        # Feed tasks in windows so 100,000 questions don't become 100,000 pending tasks.
        window = max(concurrency * 4, 64)
        pending: set[asyncio.Task[None]] = set()
        for item in items:
            if len(pending) >= window:
                _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            pending.add(asyncio.create_task(one(item)))
        if pending:
            await asyncio.gather(*pending)
    finally:
        if pool is not None:
            # Hung calls keep their thread; don't wait for them.
            pool.shutdown(wait=False, cancel_futures=True)


class BatchWriter(Generic[T]):
    """A single writer thread that persists results as they arrive.

    ``put`` never blocks on I/O; the thread writes whatever has queued up in one
    call to ``write_batch``, so batches grow with throughput and stay at one
    result when results trickle in. ``close`` flushes everything and re-raises a
    write error, so nothing computed is silently lost.
    """

    def __init__(self, write_batch: Callable[[list[T]], None]) -> None:
        self._write_batch = write_batch
        self._queue: queue.Queue[T | None] = queue.Queue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="ragmeter-writer", daemon=True)
        self._thread.start()

    def put(self, value: T) -> None:
        if self._error is not None:
            raise self._error
        self._queue.put(value)

    def put_many(self, values: Iterable[T]) -> None:
        for value in values:
            self.put(value)

    def _loop(self) -> None:
        done = False
        while not done:
            first = self._queue.get()
            if first is None:
                break
            batch = [first]
            deadline = time.monotonic() + WRITER_LINGER_S
            while len(batch) < WRITER_MAX_BATCH:
                try:
                    nxt = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if nxt is None:
                    done = True
                    break
                batch.append(nxt)
            try:
                self._write_batch(batch)
            except BaseException as error:  # noqa: BLE001 - handed to the caller in close()
                self._error = error
                return

    def close(self) -> None:
        """Write what is queued, stop the thread, and raise a write error if one happened."""
        self._queue.put(None)
        self._thread.join()
        if self._error is not None:
            raise self._error
