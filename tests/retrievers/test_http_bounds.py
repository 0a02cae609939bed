"""One HTTP policy (issue 13.3) and bounded bodies (issue 19.4), against real loopback servers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import ragmeter
from _paths import ROOT
from _servers import MIB, QuietHandler, serve_handler
from _servers import gzip_bomb as shared_gzip_bomb
from ragmeter._http import RetryPolicy, parse_retry_after
from ragmeter.documents import Hit
from ragmeter.errors import RetrieverError
from ragmeter.evaluation.generation import GenerationError, HttpGenerator
from ragmeter.gold.goldset import GoldSet
from ragmeter.retrievers import HttpRetriever
from ragmeter.store import Store

SRC = ROOT / "src" / "ragmeter"
#: /trickle's body: a good, empty answer that takes 4 s to arrive, 0.2 s a byte. A client
#: whose 1 s timeout bounds each read, not the whole attempt, reads it all and succeeds.
TRICKLED = b'{"hits": []}'.ljust(20)
TRICKLE_GAP_S = 0.2


def gzip_bomb() -> bytes:
    """~1 MB of valid gzip that inflates to 1 GiB of JSON-looking bytes."""
    return shared_gzip_bomb(b'{"hits": [], "pad": "', b'"}')


def _hits(n: int) -> bytes:
    return json.dumps(
        {"hits": [{"id": f"d{i}#0", "doc": f"d{i}", "score": float(n - i)} for i in range(n)]}
    ).encode()


class _Bodies(QuietHandler):
    """Routes: /huge (64 MB, declared), /chunked (64 MB, no length), /bomb (gzip bomb),
    /trickle (a good answer, 1 byte every 0.2 s), /many (10,000 hits), /date (429 with an HTTP-date
    Retry-After once, then good)."""

    seen: dict[str, int] = {}  # noqa: RUF012 - per-server subclass replaces it

    def _head(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen[self.path] = self.seen.get(self.path, 0) + 1
        with contextlib.suppress(OSError):  # the client gave up, as it should
            self._route()

    def _route(self) -> None:
        path = self.path.split("?")[0]
        if path == "/huge":
            self._head(200, {"Content-Length": str(64 * MIB)})
            for _ in range(64):
                self.wfile.write(b" " * MIB)
        elif path == "/chunked":
            self._head(200, {"Transfer-Encoding": "chunked"})
            block = b" " * MIB
            for _ in range(64):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(block), block))
            self.wfile.write(b"0\r\n\r\n")
        elif path == "/bomb":
            body = gzip_bomb()
            self._head(200, {"Content-Encoding": "gzip", "Content-Length": str(len(body))})
            self.wfile.write(body)
        elif path == "/trickle":
            self._head(200, {"Content-Length": str(len(TRICKLED))})
            for byte in TRICKLED:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(TRICKLE_GAP_S)
        elif path == "/many":
            body = _hits(10_000)
            self._head(200, {"Content-Length": str(len(body))})
            self.wfile.write(body)
        elif path == "/date":
            if self.seen[self.path] == 1:
                self._head(
                    429, {"Retry-After": "Thu, 01 Jan 1970 00:00:00 GMT", "Content-Length": "0"}
                )
            else:
                body = json.dumps({"hits": ["a"], "answer": "42"}).encode()
                self._head(200, {"Content-Length": str(len(body))})
                self.wfile.write(body)
        else:
            self._head(404, {"Content-Length": "0"})


#: Requests per path, by the base URL of each test's server.
SEEN: dict[str, dict[str, int]] = {}


@pytest.fixture
def bodies() -> Iterator[str]:
    handler = type("Bodies", (_Bodies,), {"seen": {}})
    with serve_handler(handler) as base_url:
        SEEN[base_url] = handler.seen
        yield base_url
    del SEEN[base_url]


def _aretrieve(retriever: HttpRetriever, question: str, k: int) -> list[Hit]:
    async def main() -> list[Hit]:
        try:
            return await retriever.aretrieve(question, k)
        finally:
            await retriever.aclose()

    return asyncio.run(main())


@pytest.mark.parametrize("route", ["/huge", "/chunked"], ids=["content-length", "chunked"])
def test_a_body_over_the_limit_fails_fast(bodies: str, route: str) -> None:
    """Issue 19.4: a 64 MB answer over a 1 MB limit is one clear, unretried error."""
    retriever = HttpRetriever(bodies + route, retries=2, backoff=0.01, max_response_bytes=MIB)
    with pytest.raises(RetrieverError, match="over the 1,048,576-byte limit"):
        retriever.retrieve("q", 10)
    with pytest.raises(RetrieverError, match="--max-response-bytes"):
        _aretrieve(retriever, "q", 10)
    retriever.close()
    assert SEEN[bodies][route] == 2  # one attempt each, never retried


def test_a_gzip_bomb_stops_at_the_limit_with_little_memory(bodies: str) -> None:
    """Issue 19.4: ~1 MB of gzip inflating to 1 GiB fails at the (decompressed) limit, fast,
    without ever holding much more than the limit in memory (sync and async)."""
    assert len(gzip_bomb()) < 2 * MIB
    retriever = HttpRetriever(bodies + "/bomb", retries=0, max_response_bytes=4 * MIB)
    tracemalloc.start()
    try:
        with pytest.raises(RetrieverError, match="is over the 4,194,304-byte limit"):
            retriever.retrieve("q", 10)
        with pytest.raises(RetrieverError, match="is over the 4,194,304-byte limit"):
            _aretrieve(retriever, "q", 10)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        retriever.close()
    assert peak < 32 * MIB


def test_a_trickled_body_ends_at_the_deadline(bodies: str) -> None:
    """Issue 19.4: a body trickled a byte at a time ends at the per-request deadline
    (the timeout bounds the whole attempt, not each read: each read waits 0.2 s, and a
    client bounding reads would read the good answer whole). How close to 1 s it stops is
    benchmarks/promptness.py's."""
    retriever = HttpRetriever(bodies + "/trickle", timeout=1.0, retries=0)
    for call in (retriever.retrieve, lambda q, k: _aretrieve(retriever, q, k)):
        with pytest.raises(RetrieverError, match="timed out after 1 s"):
            call("q", 10)
    retriever.close()


