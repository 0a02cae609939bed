"""Issue 19.8 benchmark: ingest throughput, and acknowledged-but-lost ids under SIGKILL.

Starts a real ``ragmeter ingest serve`` process on a free loopback port over a fresh
SQLite store (``tests/_ingest.py``, as the tests start it), then

1. load: ``N_LOAD`` logged queries from ``CONCURRENCY`` clients; prints requests/s and the
   p50/p99 latency of an acknowledgement (a 200 means the row is committed);
2. fault: a second server takes a burst from the same clients and is killed with SIGKILL
   once ``KILL_AFTER`` ids are acknowledged; prints how many acknowledged ids are missing
   from the store (target 0; before the fix 425 of 6,030 were lost).

    .venv/bin/python benchmarks/ingest_durability.py [--json]
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _ingest import ingest_process  # noqa: E402 - started as the tests start it
from ragmeter.store import Store  # noqa: E402

CONCURRENCY = 32
N_LOAD = 4_000
KILL_AFTER = 2_000


def _warm(base: str) -> None:
    httpx.post(base + "/api/log", json={"query": "warm"}, timeout=30).raise_for_status()


async def _clients(base: str, budget: int, acknowledged: list[str], latencies: list[float]) -> None:
    sent = 0

    async def client(n: int) -> None:
        nonlocal sent
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            while sent < budget:
                sent += 1
                started = time.perf_counter()
                try:
                    r = await http.post("/api/log", json={"query": f"q {n} {sent}"})
                except httpx.HTTPError:
                    return
                if r.status_code == 200:
                    latencies.append(time.perf_counter() - started)
                    acknowledged.append(r.json()["query_id"])

    await asyncio.gather(*(client(n) for n in range(CONCURRENCY)))


def load(db: Path) -> dict[str, Any]:
    with ingest_process(db) as server:  # stopped with SIGINT at the end
        _warm(server.base)
        acknowledged: list[str] = []
        latencies: list[float] = []
        started = time.perf_counter()
        asyncio.run(_clients(server.base, N_LOAD, acknowledged, latencies))
        elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "requests": len(acknowledged),
        "req_per_s": len(acknowledged) / elapsed,
        "p50_ms": latencies[len(latencies) // 2] * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99)] * 1000,
    }


def fault(db: Path) -> dict[str, Any]:
    acknowledged: list[str] = []
    with ingest_process(db) as server:
        _warm(server.base)

        async def burst_then_kill() -> None:
            task = asyncio.ensure_future(_clients(server.base, 10 * KILL_AFTER, acknowledged, []))
            while len(acknowledged) < KILL_AFTER and not task.done():
                await asyncio.sleep(0.005)
            server.proc.send_signal(signal.SIGKILL)
            await task

        asyncio.run(burst_then_kill())
    with Store.open(db) as store:
        stored = {q.id for q in store.logged_queries()}
    lost = sum(1 for qid in acknowledged if qid not in stored)
    return {"acknowledged": len(acknowledged), "lost": lost}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        results = {"load": load(Path(tmp) / "load.db"), "sigkill": fault(Path(tmp) / "kill.db")}
    if "--json" in sys.argv:
        print(json.dumps(results, indent=2))
    else:
        r, k = results["load"], results["sigkill"]
        print(
            f"ingest, concurrency {CONCURRENCY}: {r['requests']} acknowledged, "
            f"{r['req_per_s']:.0f} req/s, p50 {r['p50_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms"
        )
        print(f"SIGKILL mid-burst: {k['lost']} of {k['acknowledged']} acknowledged ids lost")
    return 0 if results["sigkill"]["lost"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
