"""A real HTTP retriever service on loopback for tests (stdlib only).

``serve()`` starts a ``ThreadingHTTPServer`` on 127.0.0.1 with a free port in a
background thread and records every request, so tests can assert how many
attempts a client made and what it sent. Routes (all ``POST``):

- ``/good``       ``k`` hits ``doc0..`` with decreasing scores
- ``/answer``     good hits plus ``"answer": "42"``
- ``/flaky``      HTTP 500 for the first two requests, then good hits
- ``/always500``  HTTP 500 every time
- ``/rate``       HTTP 429 with ``Retry-After: 0`` once, then good hits
- ``/slow``       sleeps ``slow_seconds`` before answering
- ``/sleep50``    sleeps 50 ms, then good hits (throughput benchmarks)
- ``/badjson``    200 with a body that is not JSON
- ``/badhits``    200 with a hit that has neither id nor doc
- ``/headers``    one hit whose metadata echoes the Authorization header
- anything else   HTTP 404

For hostile bodies (``test_http_bounds.py``, ``test_judge_bounds.py``): ``QuietHandler``,
a base handler that logs nothing and ignores a client that stopped reading, and
``gzip_bomb(head, tail)``, ~1 MB of gzip that inflates to 1 GiB.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import zlib
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class ServerState:
    """What the server saw; shared by all handler threads."""

    base_url: str = ""
    slow_seconds: float = 1.0
    counts: Counter[str] = field(default_factory=Counter)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"


def _good_hits(question: str, k: int) -> list[dict[str, Any]]:
    return [
        {"id": f"doc{i}#0", "doc": f"doc{i}", "score": float(10 - i), "text": question}
        for i in range(k)
    ]


class _Handler(BaseHTTPRequestHandler):
    # Keep-alive like a real service, so clients reuse connections.
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, delayed ACKs add ~40 ms each.
    disable_nagle_algorithm = True
    state: ServerState  # set on the per-server subclass

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the client gave up (timeout test); nothing to answer

    def _json(self, status: int, data: object, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(data).encode(), headers)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        state = self.state
        with state.lock:
            state.counts[self.path] += 1
            count = state.counts[self.path]
            state.bodies.append(body)
        question, k = str(body.get("question", "")), int(body.get("k", 10))
        path = self.path
        if path == "/good":
            self._json(200, {"hits": _good_hits(question, k)})
        elif path == "/answer":
            self._json(200, {"hits": _good_hits(question, k), "answer": "42"})
        elif path == "/flaky":
            if count <= 2:
                self._send(500, b"index warming up")
            else:
                self._json(200, {"hits": _good_hits(question, k)})
        elif path == "/always500":
            self._send(500, b"internal error")
        elif path == "/rate":
            if count == 1:
                self._send(429, b"slow down", {"Retry-After": "0"})
            else:
                self._json(200, {"hits": _good_hits(question, k)})
        elif path == "/slow":
            time.sleep(state.slow_seconds)
            self._json(200, {"hits": _good_hits(question, k)})
        elif path == "/sleep50":
            time.sleep(0.05)
            self._json(200, {"hits": _good_hits(question, k)})
        elif path == "/badjson":
            self._send(200, b"<html>not json{")
        elif path == "/badhits":
            self._json(200, {"hits": [{"id": "a", "doc": "a"}, {"score": 1.0}]})
        elif path == "/headers":
            auth = self.headers.get("Authorization", "")
            self._json(200, {"hits": [{"id": "a", "metadata": {"auth": auth}}]})
        else:
            self._send(404, b"no such route")


class _Server(ThreadingHTTPServer):
    # The default backlog of 5 drops connections when many questions arrive at once.
    request_queue_size = 128


@contextmanager
def serve(slow_seconds: float = 1.0) -> Iterator[ServerState]:
    """Run the test service until the ``with`` block ends.

    >>> with serve() as server:  # doctest: +SKIP
    ...     httpx.post(server.url("/good"), json={"question": "q", "k": 2}).json()
    """
    state = ServerState(slow_seconds=slow_seconds)
    with serve_handler(type("Handler", (_Handler,), {"state": state})) as base_url:
        state.base_url = base_url
        yield state


@contextmanager
def serve_handler(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on a free loopback port; yields ``http://127.0.0.1:PORT``."""
    server = _Server(("127.0.0.1", 0), handler)
    server.daemon_threads = True  # a handler still sleeping must not block shutdown
    host, port = server.server_address[:2]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield f"http://{host!s}:{port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class QuietHandler(BaseHTTPRequestHandler):
    """A keep-alive handler that logs nothing; a client that stops reading (as a bounded
    client should) resets the connection, which is not an error here."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def handle(self) -> None:
        with contextlib.suppress(OSError):
            super().handle()

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()


class JsonHandler(QuietHandler):
    """A quiet handler whose ``do_POST`` answers ``answer(path, body)`` as JSON."""

    def answer(self, path: str, body: Any) -> Any:
        raise NotImplementedError

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"null")
        data = json.dumps(self.answer(self.path, body)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


MIB = 1024 * 1024


@cache
def gzip_bomb(head: bytes, tail: bytes) -> bytes:
    """~1 MB of valid gzip inflating to ``head``, 1 GiB of ``0`` and ``tail``.

    After a full flush deflate forgets its history, so one compressed mebibyte can be
    repeated 1,024 times (compressing the whole GiB would take ~20 s).
    """
    zeros = b"0" * MIB
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    start = packer.compress(head) + packer.flush(zlib.Z_FULL_FLUSH)
    block = packer.compress(zeros) + packer.flush(zlib.Z_FULL_FLUSH)
    end = packer.compress(tail) + packer.flush()
    crc = zlib.crc32(head)
    for _ in range(1024):
        crc = zlib.crc32(zeros, crc)
    crc = zlib.crc32(tail, crc)
    size = (len(head) + 1024 * MIB + len(tail)) & 0xFFFFFFFF
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    trailer = crc.to_bytes(4, "little") + size.to_bytes(4, "little")
    return header + start + block * 1024 + end + trailer


def closed_port() -> int:
    """A loopback port nobody listens on (connecting to it is refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def main() -> None:
    """``python tests/_servers.py``: serve in this process, print the base URL, run until killed.

    Lets a benchmark or a subprocess test keep the server out of its own GIL.
    """
    import sys

    with serve() as state:
        print(state.base_url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            sys.stdin.read()  # until the parent closes our stdin or kills us


if __name__ == "__main__":
    main()
