"""Judge replies are size- and time-bounded like every HTTP body (issue 19.4 leftover).

A real HTTP server on loopback answers the ``openai`` client with an oversized chat
completion, a gzip bomb (≈1 MB inflating to 1 GiB), a trickled body and a good gzip reply.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import time
import zlib
from collections.abc import Iterator
from functools import cache
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from _servers import serve_handler
from ragmeter._http import DEFAULT_MAX_RESPONSE_BYTES
from ragmeter.judge import FaithfulnessCase, JudgeClient, judge_faithfulness

MIB = 1024 * 1024
CASE = [FaithfulnessCase("q0", "How long?", ("Refunds take 30 days.",), "30 days")]
VERDICT = json.dumps({"supported": True, "unsupported_claims": [], "reason": "in context"})


def _completion(content: str) -> bytes:
    return json.dumps(
        {
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": "judge",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        }
    ).encode()


@cache
def completion_bomb() -> bytes:
    """~1 MB of gzip that inflates to a 1 GiB chat completion (padding in its content)."""
    head, tail = _completion("PAD").split(b"PAD")
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
    return (
        header + start + block * 1024 + end + crc.to_bytes(4, "little") + size.to_bytes(4, "little")
    )


class _Replies(BaseHTTPRequestHandler):
    """Routes by base URL: /huge/v1 (40 MiB, declared), /bomb/v1, /trickle/v1, /gzip/v1."""

    protocol_version = "HTTP/1.1"
    seen: list[str] = []  # noqa: RUF012 - one server per test

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def handle(self) -> None:
        with contextlib.suppress(OSError):  # a client that stopped reading resets us
            super().handle()

    def _send(self, body: bytes, encoding: str | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if encoding:
            self.send_header("Content-Encoding", encoding)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        route = self.path.split("/")[1]
        self.seen.append(route)
        if route == "huge":
            self._send(_completion("x" * (40 * MIB)))
        elif route == "bomb":
            self._send(completion_bomb(), "gzip")
        elif route == "gzip":
            self._send(gzip.compress(_completion(VERDICT)), "gzip")
        elif route == "trickle":
            body = _completion(VERDICT)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for byte in body[:40]:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.1)


@pytest.fixture
def server() -> Iterator[str]:
    _Replies.seen = []
    with serve_handler(_Replies) as base_url:
        yield base_url


def _judge(base_url: str, route: str, **options: Any) -> Any:
    client = JudgeClient(model="judge", base_url=f"{base_url}/{route}/v1", **options)
    return judge_faithfulness(client, CASE)


@pytest.mark.parametrize("route", ["huge", "bomb"], ids=["declared-40MiB", "gzip-bomb-1GiB"])
def test_an_oversized_judge_reply_fails_naming_the_limit(server: str, route: str) -> None:
    """Issue 19.4: a judge reply over 32 MiB (decompressed) is refused, not read whole."""
    started = time.monotonic()
    batch = _judge(server, route)
    assert time.monotonic() - started < 15
    assert not batch.verdicts
    error = batch.errors["q0"]
    assert f"the {DEFAULT_MAX_RESPONSE_BYTES:,}-byte limit" in error, error
    assert error.startswith("the judge's reply was refused: response body ")
    assert _Replies.seen == [route]  # the same reply would come back: never retried


def test_the_limit_is_the_clients_and_gzip_replies_still_work(server: str) -> None:
    """Issue 19.4: a gzip reply is decoded here; ``max_response_bytes`` sets the bound."""
    batch = _judge(server, "gzip")
    assert batch.verdicts["q0"].supported is True and not batch.errors
    small = _judge(server, "gzip", max_response_bytes=64)
    assert "the 64-byte limit" in small.errors["q0"]


def test_a_trickled_judge_reply_is_bounded_by_the_timeout(server: str) -> None:
    """Issue 19.4: a body trickled byte by byte stops at the per-attempt deadline."""
    started = time.monotonic()
    batch = _judge(server, "trickle", timeout=1.0, max_retries=0)
    assert time.monotonic() - started < 3.5
    assert batch.errors["q0"] == ("the reply did not finish within 1 s (gave up after 1 attempts)")
