"""Bounded HTTP bodies (issue 19.4): time and peak memory of one retrieval against hostile bodies.

A loopback server answers with a 1 GiB chunked body, a ~1 MB gzip body that inflates to
1 GiB, and a body trickled at 1 byte/s. Each retrieval runs in a fresh subprocess with the
default limits (32 MiB, ``--timeout 3`` for the trickle) and prints its wall time, its peak
RSS and the error it ended with. Run: ``PYTHONPATH=src python benchmarks/http_bounds.py``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from _servers import serve_handler  # noqa: E402
from retrievers.test_http_bounds import gzip_bomb  # noqa: E402

MIB = 1024 * 1024
CHILD = r"""
import resource, sys, time
from ragmeter.retrievers import HttpRetriever
retriever = HttpRetriever(sys.argv[1], retries=0, timeout=float(sys.argv[2]))
start = time.perf_counter()
try:
    retriever.retrieve("q", 10)
    outcome = "ok"
except Exception as error:
    outcome = str(error).split(" from ")[0]
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{time.perf_counter() - start:6.2f} s  peak RSS {rss:4.0f} MB  {outcome}")
"""


class _Hostile(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def handle(self) -> None:
        with contextlib.suppress(OSError):  # the client stops reading, as it should
            super().handle()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        if self.path == "/gib":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            block = b" " * MIB
            for _ in range(1024):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(block), block))
            self.wfile.write(b"0\r\n\r\n")
        elif self.path == "/bomb":
            body = gzip_bomb()
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_header("Content-Length", "100000")
            self.end_headers()
            for _ in range(100_000):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(1.0)


def main() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    gzip_bomb()  # built once, before any timing
    with serve_handler(_Hostile) as base_url:
        for path, timeout, what in (
            ("/gib", 30, "1 GiB body"),
            ("/bomb", 30, f"gzip bomb ({len(gzip_bomb()) / MIB:.1f} MB -> 1 GiB)"),
            ("/trickle", 3, "1 byte/s, timeout 3 s"),
        ):
            out = subprocess.run(
                [sys.executable, "-c", CHILD, base_url + path, str(timeout)],
                capture_output=True,
                text=True,
                env=env,
                check=False,
            )
            print(f"{what:32} {out.stdout.strip() or out.stderr.strip()[-200:]}")


if __name__ == "__main__":
    main()
