"""The executor contract: where the per-question work of a run (or a judge) runs.

An :class:`Executor` is an object, passed to ``evaluate()``, ``run_sweep()`` and the
job runner; the names ``"local"`` and ``"ray"`` are spellings of the CLI and of
``ragmeter.toml``, turned into objects at that boundary by
``ragmeter.executors.ray.executor_for``. Both implementations keep one promise: one
:class:`~ragmeter.executors.local.Outcome` per item, handed to ``on_outcome`` in the
calling process (the single writer of the store), an error message instead of a
value when the call raised or ran past ``timeout``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from ragmeter.executors.local import Outcome, run_concurrently

__all__ = ["Executor", "LocalExecutor"]

T = TypeVar("T")


@runtime_checkable
class Executor(Protocol):
    """Runs ``work(item)`` for every item and reports each outcome here."""

    @property
    def name(self) -> str:
        """``"local"`` or ``"ray"``: what a run's config and ``--executor`` call it."""
        ...

    def run(
        self,
        items: Sequence[T],
        work: Callable[[T], Any] | Callable[[T], Awaitable[Any]],
        *,
        concurrency: int,
        timeout: float | None,
        on_outcome: Callable[[Outcome[T, Any]], None],
        is_async: bool | None = None,
        failed: Callable[[], BaseException | None] | None = None,
    ) -> None:
        """Every item once; ``failed()`` is polled and an exception it returns stops the run."""
        ...


@dataclass(frozen=True)
class LocalExecutor:
    """Threads (sync work) or one asyncio loop (async work) in this process.

    >>> seen = []
    >>> LocalExecutor().run([1, 2], lambda x: x + 1, concurrency=2, timeout=None,
    ...                     on_outcome=lambda o: seen.append(o.value))
    >>> sorted(seen)
    [2, 3]
    """

    @property
    def name(self) -> str:
        return "local"

    def run(
        self,
        items: Sequence[T],
        work: Callable[[T], Any] | Callable[[T], Awaitable[Any]],
        *,
        concurrency: int,
        timeout: float | None,
        on_outcome: Callable[[Outcome[T, Any]], None],
        is_async: bool | None = None,
        failed: Callable[[], BaseException | None] | None = None,
    ) -> None:
        run_concurrently(
            items,
            work,
            concurrency=concurrency,
            timeout=timeout,
            on_outcome=on_outcome,
            is_async=is_async,
            failed=failed,
        )
