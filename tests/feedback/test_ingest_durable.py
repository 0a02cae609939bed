"""Issue 19.8: ingest acknowledges a query only once its row is committed.

Found with a real server: SIGKILL 2 s into a burst lost 425 of 6,030 acknowledged
query ids. Here a real ``ragmeter ingest serve`` process takes a burst at
concurrency 16, is killed with SIGKILL mid-burst, and every acknowledged id must
be in the store.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="the ingest server needs the [web] extra")

from _ingest import ingest_process  # noqa: E402
from _net import until  # noqa: E402
from ragmeter.store import Store  # noqa: E402

CONCURRENCY = 16
#: SIGKILL once this many ids are acknowledged (the burst goes on until then).
KILL_AFTER = 500
BURST_TIMEOUT_S = 60.0


async def _burst(base: str, acknowledged: list[str]) -> None:
    """Log queries from CONCURRENCY clients until the server dies; collect ids answered 200."""
    stop_at = time.monotonic() + BURST_TIMEOUT_S

    async def client(n: int) -> None:
        async with httpx.AsyncClient(base_url=base, timeout=10) as http:
            i = 0
            while time.monotonic() < stop_at:
                i += 1
                try:
                    r = await http.post("/api/log", json={"query": f"q {n}-{i}", "hits": []})
                except httpx.HTTPError:
                    return  # the server is gone
                if r.status_code == 200:
                    acknowledged.append(r.json()["query_id"])

    await asyncio.gather(*(client(n) for n in range(CONCURRENCY)))


@pytest.mark.slow
def test_sigkill_mid_burst_loses_no_acknowledged_id(tmp_path: Path) -> None:
    """Issue 19.8: after SIGKILL mid-burst, every query id answered 200 is in the store."""
    db = tmp_path / "log.db"
    Store.open(db).close()
    with ingest_process(db) as server:

        async def burst_then_kill() -> list[str]:
            async with httpx.AsyncClient(base_url=server.base, timeout=30) as http:  # warm up
                assert (await http.post("/api/log", json={"query": "warm"})).status_code == 200
            acknowledged: list[str] = []
            task = asyncio.ensure_future(_burst(server.base, acknowledged))
            await until(
                lambda: len(acknowledged) >= KILL_AFTER,
                timeout=BURST_TIMEOUT_S,
                what=f"{KILL_AFTER} acknowledged ids",
            )
            server.proc.send_signal(signal.SIGKILL)  # mid-burst: requests in flight
            await task
            return acknowledged

        acknowledged = asyncio.run(burst_then_kill())
    assert len(acknowledged) >= KILL_AFTER  # the burst really ran
    with Store.open(db) as store:
        stored = {q.id for q in store.logged_queries()}
    lost = [qid for qid in acknowledged if qid not in stored]
    assert lost == [], f"{len(lost)} of {len(acknowledged)} acknowledged ids lost"


class _FailingStore(Store):
    """A real memory store whose query-log writes fail (a full disk, a dropped connection)."""

    def add_query_log(self, queries: Any, feedback: Any = (), answers: Any = None) -> None:
        raise OSError("database or disk is full")


class _SlowStore(Store):
    """A real memory store whose query-log writes wait until released."""

    release = threading.Event()

    def add_query_log(self, queries: Any, feedback: Any = (), answers: Any = None) -> Any:
        self.release.wait(10)
        return super().add_query_log(queries, feedback, answers)


def _post_all(app: Any, bodies: list[dict[str, Any]]) -> list[httpx.Response]:
    async def go() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return list(await asyncio.gather(*(client.post("/api/log", json=b) for b in bodies)))

    return asyncio.run(go())


def test_a_failed_write_is_503_not_an_acknowledgement() -> None:
    """Issue 19.8: when the row cannot be committed the answer is 503 + Retry-After, never 200."""
    from fastapi import FastAPI

    from ragmeter.feedback.querylog import QueryLogger
    from ragmeter.web.ingest import ingest_router

    with _FailingStore("sqlite://") as store:
        logger = QueryLogger(store)
        app = FastAPI()
        app.include_router(ingest_router(logger))
        answers = _post_all(app, [{"query": f"q{i}"} for i in range(5)])
        assert [a.status_code for a in answers] == [503] * 5
        assert answers[0].headers["retry-after"] == "1"
        assert "disk is full" in answers[0].json()["error"]["message"]
        logger.close()  # the failures were reported to the callers, not kept for later


def test_a_full_queue_answers_503_at_once() -> None:
    """Issue 19.8: with the writer stuck and the bounded queue full, ingest answers 503
    instead of blocking; the rows it acknowledged are all stored once the writer resumes."""
    from fastapi import FastAPI

    from ragmeter.feedback.querylog import QueryLogger
    from ragmeter.web.ingest import ingest_router

    _SlowStore.release.clear()
    with _SlowStore("sqlite://") as store:
        logger = QueryLogger(store, max_pending=2)
        app = FastAPI()
        app.include_router(ingest_router(logger))
        timer = threading.Timer(1.0, _SlowStore.release.set)
        timer.start()
        answers = _post_all(app, [{"query": f"q{i}"} for i in range(8)])
        timer.join()
        codes = [a.status_code for a in answers]
        assert 503 in codes and 200 in codes, codes
        acked = {a.json()["query_id"] for a in answers if a.status_code == 200}
        logger.close()
        assert acked <= {q.id for q in store.logged_queries()}
