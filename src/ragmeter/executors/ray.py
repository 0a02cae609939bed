"""The Ray executor: the local executor's contract, spread over a Ray cluster.

``run_on_ray`` has the signature and the promises of
``ragmeter.executors.local.run_concurrently`` (one outcome per item, errors and timeouts
as outcomes, ``elapsed_ms`` timing the call alone), but the calls run on Ray
workers. Design, and why:

- A few long-lived actors (by default one per CPU of the cluster) each receive
  ``work`` once, so a retriever holding an index or an HTTP client is unpickled
  once per worker rather than once per question.
- Items travel in batches (a remote call costs about a millisecond; an instant
  retriever answers in microseconds). Inside an actor a batch runs through the
  local ``run_concurrently``, so per-question concurrency, async work and timeouts
  behave exactly as they do locally: the results are the same by construction.
- Only item positions go out and ``(position, value, error, elapsed_ms)`` comes
  back; the driver rebuilds each ``Outcome`` with its own item and hands it to
  ``on_outcome`` as soon as its batch lands (a ``ray.wait`` loop). The driver
  therefore stays the single writer of the store, so resume and caches work as
  with the local executor.
- At most two batches per actor are in flight, so a run of 100,000 questions
  never has more than a few thousand items outside the driver.

Ray is an optional dependency (``pip install 'ragmeter[ray]'``), imported only
when this executor runs.
"""

from __future__ import annotations

import importlib
import math
import pickle
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ragmeter.errors import ConfigError
from ragmeter.executors.base import Executor, LocalExecutor
from ragmeter.executors.local import (
    DEFAULT_CONCURRENCY,
    FAILED_POLL_S,
    Outcome,
    run_concurrently,
)

__all__ = [
    "RAY_ADDRESS_ENV",
    "RayExecutor",
    "executor_for",
    "run_on_ray",
]

T = TypeVar("T")
R = TypeVar("R")

# Ray's own variable: ``ray.init()`` joins the cluster it names.
RAY_ADDRESS_ENV = "RAY_ADDRESS"
# Batches in flight per actor: one running, one queued, so an actor never idles.
_IN_FLIGHT_PER_ACTOR = 2
_MAX_BATCH = 256
# Batches per actor over the whole run, when items are few: spreads small runs.
_BATCHES_PER_ACTOR = 8

Packed = tuple[int, Any, "str | None", "float | None"]


def _ray() -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError as exc:
        raise ConfigError(
            "the Ray executor needs Ray: pip install 'ragmeter[ray]' (or choose --executor local)"
        ) from exc


def _connect(ray: Any, address: str | None, init_kwargs: Mapping[str, Any] | None) -> None:
    """Join ``address`` (or ``$RAY_ADDRESS``), or start a local Ray, unless already connected."""
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": "warning"}
    kwargs.update(init_kwargs or {})
    if address is not None:
        kwargs["address"] = address
    try:
        ray.init(**kwargs)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        where = address or "a local Ray instance"
        raise ConfigError(f"cannot connect to Ray at {where}: {exc}") from exc


def _make_actor_class(ray: Any) -> Any:
    class _Worker:
        """Holds ``work`` and runs batches of items through the local executor."""

        def __init__(
            self,
            work: Callable[[Any], Any],
            concurrency: int,
            timeout: float | None,
            is_async: bool,
        ) -> None:
            self._work = work
            self._concurrency = concurrency
            self._timeout = timeout
            self._is_async = is_async

        def run(self, batch: list[tuple[int, Any]]) -> list[Packed]:
            # Outcomes name the item by its place in the batch: items need not be hashable
            # or distinct objects.
            values = [item for _, item in batch]
            work = self._work
            call: Callable[[int], Any]
            if self._is_async:

                async def call_async(j: int) -> Any:
                    return await work(values[j])

                call = call_async
            else:

                def call_sync(j: int) -> Any:
                    return work(values[j])

                call = call_sync
            out: list[Packed] = []

            def keep(outcome: Outcome[int, Any]) -> None:
                index = batch[outcome.item][0]
                out.append((index, outcome.value, outcome.error, outcome.elapsed_ms))

            run_concurrently(
                range(len(values)),
                call,
                concurrency=self._concurrency,
                timeout=self._timeout,
                on_outcome=keep,
                is_async=self._is_async,
            )
            return out

    return ray.remote(_Worker)


