"""Run one piece of work per question with bounded concurrency.

The local executor: an asyncio loop that runs async work directly and sync
work on a thread pool, enforces a per-question timeout, and hands every
outcome to a callback as soon as it is known. Work that raises or times out
becomes an outcome with an error message; the run goes on.

A failure of the callback itself (the store is full, the connection is gone)
is different: it stops the run at once and is raised in the caller's thread,
exactly once, whichever thread hit it (issue 19.1).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from ragmeter.executors.writer import BatchWriter  # re-exported: it lived here first

__all__ = ["DEFAULT_CONCURRENCY", "FAILED_POLL_S", "BatchWriter", "Outcome", "run_concurrently"]

DEFAULT_CONCURRENCY = 8

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Outcome(Generic[T, R]):
    """What happened to one piece of work: a value, or an error message."""

    item: T
    value: R | None
    error: str | None
    elapsed_ms: float | None


_NEW = object.__new__
_OUTCOME_SLOTS = [Outcome.__dict__[name].__set__ for name in Outcome.__slots__]


def _made_outcome(item: T, value: R, error: str | None, elapsed_ms: float | None) -> Outcome[T, R]:
    """``Outcome(item, value, error, elapsed_ms)`` without the frozen dataclass's
    ``__init__`` (four ``object.__setattr__`` calls: half of making one, issue 29.2)."""
    outcome: Outcome[T, R] = _NEW(Outcome)
    set_item, set_value, set_error, set_elapsed = _OUTCOME_SLOTS
    set_item(outcome, item)
    set_value(outcome, value)
    set_error(outcome, error)
    set_elapsed(outcome, elapsed_ms)
    return outcome


if Outcome.__slots__ != ("item", "value", "error", "elapsed_ms") or repr(
    _made_outcome(1, "v", None, 1.5)
) != repr(Outcome(1, "v", None, 1.5)):
    _made_outcome = Outcome  # Outcome changed: the usual way


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
    failed: Callable[[], BaseException | None] | None = None,
) -> None:
    """Call ``work(item)`` for every item, at most ``concurrency`` at a time.

    Sync work runs on ``concurrency`` worker threads that pull items from a shared
    queue and hand outcomes to whichever of them is delivering (no lock wait per item,
    so an instant retriever costs microseconds);
    async work runs on one event loop. ``elapsed_ms`` times the call alone (not the
    queueing). ``on_outcome`` is called from one thread at a time; if it raises,
    no further outcome is delivered and the exception is raised here, once. A
    ``KeyboardInterrupt`` (or another ``BaseException`` raised by ``work``) stops
    the run the same way, once the outcomes of calls already finished are delivered
    (for at most ``DRAIN_S``); the caller decides what an interrupted run means.
    ``failed()`` is polled every ``FAILED_POLL_S``: an exception it returns (the writer
    thread's, say) stops the run and is raised here, even while every call in flight is
    still running.

    >>> seen = []
    >>> run_concurrently([1, 2, 3], lambda x: x * 10, on_outcome=lambda o: seen.append(o.value))
    >>> sorted(seen)
    [10, 20, 30]
    """
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if is_async is None:
        is_async = inspect.iscoroutinefunction(work)
    if is_async:
        # A failure is raised out here, not inside the loop: asyncio handles a
        # SystemExit or KeyboardInterrupt escaping a task badly.
        failure = asyncio.run(_run(items, work, concurrency, timeout, on_outcome, failed))
        if failure is not None:
            raise failure
    else:
        sync_work = cast(Callable[[T], R], work)
        _ThreadRun[T, R](items, sync_work, concurrency, timeout, on_outcome, failed).run()


# How often the main thread wakes to check timeouts (and to receive Ctrl-C).
WATCHDOG_TICK_S = 0.05
# Outcomes handed to the delivering thread that make a worker wait to deliver them itself: a
# bound on what waits (outcomes hold their hits), reached only when the callback is slower
# than the work.
HANDOFF_MAX = 256
# How often ``failed()`` is asked whether something outside the calls went wrong.
FAILED_POLL_S = 0.2
# How long a run stopped by Ctrl-C (or a ``SystemExit`` in user code) may spend delivering
# the outcomes already handed over; what is left after that is retried by a resume.
DRAIN_S = 2.0


class _ThreadRun(Generic[T, R]):
    """Worker threads pulling from one queue; the main thread is the watchdog.

    A call that overruns ``timeout`` is reported as timed out at once and its
    worker is abandoned (a Python thread can't be killed): a replacement worker
    takes over, so one hung call never stalls the run.

    No worker waits on a lock for each question (issue 29.2). Taking an item is a
    ``deque.popleft`` (thread-safe on its own) unless a timeout needs the in-flight table.
    An outcome is appended to a hand-off queue; the worker that finds no delivery under way
    delivers everything queued, the others go back to work at once. With a lock per item,
    eight workers on two cores formed a convoy: the holder of the delivery lock lost the GIL,
    every other worker then blocked on the lock and woke again, two context switches a
    question (205,000 at 100k questions, 2.5 s of system time).
    """

    def __init__(
        self,
        items: Sequence[T],
        work: Callable[[T], R],
        concurrency: int,
        timeout: float | None,
        on_outcome: Callable[[Outcome[T, R]], None],
        failed: Callable[[], BaseException | None] | None = None,
    ) -> None:
        self._items: deque[T] = deque(items)
        self._failed = failed
        self._work = work
        self._concurrency = min(concurrency, max(1, len(items)))
        self._timeout = timeout
        self._on_outcome = on_outcome
        self._lock = threading.Lock()  # guards the in-flight table, workers, stop
        self._deliver = threading.Lock()  # held by the one thread delivering; guards _remaining
        self._handoff: deque[Outcome[T, R]] = deque()  # outcomes waiting to be delivered
        self._remaining = len(items)
        self._finished = threading.Event()
        self._stop = False
        # worker id -> (item, start time); a worker's entry is removed when it delivers
        self._in_flight: dict[int, tuple[T, float]] = {}
        self._abandoned: set[int] = set()
        self._next_worker = 0
        self._raised: BaseException | None = None
        # Set when the failure came from delivering (on_outcome, or failed()'s store):
        # then nothing more is delivered, not even what was already handed over.
        self._delivery_failed = False
        if self._remaining == 0:
            self._finished.set()

    def run(self) -> None:
        try:
            # Inside the try: a Ctrl-C while workers start must stop those already running.
            for _ in range(self._concurrency):
                self._start_worker()
            while not self._finished.wait(WATCHDOG_TICK_S if self._timeout else FAILED_POLL_S):
                if self._timeout is not None:
                    self._expire()
                outside = self._failed() if self._failed is not None else None
                if outside is not None:
                    self._delivery_failed = True
                    self._fail(outside)
        except BaseException:  # Ctrl-C or SystemExit here, or _expire's delivery failed
            with self._lock:
                self._stop = True
            self._drain()
            raise
        if self._raised is not None:
            # A worker's failure (in user code or in on_outcome) ends the run here.
            self._drain()
            raise self._raised

    def _drain(self) -> None:
        """Deliver the outcomes already handed over when the run stopped, so a Ctrl-C loses
        no finished call (up to ``HANDOFF_MAX`` could wait); best effort, for ``DRAIN_S``.

        The thread delivering sees the stop after its current call and lets go of the
        delivery; outcomes of calls that finish after this are dropped (a resume retries
        them). Nothing is delivered when the stop came from delivering (``on_outcome`` or
        the store failed); a failure of ``on_outcome`` here ends the drain and leaves the
        stop's own exception to be raised.
        """
        if self._delivery_failed:
            return
        deadline = time.monotonic() + DRAIN_S
        if not self._deliver.acquire(timeout=DRAIN_S):
            return
        try:
            handoff = self._handoff
            while handoff and time.monotonic() < deadline:
                self._on_outcome(handoff.popleft())
                self._remaining -= 1
        except Exception:  # noqa: BLE001, S110 - the run is already stopping for its own reason
            pass
        finally:
            self._deliver.release()

    def _start_worker(self) -> None:
        with self._lock:
            worker_id = self._next_worker
            self._next_worker += 1
        thread = threading.Thread(
            target=self._loop, args=(worker_id,), name=f"ragmeter-worker-{worker_id}", daemon=True
        )
        thread.start()

    def _take(self, worker_id: int) -> tuple[bool, T | None]:
        if self._timeout is None:  # no in-flight table, no abandoned worker: no lock
            if self._stop:
                return False, None
            try:
                return True, self._items.popleft()
            except IndexError:
                return False, None
        with self._lock:
            if self._stop or worker_id in self._abandoned:
                return False, None
            try:
                item = self._items.popleft()
            except IndexError:
                return False, None
            self._in_flight[worker_id] = (item, time.monotonic())
            return True, item

    def _loop(self, worker_id: int) -> None:
        timed = self._timeout is not None
        while True:
            ok, item = self._take(worker_id)
            if not ok:
                return
            start = time.perf_counter()
            try:
                value = self._work(item)  # type: ignore[arg-type]
            except Exception as error:  # noqa: BLE001 - any failure of user code is an error row
                outcome: Outcome[T, R] = Outcome(item, None, _describe(error), None)  # type: ignore[arg-type]
            except BaseException as error:  # KeyboardInterrupt/SystemExit raised inside user code
                self._fail(error)
                return
            else:
                elapsed = (time.perf_counter() - start) * 1000.0
                outcome = _made_outcome(item, value, None, elapsed)  # type: ignore[arg-type]
            if timed:  # without a timeout no worker is ever abandoned
                with self._lock:
                    if worker_id in self._abandoned:
                        return  # already reported as timed out
                    del self._in_flight[worker_id]
            try:
                self._emit(outcome)
            except BaseException as error:  # noqa: BLE001 - re-raised in the main thread
                self._fail(error)
                return

    def _fail(self, error: BaseException) -> None:
        """Stop the run and hand ``error`` to the main thread (the first one wins)."""
        with self._lock:
            self._stop = True
            if self._raised is None:
                self._raised = error
        self._finished.set()

    def _expire(self) -> None:
        assert self._timeout is not None
        now = time.monotonic()
        expired: list[T] = []
        with self._lock:
            for worker_id, (item, started) in list(self._in_flight.items()):
                if now - started >= self._timeout:
                    del self._in_flight[worker_id]
                    self._abandoned.add(worker_id)
                    expired.append(item)
        for item in expired:
            self._start_worker()
            self._emit(Outcome(item, None, f"timed out after {self._timeout:g} s", None))

    def _emit(self, outcome: Outcome[T, R]) -> None:
        """Deliver ``outcome``, or leave it to the thread delivering (see the class doc)."""
        handoff, deliver = self._handoff, self._deliver
        handoff.append(outcome)
        # After a release, look again: an outcome queued while this thread was finishing
        # found the lock held and was left to it.
        while handoff:
            # Waits for the lock only when too much is queued: the callback is the bottleneck.
            if not deliver.acquire(len(handoff) > HANDOFF_MAX):
                return  # the thread delivering takes it
            try:
                while handoff:
                    if self._stop:
                        return
                    try:
                        self._on_outcome(handoff.popleft())
                    except Exception:
                        self._delivery_failed = True  # so nothing more is delivered
                        raise
                    # The count of outcomes still to come changes only under the delivery lock.
                    self._remaining -= 1
                    if self._remaining == 0:
                        self._finished.set()
            finally:
                deliver.release()


async def _run(
    items: Sequence[T],
    work: Callable[[T], Any],
    concurrency: int,
    timeout: float | None,
    on_outcome: Callable[[Outcome[T, R]], None],
    failed: Callable[[], BaseException | None] | None = None,
) -> BaseException | None:
    """Run the items on this loop; return the failure that stopped the run, if any."""
    semaphore = asyncio.Semaphore(concurrency)
    # The first failure of on_outcome, or a BaseException (SystemExit, Ctrl-C) raised
    # by ``work``; once set, nothing more is delivered or started.
    failure: list[BaseException] = []

    def deliver(outcome: Outcome[T, R]) -> None:
        if failure:
            return
        try:
            on_outcome(outcome)
        except BaseException as error:  # noqa: BLE001 - raised once, by _run
            failure.append(error)

    async def timed_async(item: T) -> tuple[R, float]:
        start = time.perf_counter()
        value = await work(item)
        return value, (time.perf_counter() - start) * 1000.0

    async def one(item: T) -> None:
        async with semaphore:
            if failure:
                return
            try:
                value, elapsed = await asyncio.wait_for(timed_async(item), timeout)
            except asyncio.CancelledError:
                raise
            except TimeoutError:
                deliver(Outcome(item, None, f"timed out after {timeout:g} s", None))
            except Exception as error:  # noqa: BLE001 - any failure of user code is an error row
                deliver(Outcome(item, None, _describe(error), None))
            except BaseException as error:  # noqa: BLE001 - SystemExit/Ctrl-C inside user code
                if not failure:
                    failure.append(error)
            else:
                deliver(Outcome(item, value, None, elapsed))

    # Feed tasks in windows so 100,000 questions don't become 100,000 pending tasks.
    window = max(concurrency * 4, 64)
    pending: set[asyncio.Task[None]] = set()

    async def wait_some(tasks: set[asyncio.Task[None]]) -> set[asyncio.Task[None]]:
        _, rest = await asyncio.wait(
            tasks, timeout=FAILED_POLL_S, return_when=asyncio.FIRST_COMPLETED
        )
        outside = failed() if failed is not None else None
        if outside is not None and not failure:
            failure.append(outside)
        return rest

    for item in items:
        while len(pending) >= window and not failure:
            pending = await wait_some(pending)
        if failure:
            break
        pending.add(asyncio.create_task(one(item)))
    while pending and not failure:
        pending = await wait_some(pending)
    if failure:
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        return failure[0]
    return None