def test_only_the_top_k_hits_are_kept_and_stored(bodies: str, store: Store) -> None:
    """Issue 19.4: a retriever answering 10,000 hits for k=10 stores 10 per question."""
    gold = GoldSet.from_records(
        [{"id": "q1", "question": "cats?", "relevant": [{"doc": "d0"}]}], name="g"
    )
    retriever = HttpRetriever(bodies + "/many")
    report = ragmeter.evaluate(gold, retriever, k=10, store=store)
    retriever.close()
    (result,) = store.results(report.run.id)
    assert len(result.hits) == 10
    assert [h.doc for h in result.hits[:2]] == ["d0", "d1"]


def test_http_generator_bounds_and_policy(bodies: str) -> None:
    """Issues 13.3 and 19.4: the HTTP generator reads bodies the same bounded way."""
    chunks = [Hit(id="a#0", doc="a", text="x")]
    big = HttpGenerator(bodies + "/bomb", max_response_bytes=MIB, retries=0)
    with pytest.raises(GenerationError, match="over the 1,048,576-byte limit"):
        big.generate("q", chunks)
    slow = HttpGenerator(bodies + "/trickle", timeout=1.0, retries=0)
    with pytest.raises(GenerationError, match="timed out after 1 s"):
        slow.generate("q", chunks)
    big.close()
    slow.close()