def _cluster_cpus(ray: Any) -> int:
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def run_on_ray(
    items: Sequence[T],
    work: Callable[[T], R] | Callable[[T], Awaitable[R]],
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float | None = None,
    on_outcome: Callable[[Outcome[T, R]], None],
    is_async: bool | None = None,
    failed: Callable[[], BaseException | None] | None = None,
    cluster: RayExecutor | None = None,
) -> None:
    """Call ``work(item)`` for every item on a Ray cluster; ``on_outcome`` runs on the driver.

    The contract of ``run_concurrently``: one ``Outcome`` per item, an error
    message instead of a value when the call raised or exceeded ``timeout``.
    ``concurrency`` is per worker (each worker runs its batch with that many calls
    at a time). ``cluster`` says where and how wide (:class:`RayExecutor`: ``address``
    joins a running cluster, ``"ray://head:10001"``, ``"auto"``; default ``$RAY_ADDRESS``,
    else a local Ray on this machine; ``workers`` defaults to the cluster's CPU count).
    ``work`` and the items must pickle (Ray uses cloudpickle: closures and lambdas do).

    >>> seen = []
    >>> run_on_ray([1, 2, 3], lambda x: x * 10, on_outcome=lambda o: seen.append(o.value),
    ...            cluster=RayExecutor(init_kwargs={"num_cpus": 2}))   # doctest: +SKIP
    >>> sorted(seen)                              # doctest: +SKIP
    [10, 20, 30]
    """
    cluster = cluster or RayExecutor()
    address, workers, batch_size = cluster.address, cluster.workers, cluster.batch_size
    init_kwargs = cluster.init_kwargs
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if not items:
        return
    if is_async is None:
        import inspect

        is_async = inspect.iscoroutinefunction(work)
    ray = _ray()
    _connect(ray, address, init_kwargs)
    n_workers = workers or min(_cluster_cpus(ray), len(items))
    size = batch_size or max(
        1, min(_MAX_BATCH, math.ceil(len(items) / (n_workers * _BATCHES_PER_ACTOR)))
    )
    actor_class = _make_actor_class(ray)
    # ``work`` goes to the object store once; every actor reads the same copy.
    try:
        work_ref = ray.put(work)
    except (TypeError, pickle.PicklingError) as exc:  # Ray: "Could not serialize ..."
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(
            f"the per-question work cannot be sent to Ray workers ({reason}): every object "
            "it holds (retriever, generator) must pickle; or choose --executor local"
        ) from exc
    # One CPU each, or an equal share when more workers than CPUs were asked for
    # (latency-bound work such as HTTP retrievers).
    cpus_each = min(1.0, _cluster_cpus(ray) / n_workers)
    actors = [
        actor_class.options(num_cpus=cpus_each).remote(work_ref, concurrency, timeout, is_async)
        for _ in range(n_workers)
    ]
    pending: dict[Any, int] = {}  # object ref -> actor index
    load = [0] * n_workers
    next_start = 0

    def submit(actor: int) -> bool:
        nonlocal next_start
        if next_start >= len(items):
            return False
        stop = min(len(items), next_start + size)
        batch = [(index, items[index]) for index in range(next_start, stop)]
        next_start = stop
        pending[actors[actor].run.remote(batch)] = actor
        load[actor] += 1
        return True

    try:
        for actor in range(n_workers):
            for _ in range(_IN_FLIGHT_PER_ACTOR):
                submit(actor)
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=FAILED_POLL_S)
            outside = failed() if failed is not None else None
            if outside is not None:
                raise outside
            for ref in ready:
                actor = pending.pop(ref)
                load[actor] -= 1
                submit(actor)
                for index, value, error, elapsed in ray.get(ref):
                    on_outcome(Outcome(items[index], value, error, elapsed))
    finally:
        for ref in pending:
            ray.cancel(ref)
        for handle in actors:
            ray.kill(handle)


@dataclass(frozen=True)
class RayExecutor:
    """The work on a Ray cluster: ``address`` (``"ray://head:10001"``, ``"auto"``; default
    ``$RAY_ADDRESS``, else a local Ray), ``workers`` (default: the cluster's CPUs).

    The contract of :class:`~ragmeter.executors.base.Executor`; see :func:`run_on_ray`.
    """

    address: str | None = None
    workers: int | None = None
    batch_size: int | None = None
    init_kwargs: Mapping[str, Any] | None = None

    @property
    def name(self) -> str:
        return "ray"

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
        run_on_ray(
            items,
            work,
            concurrency=concurrency,
            timeout=timeout,
            on_outcome=on_outcome,
            is_async=is_async,
            failed=failed,
            cluster=self,
        )


def executor_for(choice: str | Executor = "local", *, ray_address: str | None = None) -> Executor:
    """The executor object for ``--executor`` (``"local"`` or ``"ray"``), or ``choice`` itself.

    Names are the spelling of the CLI and ``ragmeter.toml``; the library passes objects.

    >>> executor_for("local")
    LocalExecutor()
    >>> executor_for("ray", ray_address="auto").address
    'auto'
    >>> executor_for("spark")
    Traceback (most recent call last):
    ...
    ragmeter.errors.ConfigError: unknown executor 'spark': choose local or ray
    """
    if not isinstance(choice, str):
        if ray_address is not None:
            raise ConfigError("ray_address goes with executor='ray', not an executor object")
        return choice
    if choice == "local":
        if ray_address is not None:
            raise ConfigError("--ray-address needs --executor ray")
        return LocalExecutor()
    if choice == "ray":
        return RayExecutor(address=ray_address)
    raise ConfigError(f"unknown executor {choice!r}: choose local or ray")
