"""Issue 19: the servers' request checks, found by a red-team pass with real processes.

- 19.6 DNS rebinding: ``Host: attacker.example`` on a raw socket to a real
  ``ragmeter serve`` / ``ragmeter ingest serve`` process;
- 19.7 CSRF: what a ``<form enctype="text/plain">`` and a urlencoded form send;
- 19.12 ``?token=`` only to open a page, no off-site redirect, a bounded runs page.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="the servers need the [web] extra")

from fastapi.testclient import TestClient  # noqa: E402

from _net import free_port, process_listening, wait_until
from _web_fixtures import build_small  # noqa: E402
from ragmeter.store import Store  # noqa: E402
from ragmeter.web.app import create_app  # noqa: E402
from ragmeter.web.guard import allowed_hosts, host_of  # noqa: E402
from ragmeter.web.runs import RUNS_PAGE_SIZE  # noqa: E402

START_TIMEOUT_S = 30.0
TOKEN = "t0ken-19"
LOCAL = "http://127.0.0.1"


def raw_request(port: int, request: bytes) -> tuple[int, bytes]:
    """Send bytes as they are on a raw socket; return the status and the whole answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1]), answer


def _http(method: str, path: str, host: str, body: bytes = b"", **headers: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", "Connection: close"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    if method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class Server:
    def __init__(self, args: list[str]) -> None:
        self.port = free_port()
        self.name = args[0]
        command = [sys.executable, "-m", "ragmeter", *args, "--port", str(self.port)]
        self.proc = subprocess.Popen(command, env={**os.environ, "CI": ""})
        wait_until(self.listening, timeout=START_TIMEOUT_S, what=f"{args} to listen")

    def listening(self) -> bool:
        return process_listening(self.proc, self.port, self.name)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("guard") / "runs.db"
    with Store.open(path) as store:
        build_small(store)
    return path


@pytest.fixture(scope="module", params=["dashboard", "ingest"])
def server(request: pytest.FixtureRequest, store_path: Path) -> Iterator[Server]:
    extra = ["--store", str(store_path), "--allowed-host", "rag.internal"]
    args = ["serve", *extra] if request.param == "dashboard" else ["ingest", "serve", *extra]
    started = Server(args)
    yield started
    started.stop()


def _counts(store_path: Path) -> tuple[int, int]:
    with Store.open(store_path) as store:
        counts: tuple[int, int] = store.query_log_counts()
    return counts


def test_a_foreign_host_gets_421_and_no_data(server: Server) -> None:
    """Issue 19.6: `Host: attacker.example` (DNS rebinding) is refused with 421 and no data;
    the loopback forms, the bound host and --allowed-host are answered."""
    path = "/api/runs" if "ingest" not in server.proc.args else "/api/log"
    for host in ("attacker.example", "attacker.example:80", "127.0.0.1.attacker.example", ""):
        status, answer = raw_request(server.port, _http("GET", path, host))
        assert status == 421, (host, answer)
        assert b"base" not in answer and b"better" not in answer
        assert b"--allowed-host" in answer
    for host in (f"127.0.0.1:{server.port}", f"localhost:{server.port}", "[::1]", "rag.internal"):
        status, answer = raw_request(server.port, _http("GET", path, host))
        assert status in (200, 405), (host, answer)  # the ingest API has no GET
    status, answer = raw_request(server.port, _http("GET", "/api/runs", "rag.internal"))
    if "ingest" not in server.proc.args:
        assert status == 200 and b"better" in answer


# What a page on another site can send without a CORS preflight.
FORMS = {
    "text-plain-form": ("text/plain", b'{"query": "forged", "x": "=1"}'),
    "urlencoded-form": ("application/x-www-form-urlencoded", b"query_id=q1&thumbs_up=false"),
    "no-content-type": ("", b'{"query": "forged"}'),
}


@pytest.mark.parametrize("form", list(FORMS), ids=list(FORMS))
@pytest.mark.parametrize("endpoint", ["/api/log", "/api/feedback"])
def test_cross_site_form_posts_are_refused_and_store_nothing(
    server: Server, store_path: Path, form: str, endpoint: str
) -> None:
    """Issue 19.7: /api/log and /api/feedback (standalone and in the dashboard) take only
    application/json: a text/plain or urlencoded form post is 415 (403 with a foreign
    Origin, as a browser sends it) and writes nothing."""
    content_type, body = FORMS[form]
    before = _counts(store_path)
    headers = {"Content_Type": content_type} if content_type else {}
    status, answer = raw_request(server.port, _http("POST", endpoint, "127.0.0.1", body, **headers))
    assert status == 415, answer
    assert b"application/json" in answer
    status, _ = raw_request(
        server.port,
        _http("POST", endpoint, "127.0.0.1", body, Origin="http://attacker.example", **headers),
    )
    assert status == 403
    assert _counts(store_path) == before


def test_json_posts_still_work_from_the_same_origin(server: Server, store_path: Path) -> None:
    """Issue 19.7: a JSON post (with this server's Origin) is stored and acknowledged. The
    Host carries the port, as a browser sends it: the Origin must match both (issue 27.6)."""
    before = _counts(store_path)
    body = json.dumps({"query": "same origin"}).encode()
    origin = f"http://127.0.0.1:{server.port}"
    status, answer = raw_request(
        server.port,
        _http(
            "POST", "/api/log", f"127.0.0.1:{server.port}", body,
            Content_Type="application/json", Origin=origin,
        ),
    )  # fmt: skip
    assert status == 200, answer
    assert _counts(store_path) == (before[0] + 1, before[1])


def test_label_post_as_a_form_is_refused(store_path: Path) -> None:
    """Issue 19.7: the dashboard's label POST stays closed to a form post: 415 before the
    body is read, as every POST since issue 27.6."""
    with TestClient(create_app(str(store_path)), base_url=LOCAL) as client:
        form = client.post("/api/labels", content=b"item_id=q01&supported=true",
                           headers={"content-type": "application/x-www-form-urlencoded"})  # fmt: skip
        assert form.status_code == 415
        items = client.get("/api/labels").json()["items"]
        assert items and all(item["label"] is None for item in items)


# -- 19.12: the token and the runs page ---------------------------------------------


def test_query_token_opens_a_page_only(store_path: Path) -> None:
    """Issue 19.12: ?token= is refused on /api/* and on POSTs; on a page load it becomes an
    HttpOnly SameSite cookie and a redirect that never leaves the site."""
    app = create_app(str(store_path), token=TOKEN)
    with TestClient(app, base_url=LOCAL, follow_redirects=False) as client:
        assert client.get(f"/api/runs?token={TOKEN}").status_code == 401
        assert client.get(f"/api/runs/1?token={TOKEN}").status_code == 401
        label = {"item_id": "q01", "run": 1, "supported": True}
        assert client.post(f"/api/labels?token={TOKEN}", json=label).status_code == 401
        assert client.post(f"/label?token={TOKEN}", json=label).status_code == 401
        assert client.get("/api/labels").status_code == 401
    for path in ("//evil.example/x", "/\\evil.example/x", "///evil.example/x"):
        answer = _raw_get(app, f"{path}?token={TOKEN}&a=1")
        assert answer.status_code == 303, path
        location = answer.headers["location"]
        assert location == "/evil.example/x?a=1", (path, location)
        assert httpx.URL(LOCAL).join(location).host == "127.0.0.1"
        cookie = answer.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie


def _raw_get(app: Any, raw_path: str) -> httpx.Response:
    """GET ``raw_path`` as sent (a plain httpx string would normalise ``//host``)."""

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=LOCAL) as client:
            url = httpx.URL(LOCAL).copy_with(raw_path=raw_path.encode())
            return await client.get(url)

    return asyncio.run(go())


