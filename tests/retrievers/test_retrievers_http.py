"""The HTTP retriever adapter against a real server on loopback (issue 3)."""

from __future__ import annotations

import asyncio
import gc
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from _servers import ServerState, closed_port, serve
from ragmeter.documents import Hit
from ragmeter.errors import ConfigError, RetrieverError
from ragmeter.retrievers import HttpRetriever, parse_headers, resolve_retriever

# Short waits so the whole file runs in a few seconds.
FAST = {"timeout": 2.0, "retries": 3, "backoff": 0.01}


@pytest.fixture
def server() -> Iterator[ServerState]:
    with serve(slow_seconds=1.0) as state:
        yield state


def _aget(retriever: HttpRetriever, question: str, k: int) -> list[Hit]:
    async def main() -> list[Hit]:
        try:
            return await retriever.aretrieve(question, k)
        finally:
            await retriever.aclose()

    return asyncio.run(main())


def test_good_hits_async_and_sync(server: ServerState) -> None:
    """Issue 3: POST {"question", "k"} and read {"hits": [...]}, from async and sync code."""
    retriever = HttpRetriever(server.url("/good"), **FAST)
    hits = _aget(retriever, "how do I install?", 3)
    assert [hit.doc for hit in hits] == ["doc0", "doc1", "doc2"]
    assert hits[0] == Hit(id="doc0#0", doc="doc0", score=10.0, text="how do I install?")
    assert server.bodies[0] == {"question": "how do I install?", "k": 3}
    assert [hit.id for hit in retriever.retrieve("q", 2)] == ["doc0#0", "doc1#0"]
    retriever.close()
    retriever.close()  # twice is fine


def test_answer_is_kept_beside_hits(server: ServerState) -> None:
    """Issue 3: an "answer" next to the hits is available through retrieve_full."""
    retriever = HttpRetriever(server.url("/answer"), **FAST)
    try:
        output = retriever.retrieve_full("q", 1)
    finally:
        retriever.close()
    assert output.answer == "42"
    assert [hit.doc for hit in output.hits] == ["doc0"]


def test_500_twice_then_ok_is_retried(server: ServerState) -> None:
    """Issue 3: HTTP 5xx is retried with backoff; the third attempt succeeds."""
    retriever = HttpRetriever(server.url("/flaky"), **FAST)
    hits = _aget(retriever, "q", 2)
    assert len(hits) == 2
    assert server.counts["/flaky"] == 3


def test_429_honours_retry_after(server: ServerState) -> None:
    """Issue 3: HTTP 429 is retried (Retry-After: 0 means at once)."""
    slept: list[float] = []
    retriever = HttpRetriever(
        server.url("/rate"), timeout=2.0, retries=1, backoff=5.0, sleep=slept.append
    )
    try:
        hits = retriever.retrieve("q", 1)
    finally:
        retriever.close()
    assert len(hits) == 1
    assert server.counts["/rate"] == 2
    assert slept == [0.0]  # Retry-After won over the 5 s backoff


def test_always_500_fails_after_retries(server: ServerState) -> None:
    """Issue 3: a service that keeps failing gives a clear error after the retries."""
    retriever = HttpRetriever(server.url("/always500"), **FAST)
    with pytest.raises(RetrieverError) as info:
        _aget(retriever, "q", 2)
    assert str(info.value) == (
        f"HTTP 500 from {server.url('/always500')} after 3 retries: internal error"
    )
    assert server.counts["/always500"] == 4


def test_404_is_not_retried(server: ServerState) -> None:
    """Issue 3: a 4xx is the caller's mistake; retrying cannot help."""
    retriever = HttpRetriever(server.url("/nope"), **FAST)
    with pytest.raises(RetrieverError) as info:
        _aget(retriever, "q", 2)
    assert str(info.value) == f"HTTP 404 from {server.url('/nope')}: no such route"
    assert server.counts["/nope"] == 1


def test_timeout_is_retried_then_reported(server: ServerState) -> None:
    """Issue 3: a service hanging past the timeout fails that question, not the run."""
    retriever = HttpRetriever(server.url("/slow"), timeout=0.2, retries=1, backoff=0.01)
    with pytest.raises(RetrieverError) as info:
        _aget(retriever, "q", 2)
    # Two 0.2 s attempts, each cut at the timeout, not the server's 1 s sleep (the wall time
    # is benchmarks/promptness.py's "retriever timeout" line).
    assert str(info.value) == f"timed out after 0.2 s: {server.url('/slow')} after 1 retry"
    assert server.counts["/slow"] == 2


def test_connection_refused(server: ServerState) -> None:
    """Issue 3: nothing listening gives "connection refused", after the retries."""
    url = f"http://127.0.0.1:{closed_port()}/search"
    retriever = HttpRetriever(url, **FAST)
    with pytest.raises(RetrieverError) as info:
        _aget(retriever, "q", 2)
    assert str(info.value) == f"connection refused: {url} after 3 retries"
    with pytest.raises(RetrieverError, match="^connection refused: "):
        HttpRetriever(url, timeout=1.0, retries=0).retrieve("q", 1)