def test_http_generator_takes_transport_and_sleep() -> None:
    """Issue 13.3: HttpGenerator takes transport= and sleep= like JudgeClient, and
    honours Retry-After through the shared policy."""
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if len(calls) == 1:
            return httpx.Response(503, headers={"Retry-After": "3"})
        if len(calls) == 2:
            return httpx.Response(500)
        return httpx.Response(200, json={"answer": "30 days", "context_ids": ["a#0"]})

    slept: list[float] = []
    gen = HttpGenerator(
        "http://gen.test/answer", transport=httpx.MockTransport(handler), sleep=slept.append
    )
    generated = gen.generate("q", [Hit(id="a#0", doc="a", text="x")])
    assert generated.answer == "30 days" and len(calls) == 3
    assert slept[0] == 3.0 and 0.15 <= slept[1] <= 0.5


def test_retriever_honours_an_http_date_retry_after(bodies: str) -> None:
    """Issue 13.3: one Retry-After parser for all callers; the retriever now reads the
    HTTP-date form too (a date in the past means retry at once)."""
    slept: list[float] = []
    retriever = HttpRetriever(bodies + "/date", retries=1, backoff=30.0, sleep=slept.append)
    assert [h.id for h in retriever.retrieve("q", 3)] == ["a"]
    assert slept == [0.0]  # not the 30 s backoff
    retriever.close()


def test_one_retry_policy_in_the_source() -> None:
    """Issue 13.3: one Retryable class and one Retry-After parser, in ragmeter/_http.py."""
    retryables, parsers = [], []
    for path in SRC.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if re.search(r"^class _?Retryable\b", text, re.M):
            retryables.append(path.name)
        if re.search(r"""get\(\s*["']retry-after""", text, re.I):
            parsers.append(path.name)
    assert retryables == ["_http.py"] and parsers == ["_http.py"]
    assert RetryPolicy(jitter=0).delay(0, parse_retry_after({"retry-after": "5"})) == 5.0


def test_a_callable_returning_too_many_hits_stores_k(store: Store) -> None:
    """Issue 19.4: the cut to k happens where hits are stored, for every retriever."""
    gold = GoldSet.from_records(
        [{"id": "q1", "question": "cats?", "relevant": [{"doc": "d0"}]}], name="g"
    )

    def flood(question: str, k: int) -> list[dict[str, Any]]:
        return [{"id": f"d{i}#0", "doc": f"d{i}", "score": -float(i)} for i in range(10_000)]

    report = ragmeter.evaluate(gold, flood, k=10, store=store)
    (result,) = store.results(report.run.id)
    assert len(result.hits) == 10
    assert report.metrics["hit@10"] == 1.0


def test_max_response_bytes_on_the_command_line(bodies: str, tmp_path: Path) -> None:
    """Issue 19.4: --max-response-bytes on retrieve and eval bounds the HTTP retriever,
    and a resumed run keeps the limit it was started with."""
    from click.testing import CliRunner

    from ragmeter.cli import main

    runner = CliRunner()
    url = bodies + "/many"
    out = runner.invoke(
        main, ["retrieve", "cats?", "--retriever", url, "--max-response-bytes", "1000"]
    )
    assert out.exit_code == 2 and "over the 1,000-byte limit" in out.output, out.output
    out = runner.invoke(main, ["retrieve", "cats?", "--retriever", url, "-k", "2", "--json"])
    assert out.exit_code == 0 and len(json.loads(out.output)["rows"]) == 2, out.output
    gold = tmp_path / "gold.yaml"
    gold.write_text("- id: q1\n  question: cats?\n  relevant: [{doc: d0}]\n", encoding="utf-8")
    store = ["--store", str(tmp_path / "runs.db")]
    args = ["eval", "--gold", str(gold), "--retriever", url, "--max-response-bytes", "1000"]
    out = runner.invoke(main, [*args, *store])
    assert out.exit_code == 3 and "over the 1,000-byte limit" in out.output, out.output
    with Store.open(tmp_path / "runs.db") as opened:
        assert opened.get_run(1).config["retriever"]["max_response_bytes"] == 1000
