"""The batch writer: one thread that persists a run's results as they arrive.

Split out of ``executors/local.py`` (which still exports :class:`BatchWriter`): the
worker threads hand each result over with a ``put``, and this thread writes what has
queued up in one call, so batches grow with throughput (issue 29.2).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Generic, TypeVar

__all__ = ["WRITER_LINGER_S", "WRITER_MAX_BATCH", "WRITER_MAX_QUEUED", "BatchWriter"]

# How long the writer waits for more outcomes before it writes what it holds;
# short, so a killed process loses little more than the questions in flight.
WRITER_LINGER_S = 0.05
WRITER_MAX_BATCH = 1000
# Values queued for the writer at most: past this, ``put`` waits for the store, so a
# retriever faster than the store never piles the whole run up in memory (issue 29.2).
WRITER_MAX_QUEUED = 4 * WRITER_MAX_BATCH
# How often a waiting ``put`` or ``close`` checks that the writer is still alive.
_WRITER_WAIT_S = 0.1
# What the writer thread waits for (BatchWriter._waits).
_FIRST, _FULL = 1, 2

T = TypeVar("T")


class BatchWriter(Generic[T]):
    """A single writer thread that persists results as they arrive.

    ``put`` never blocks on I/O; the thread writes whatever has queued up in one
    call to ``write_batch``, so batches grow with throughput and stay at one
    result when results trickle in. ``close`` flushes everything and re-raises a
    write error, so nothing computed is silently lost.

    The values wait in a plain list under one lock, and the thread takes a whole
    batch at once: ``put`` wakes it only when it waits for a first value or for a
    full batch, so handing a value over costs an append, not a wait and a wake-up
    (a ``queue.Queue`` cost one timed ``get`` per value, issue 29.2).
    """

    def __init__(self, write_batch: Callable[[list[T]], None]) -> None:
        self._write_batch = write_batch
        self._pending: list[T] = []
        self._lock = threading.Lock()
        self._more = threading.Condition(self._lock)  # the thread waits for values
        self._room = threading.Condition(self._lock)  # ``put`` waits for the thread
        # What the thread waits for: 0 nothing, _FIRST a first value, _FULL a full batch.
        self._waits = 0
        self._closing = False
        self._error: BaseException | None = None
        self._traceback: TracebackType | None = None
        self._written = 0
        self._thread = threading.Thread(target=self._loop, name="ragmeter-writer", daemon=True)
        self._thread.start()

    @property
    def written(self) -> int:
        """How many values have been written (their batches committed)."""
        return self._written

    @property
    def queued(self) -> int:
        """How many values wait for the writer (at most :data:`WRITER_MAX_QUEUED`)."""
        return len(self._pending)

    @property
    def error(self) -> BaseException | None:
        """The write error that stopped the writer, if any."""
        return self._error

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error.with_traceback(self._traceback)

    def put(self, value: T) -> None:
        """Queue ``value``; waits while the queue is full (the writer is behind)."""
        if self._error is not None:
            self._raise()
        with self._lock:
            pending = self._pending
            while len(pending) >= WRITER_MAX_QUEUED:
                self._room.wait(_WRITER_WAIT_S)
                self._raise()  # a writer that died never drains the queue
                pending = self._pending  # the thread took the list it was
            pending.append(value)
            waits = self._waits
            if waits and (waits == _FIRST or len(pending) >= WRITER_MAX_BATCH):
                self._waits = 0
                self._more.notify()

    def put_many(self, values: Iterable[T]) -> None:
        for value in values:
            self.put(value)

    def _take(self) -> list[T] | None:
        """The next batch (``None`` once closed and drained), after waiting for a first
        value and then up to :data:`WRITER_LINGER_S` for a full batch."""
        with self._lock:
            pending = self._pending
            while not pending:
                if self._closing:
                    return None
                self._waits = _FIRST
                self._more.wait()
            if len(pending) < WRITER_MAX_BATCH and not self._closing:
                deadline = time.monotonic() + WRITER_LINGER_S
                while len(pending) < WRITER_MAX_BATCH and not self._closing:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._waits = _FULL
                    self._more.wait(left)
                self._waits = 0
            if len(pending) <= WRITER_MAX_BATCH:
                self._pending = []
                batch = pending
            else:
                batch = pending[:WRITER_MAX_BATCH]
                del pending[:WRITER_MAX_BATCH]
            self._room.notify_all()
            return batch

    def _loop(self) -> None:
        while (batch := self._take()) is not None:
            try:
                self._write_batch(batch)
            except BaseException as error:  # noqa: BLE001 - handed to the caller by put/close
                self._traceback = error.__traceback__
                self._error = error
                with self._lock:
                    self._room.notify_all()  # a waiting ``put`` raises it now
                return
            self._written += len(batch)

    def close(self) -> None:
        """Write what is queued, stop the thread, and raise a write error if one happened."""
        with self._lock:
            self._closing = True
            self._more.notify()
        self._thread.join()
        self._raise()