def test_malformed_json_is_not_retried(server: ServerState) -> None:
    """Issue 3: a 200 whose body is not JSON is a malformed answer, reported with its start."""
    retriever = HttpRetriever(server.url("/badjson"), **FAST)
    with pytest.raises(RetrieverError) as info:
        _aget(retriever, "q", 2)
    message = str(info.value)
    assert message.startswith(f"invalid JSON from {server.url('/badjson')}: ")
    assert message.endswith(": <html>not json{")
    assert server.counts["/badjson"] == 1


def test_malformed_hits_name_the_hit(server: ServerState) -> None:
    """Issue 3: a hit without id or doc is reported by number and source."""
    retriever = HttpRetriever(server.url("/badhits"), **FAST)
    with pytest.raises(RetrieverError) as info:
        _aget(retriever, "q", 2)
    assert str(info.value) == (
        f'malformed hit 2 from {server.url("/badhits")}: missing "id" and "doc"'
    )


def test_headers_are_sent_but_never_stored(server: ServerState) -> None:
    """Issue 3: auth headers reach the service and stay out of the stored config."""
    retriever = resolve_retriever(
        server.url("/headers"), timeout=2.0, headers={"Authorization": "Bearer s3cret"}
    )
    assert isinstance(retriever, HttpRetriever)
    hits = _aget(retriever, "q", 1)
    assert hits[0].metadata == {"auth": "Bearer s3cret"}
    assert "s3cret" not in repr(retriever.config)
    assert retriever.config["headers"] == ["Authorization"]
    assert retriever.config["timeout"] == 2.0


def test_url_password_is_redacted() -> None:
    """Issue 3: a password in the URL never reaches the spec, config or messages."""
    retriever = HttpRetriever("https://bob:hunter2@search.example/api")
    assert retriever.spec == "https://bob:***@search.example/api"
    assert "hunter2" not in repr(retriever.config)


def test_many_concurrent_questions_share_one_lazy_client(server: ServerState) -> None:
    """Issue 3: evaluate() drives one retriever from many tasks on one loop, and from threads."""
    retriever = HttpRetriever(server.url("/good"), **FAST)

    async def main() -> list[list[Hit]]:
        try:
            return await asyncio.gather(*(retriever.aretrieve(f"q{i}", 2) for i in range(40)))
        finally:
            await retriever.aclose()

    results = asyncio.run(main())
    assert [hits[0].text for hits in results] == [f"q{i}" for i in range(40)]
    # A second event loop (e.g. a resumed run) gets a fresh client.
    assert len(_aget(retriever, "again", 1)) == 1

    with ThreadPoolExecutor(max_workers=8) as pool:
        threaded = list(pool.map(lambda i: retriever.retrieve(f"t{i}", 1), range(40)))
    retriever.close()
    assert [hits[0].text for hits in threaded] == [f"t{i}" for i in range(40)]
    assert server.counts["/good"] == 81


def test_close_closes_an_async_client_whose_loop_is_idle(server: ServerState) -> None:
    """Issue 3: close() from sync code also releases the async client of an idle loop."""
    retriever = HttpRetriever(server.url("/good"), **FAST)
    loop = asyncio.new_event_loop()
    try:
        assert len(loop.run_until_complete(retriever.aretrieve("q", 1))) == 1
        retriever.close()
        assert retriever._aclient is None
    finally:
        loop.close()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://", "is not an http(s) URL"),
        ("ftp://example.com/x", "is not an http(s) URL"),
    ],
    ids=["no-host", "wrong-scheme"],
)
def test_bad_urls_are_config_errors(url: str, message: str) -> None:
    """Issue 3: a URL that cannot work is an input error (exit 2), not a per-question error."""
    with pytest.raises(ConfigError, match=re.escape(message)):
        HttpRetriever(url)


def test_parse_headers() -> None:
    """Issue 3: --header "Name: value" options, with a clear error for a bad one."""
    assert parse_headers(["Authorization: Bearer a:b", "X-Team:  search "]) == {
        "Authorization": "Bearer a:b",
        "X-Team": "search",
    }
    with pytest.raises(ConfigError) as info:
        parse_headers(["X-Ok: 1", "Bearer abc"])
    assert str(info.value) == 'header number 2 must look like "Name: value"'


def test_asyncio_run_without_aclose_leaks_nothing(server: ServerState) -> None:
    """Issue 3: a caller that forgets aclose() still gets its sockets closed when
    asyncio.run() ends (an unclosed socket would fail this test as a ResourceWarning)."""
    retriever = HttpRetriever(server.url("/good"), **FAST)
    for _ in range(2):  # and a second loop gets a fresh client
        assert len(asyncio.run(retriever.aretrieve("q", 1))) == 1
    retriever.close()
    assert retriever._aclient is None
    del retriever
    gc.collect()


def test_loop_session_doctest() -> None:
    """Issue 3: the per-loop session behind the async client (its docstring example)."""
    import doctest

    import ragmeter.executors._aio

    failures, tried = doctest.testmod(ragmeter.executors._aio)
    assert tried > 0 and failures == 0