def _add_runs(store: Store, n: int) -> None:
    from ragmeter.gold.goldset import GoldSet

    gold = GoldSet.from_records([{"id": "q1", "question": "refunds?", "relevant": ["r.md"]}])
    digest = store.save_gold(gold)
    for i in range(n):
        run = store.create_run(name=f"run-{i}", note=f"change {i}", gold_hash=digest,
                               retriever="bm25", config={"chunk": {"size": 400 + i}}, k=10,
                               level="doc", commit=f"{i:08x}")  # fmt: skip
        store.set_metrics(run.id, {"hit@5": i / n, "mrr": 0.5, "latency_p95_ms": 80.0 + i}, {})
        store.finish_run(run.id, "complete", n_questions=1, n_errors=0)


def test_runs_page_is_paginated(tmp_path: Path) -> None:
    """Issue 19.12: the runs page shows the newest RUNS_PAGE_SIZE runs, older ones a page on;
    the API still lists every run."""
    db = tmp_path / "runs.db"
    n = RUNS_PAGE_SIZE + 20
    with Store.open(db) as store:
        _add_runs(store, n)
    with TestClient(create_app(str(db)), base_url=LOCAL) as client:
        first = client.get("/").text
        assert f"{n} in the store" in first and "page 1 of 2" in first
        assert 'href="/runs/21"' in first and f'href="/runs/{n}"' in first
        assert 'href="/runs/20"' not in first and 'href="/?page=2"' in first
        second = client.get("/?page=2").text
        assert 'href="/runs/1"' in second and 'href="/runs/21"' not in second
        assert len(client.get("/api/runs").json()["runs"]) == n


@pytest.mark.slow
def test_runs_page_with_1000_runs_is_small(tmp_path: Path) -> None:
    """Issue 19.12: 1,000 runs made a 3 MB runs page; a page now stays under 400 KB."""
    db = tmp_path / "runs.db"
    with Store.open(db) as store:
        _add_runs(store, 1_000)
    with TestClient(create_app(str(db)), base_url=LOCAL) as client:
        assert len(client.get("/").content) < 400_000


def test_allowed_hosts_forms() -> None:
    """Issue 19.6: the bound host and the loopback forms; ports and brackets do not matter."""
    assert allowed_hosts("0.0.0.0") == {"localhost", "127.0.0.1", "::1"}
    assert "10.0.0.5" in allowed_hosts("10.0.0.5") and "::1" in allowed_hosts("[::1]")
    assert host_of("[::1]:8765") == "::1" and host_of("RAG.internal:443") == "rag.internal"
