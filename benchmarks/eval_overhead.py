"""Orchestration overhead of ``ragmeter.evaluate`` (issue 3).

1. An instant in-process retriever over 10,000 questions into a SQLite file store:
   questions per second end to end (retrieval, grading, store writes, scoring).
   Target: >= 2,000 questions/s.
2. An HTTP retriever on loopback that sleeps 50 ms per request (the test server in
   ``tests/_servers.py``, run as a separate process): throughput at concurrency 16
   over throughput at concurrency 1. Target: >= 12x.

Run: ``.venv/bin/python benchmarks/eval_overhead.py [--questions 10000]``
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ragmeter
from ragmeter.gold.goldset import GoldSet
from ragmeter.retrievers import HttpRetriever
from ragmeter.store import Store

ROOT = Path(__file__).resolve().parents[1]


def _gold(n: int) -> GoldSet:
    return GoldSet.from_records(
        [
            {"id": f"q{i}", "question": f"question {i}", "relevant": [{"doc": f"d{i % 50}"}]}
            for i in range(n)
        ]
    )


HITS = [{"id": f"d{j}#0", "doc": f"d{j}", "score": float(10 - j)} for j in range(10)]


def instant(question: str, k: int) -> list[dict[str, object]]:
    return HITS[:k]


def bench_instant(n: int) -> float:
    gold = _gold(n)
    with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp) / "runs.db") as store:
        start = time.perf_counter()
        report = ragmeter.evaluate(gold, instant, k=10, store=store)
        elapsed = time.perf_counter() - start
    assert report.n_questions == n and report.n_errors == 0
    return n / elapsed


def _server() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "_servers.py")],
        stdin=subprocess.PIPE,  # the server runs until its stdin closes
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    return proc, url


def bench_http(url: str, n: int, concurrency: int, *, is_async: bool) -> float:
    gold = _gold(n)
    retriever = HttpRetriever(f"{url}/sleep50", timeout=10, is_async=is_async)
    try:
        start = time.perf_counter()
        report = ragmeter.evaluate(
            gold, retriever, k=10, store=Store.memory(), concurrency=concurrency
        )
        elapsed = time.perf_counter() - start
    finally:
        retriever.close()
    assert report.n_errors == 0, report.errors[:1]
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=10_000)
    args = parser.parse_args()

    rate = bench_instant(args.questions)
    print(
        f"instant retriever, {args.questions:,} questions into SQLite: {rate:,.0f} questions/s "
        f"(target >= 2,000: {'ok' if rate >= 2000 else 'MISSED'})"
    )

    proc, url = _server()
    try:
        for is_async in (False, True):
            c1 = bench_http(url, 40, 1, is_async=is_async)
            c16 = bench_http(url, 480, 16, is_async=is_async)
            ratio = c16 / c1
            label = "async httpx client" if is_async else "sync client on worker threads"
            print(
                f"HTTP 50 ms on loopback, {label}: concurrency 1 {c1:.1f} q/s, "
                f"concurrency 16 {c16:.1f} q/s, ratio {ratio:.1f}x "
                f"(target >= 12x: {'ok' if ratio >= 12 else 'MISSED'})"
            )
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
