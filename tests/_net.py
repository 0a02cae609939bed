"""Loopback helpers every server fixture shares (issue 25.4: written once)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time
from collections.abc import Callable

WAIT_SECONDS = 30.0
POLL_SECONDS = 0.05


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(
    condition: Callable[[], bool], *, timeout: float = WAIT_SECONDS, what: str = "condition"
) -> None:
    """Poll ``condition`` until it holds; fail with ``what`` after ``timeout`` seconds.

    Tests wait on a condition, never on a fixed sleep (issue 25.4).
    """
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(POLL_SECONDS)


async def until(
    condition: Callable[[], bool], *, timeout: float = WAIT_SECONDS, what: str = "condition"
) -> None:
    """:func:`wait_until` inside an event loop: the loop's other tasks run while it polls."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(POLL_SECONDS / 5)


def process_listening(proc: subprocess.Popen[bytes], port: int, name: str) -> bool:
    """Whether ``proc`` accepts connections on ``port``; raises once it has exited (so a
    wait on it fails with the exit code, not a timeout)."""
    if proc.poll() is not None:
        raise RuntimeError(f"{name} exited with {proc.returncode}")
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True
