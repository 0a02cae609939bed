"""A real ``ragmeter ingest serve`` process on a free loopback port (issue 25.4: written once).

For the tests that need the command itself (its signals, its flush on shutdown, a SIGKILL);
``tests/_otlp.py``'s ``ingest_served`` runs the same app in a thread instead::

    with ingest_process(db, "--token", "t0k") as served:
        httpx.post(served.base + "/api/log", ...)
    assert served.returncode == 0, served.output
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from _net import free_port, process_listening, wait_until

#: Seconds the process gets to listen, and to stop after SIGINT.
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0


@dataclass
class IngestProcess:
    """The running server: its base URL and process; its exit code and output once stopped."""

    base: str
    port: int
    proc: subprocess.Popen[bytes]
    output: str = ""

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def listening(self) -> bool:
        """Whether it accepts connections; raises once the process has exited."""
        return process_listening(self.proc, self.port, "ragmeter ingest serve")


@contextmanager
def ingest_process(store: Path | str, *extra: str) -> Iterator[IngestProcess]:
    """``ragmeter ingest serve --store STORE *extra`` for the ``with`` block, listening.

    On leaving, a process still running gets SIGINT (graceful: the logger flushes its
    queue), and ``output`` holds what it printed (kept in a file, so a chatty server never
    blocks on a full pipe)."""
    port = free_port()
    command = [sys.executable, "-m", "ragmeter", "ingest", "serve", "--port", str(port),
               "--store", str(store), *extra]  # fmt: skip
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ})
        served = IngestProcess(f"http://127.0.0.1:{port}", port, proc)
        try:
            wait_until(served.listening, timeout=START_TIMEOUT_S, what="ingest serve to listen")
            yield served
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:  # pragma: no cover - a hung shutdown
                proc.kill()
                proc.wait()
            log.seek(0)
            served.output = log.read().decode(errors="replace")
