"""How soon a failure or a deadline ends the wait (issues 3, 13.3, 19.1, 19.4; moved here from
the tests by issue 25.4).

The tests check what happens (the error, the run ``interrupted``, no hanging call returned,
the attempts counted); this prints how long it took, beside a named peer or floor measured
in the same rounds: the same run without the fault, or the deadline it must stop at. The
scenarios are the tests' own (their servers, stores and helpers, imported from ``tests/``):

- the local executor: a failing callback, a failing writer while calls hang;
- ``evaluate``: a store that fails mid-run, a writer failing while retrievals hang;
- the HTTP retriever, generator and judge: bodies over the limit, a gzip bomb, a trickled
  body against its 1 s deadline, Retry-After against a long backoff, a retried timeout;
- ``ragmeter eval`` on a full disk (RLIMIT_FSIZE) beside the same eval with room.

Run: ``PYTHONPATH=src .venv/bin/python benchmarks/promptness.py [--rounds 3] [--skip-cli]``
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _timing import ROOT, footer, header, side_by_side

sys.path.insert(0, str(Path(ROOT) / "tests"))

import ragmeter  # noqa: E402
from _servers import MIB, serve, serve_handler  # noqa: E402
from executors.test_executor_failures import (  # noqa: E402
    HANG_S,
    Broken,
    FailingStore,
    Hanging,
    _gold,
    _search,
    _slow_search,
)
from judge.test_judge_bounds import _judge, _Replies  # noqa: E402
from ragmeter.errors import RetrieverError, RunInterruptedError  # noqa: E402
from ragmeter.executors.local import FAILED_POLL_S, run_concurrently  # noqa: E402
from ragmeter.retrievers import HttpRetriever  # noqa: E402
from ragmeter.store import Store  # noqa: E402
from retrievers.test_http_bounds import _Bodies  # noqa: E402


def _fails(error: type[BaseException], work: Callable[[], object]) -> Callable[[], None]:
    """``work``, which must raise ``error`` (the benchmark stops if it does not)."""

    def run() -> None:
        try:
            work()
        except error:
            return
        raise SystemExit(f"{work} did not raise {error.__name__}")

    return run


def executor(rounds: int) -> None:
    def raise_once(outcome: Any) -> None:
        raise Broken("store full")

    def work(x: int) -> int:
        time.sleep(0.001)
        return x

    items = list(range(500))
    side_by_side(
        "run_concurrently: on_outcome raises (500 x 1 ms)",
        _fails(Broken, lambda: run_concurrently(items, work, concurrency=8, on_outcome=raise_once)),
        "the same run, on_outcome fine",
        lambda: run_concurrently(items, work, concurrency=8, on_outcome=lambda o: None),
        "< 5 s",
        rounds=rounds,
    )

    def hanging_run(timeout: float | None, failed: Any) -> Callable[[], None]:
        def run() -> None:
            calls = Hanging()
            try:
                run_concurrently(
                    [1, 2], calls.call, timeout=timeout, concurrency=2,
                    on_outcome=raise_once, failed=failed,
                )  # fmt: skip
            finally:
                calls.release.set()

        return run

    side_by_side(
        "run_concurrently: on_outcome raises on a timeout",
        _fails(Broken, hanging_run(0.1, None)),
        "floor: the 0.1 s timeout",
        0.1,
        "< 2 s (calls hang 3 s)",
        rounds=rounds,
    )
    broken = Broken("disk full")
    side_by_side(
        "run_concurrently: writer fails while calls hang",
        _fails(Broken, hanging_run(None, lambda: broken)),
        "floor: one poll for the failure",
        FAILED_POLL_S,
        "< 2 s (calls hang 10 s)",
        rounds=rounds,
    )


def evaluate_stops(rounds: int, tmp: Path) -> None:
    counter = iter(range(1_000_000))

    def failing(retriever: Any, **faults: Any) -> Callable[[], None]:
        def run() -> None:
            store = FailingStore(str(tmp / f"f{next(counter)}.db"), **faults)
            try:
                ragmeter.evaluate(_gold(300), retriever, store=store, concurrency=8)
            finally:
                store.close()

        return _fails(RunInterruptedError, run)

    def healthy(retriever: Any) -> Callable[[], None]:
        def run() -> None:
            with Store.open(tmp / f"h{next(counter)}.db") as store:
                ragmeter.evaluate(_gold(300), retriever, store=store, concurrency=8)

        return run

    for label, retriever, faults, budget in (
        ("writer fails (threads, 300 x 20 ms)", _slow_search, {"fail_results_after": 1}, "< 5 s"),
        ("final metrics fail (300 x 2 ms)", _search, {"fail_metrics": True}, "< 5 s"),
    ):
        faults = {"fail_results_after": None, "fail_metrics": False, **faults}
        side_by_side(
            f"evaluate: {label}",
            failing(retriever, **faults),
            "the same run on a healthy store",
            healthy(retriever),
            budget,
            rounds=rounds,
        )

    def hanging_evaluate() -> None:
        calls = Hanging()

        def search(question: str, k: int) -> list[dict[str, Any]]:
            if question != "q0":
                calls.call(question)
            return [{"id": "a.md#0", "doc": "a.md"}]

        try:
            failing(search, fail_results_after=0, fail_metrics=False)()
        finally:
            calls.release.set()

    side_by_side(
        "evaluate: writer fails while retrievals hang",
        hanging_evaluate,
        "the retrievals' hang, not waited for",
        HANG_S,
        "< 3 s (retrievals hang 10 s)",
        rounds=rounds,
    )


def _aretrieve(retriever: HttpRetriever) -> None:
    async def main() -> None:
        try:
            await retriever.aretrieve("q", 10)
        finally:
            await retriever.aclose()

    asyncio.run(main())


def http(rounds: int) -> None:
    handler = type("Bodies", (_Bodies,), {"seen": {}})
    with serve_handler(handler) as bodies, serve() as good:

        def fetch(route: str, **options: Any) -> Callable[[], None]:
            def run() -> None:
                retriever = HttpRetriever(bodies + route, **options)
                try:
                    retriever.retrieve("q", 10)
                finally:
                    retriever.close()

            return _fails(RetrieverError, run)

        def good_body() -> None:
            retriever = HttpRetriever(good.url("/good"))
            retriever.retrieve("q", 10)
            retriever.close()

        for route in ("/huge", "/chunked"):
            side_by_side(
                f"retriever: 64 MB body over a 1 MB limit ({route[1:]})",
                fetch(route, retries=2, backoff=0.01, max_response_bytes=MIB),
                "a good 10-hit body",
                good_body,
                "< 5 s (sync + async)",
                rounds=rounds,
            )
        side_by_side(
            "retriever: gzip bomb (1 GiB) over a 4 MiB limit",
            fetch("/bomb", retries=0, max_response_bytes=4 * MIB),
            "a good 10-hit body",
            good_body,
            "< 5 s (sync + async)",
            rounds=rounds,
        )
        side_by_side(
            "retriever: trickled body, timeout 1 s",
            fetch("/trickle", timeout=1.0, retries=0),
            "floor: the 1 s deadline",
            1.0,
            "< 2.5 s",
            rounds=rounds,
        )
        side_by_side(
            "retriever (async): trickled body, timeout 1 s",
            _fails(
                RetrieverError,
                lambda: _aretrieve(HttpRetriever(bodies + "/trickle", timeout=1.0, retries=0)),
            ),
            "floor: the 1 s deadline",
            1.0,
            "< 2.5 s",
            rounds=rounds,
        )
        side_by_side(
            "retriever: 0.2 s timeout, 1 retry, server sleeps 1 s",
            _fails(
                RetrieverError,
                lambda: HttpRetriever(
                    good.url("/slow"), timeout=0.2, retries=1, backoff=0.01
                ).retrieve("q", 2),
            ),
            "floor: two 0.2 s attempts",
            0.4,
            "< 0.9 s",
            rounds=rounds,
        )

        def rate_limited() -> None:
            good.counts.clear()
            HttpRetriever(good.url("/rate"), timeout=2.0, retries=1, backoff=5.0).retrieve("q", 1)

        side_by_side(
            "retriever: 429 with Retry-After: 0, backoff 5 s",
            rate_limited,
            "a good 10-hit body",
            good_body,
            "< 2 s",
            rounds=rounds,
        )


def judge(rounds: int) -> None:
    with serve_handler(_Replies) as server:
        for route, budget in (("huge", "< 15 s"), ("bomb", "< 15 s")):
            side_by_side(
                f"judge: oversized reply ({route})",
                lambda route=route: _judge(server, route),
                "a good gzip reply",
                lambda: _judge(server, "gzip"),
                budget,
                rounds=rounds,
            )
        side_by_side(
            "judge: trickled reply, timeout 1 s",
            lambda: _judge(server, "trickle", timeout=1.0, max_retries=0),
            "floor: the 1 s deadline",
            1.0,
            "< 3.5 s",
            rounds=rounds,
        )


def full_disk(rounds: int, tmp: Path) -> None:
    from store.test_store_failures import _ragmeter, _write_inputs

    _write_inputs(tmp)
    counter = iter(range(1_000_000))

    def run(limited: bool) -> Callable[[], None]:
        def once() -> None:
            store = str(tmp / f"db{next(counter)}.db")
            done = _ragmeter(
                tmp, "eval", "--gold", "gold.jsonl", "--retriever", "slowret:search",
                "--store", store, "--json", limited=limited,
            )  # fmt: skip
            if done.returncode != (3 if limited else 0):
                raise SystemExit(f"eval exited {done.returncode}: {done.stderr[-300:]}")

        return once

    side_by_side(
        "ragmeter eval: the store's disk fills up (exit 3)",
        run(True),
        "the same eval with room (exit 0)",
        run(False),
        "< 45 s",
        rounds=rounds,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-cli", action="store_true", help="skip the full-disk eval")
    args = parser.parse_args()
    header()
    with tempfile.TemporaryDirectory() as tmp:
        executor(args.rounds)
        evaluate_stops(args.rounds, Path(tmp))
        http(args.rounds)
        judge(args.rounds)
        if not args.skip_cli and sys.platform != "win32":
            full_disk(args.rounds, Path(tmp))
    footer()


if __name__ == "__main__":
    main()
