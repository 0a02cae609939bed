"""Judge replies are size- and time-bounded like every HTTP body (issue 19.4 leftover).

A real HTTP server on loopback answers the ``openai`` client with an oversized chat
completion, a gzip bomb (≈1 MB inflating to 1 GiB), a trickled body and a good gzip reply.
"""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from _servers import MIB, QuietHandler, gzip_bomb, serve_handler
from _web_fixtures import build_small
from ragmeter._http import DEFAULT_MAX_RESPONSE_BYTES
from ragmeter.cli import main
from ragmeter.config import load_config
from ragmeter.errors import ConfigError
from ragmeter.judge import FaithfulnessCase, JudgeClient, judge_faithfulness
from ragmeter.judge.config import resolve_judge_config
from ragmeter.store import Store

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


def completion_bomb() -> bytes:
    """~1 MB of gzip that inflates to a 1 GiB chat completion (padding in its content)."""
    head, tail = _completion("PAD").split(b"PAD")
    return gzip_bomb(head, tail)


class _Replies(QuietHandler):
    """Routes by base URL: /huge/v1 (40 MiB, declared), /bomb/v1, /trickle/v1, /gzip/v1."""

    seen: list[str] = []  # noqa: RUF012 - one server per test

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
            self.close_connection = True  # then hang up, the body unfinished


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
    batch = _judge(server, route)
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
    """Issue 19.4: a body trickled byte by byte stops at the per-attempt deadline (its 40
    bytes take 4 s, then the server hangs up: a client bounding each read would end on the
    hang-up, with another message). How close to 1 s it stops is benchmarks/promptness.py's."""
    batch = _judge(server, "trickle", timeout=1.0, max_retries=0)
    assert batch.errors["q0"] == ("the reply did not finish within 1 s (gave up after 1 attempts)")


def _toml(tmp_path: Path, base_url: str, extra: str = "") -> Path:
    path = tmp_path / "ragmeter.toml"
    path.write_text(f'[judge]\nmodel = "judge"\nbase_url = "{base_url}/gzip/v1"\n{extra}')
    return path


def test_judge_config_key_sets_the_limit(server: str, tmp_path: Path) -> None:
    """Issue 19.4: `[judge] max_response_bytes` reaches the client (it had no key)."""
    settings = load_config(_toml(tmp_path, server, "max_response_bytes = 64\n")).judge
    config = resolve_judge_config(env={}, settings=settings)
    assert config.max_response_bytes == 64
    batch = judge_faithfulness(config.client(), CASE)
    assert "the 64-byte limit" in batch.errors["q0"]
    flag = resolve_judge_config(env={}, settings=settings, max_response_bytes=MIB)
    assert flag.client().max_response_bytes == MIB  # the flag wins over the file
    default = resolve_judge_config(env={}, settings=load_config(_toml(tmp_path, server)).judge)
    assert default.max_response_bytes == DEFAULT_MAX_RESPONSE_BYTES


@pytest.mark.parametrize(
    "value", ["0", "-5", '"32MB"', "true", "1.5"], ids=["zero", "negative", "text", "bool", "float"]
)
def test_judge_config_key_is_validated(server: str, tmp_path: Path, value: str) -> None:
    """Issue 19.4: a limit that is not a whole number >= 1 is a clear ConfigError."""
    toml = _toml(tmp_path, server, f"max_response_bytes = {value}\n")
    with pytest.raises(ConfigError) as error:
        resolve_judge_config(env={}, settings=load_config(toml).judge)
    assert str(error.value) == (
        f"config {toml} [judge]: max_response_bytes must be a whole number of bytes >= 1, "
        f"got {load_config(toml).judge.get('max_response_bytes')!r}"
    )
    with pytest.raises(ConfigError, match="--max-response-bytes must be a whole number >= 1"):
        resolve_judge_config(env={}, settings=load_config(_toml(tmp_path, server)).judge,
                             max_response_bytes=0)  # fmt: skip


def test_cli_max_response_bytes_flag_and_key(
    server: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    file_store: Store,
    store_path: Path,
) -> None:
    """Issue 19.4: `judge faithfulness --max-response-bytes N` and the `[judge]` key bound
    the reply; 0 is refused with exit 2 before any request."""
    build_small(file_store)
    monkeypatch.chdir(tmp_path)
    _toml(tmp_path, server)

    def judge(*flags: str) -> Any:
        args = ["judge", "faithfulness", "base", "--store", str(store_path), "--json", *flags]
        return CliRunner().invoke(main, args, catch_exceptions=False)

    limited = judge("--max-response-bytes", "64")
    assert limited.exit_code == 0, limited.output
    errors = json.loads(limited.stdout)["errors"]
    assert errors and all("the 64-byte limit" in e for e in errors.values())
    _toml(tmp_path, server, "max_response_bytes = 80\n")
    keyed = judge()
    assert all("the 80-byte limit" in e for e in json.loads(keyed.stdout)["errors"].values())
    assert json.loads(judge("--max-response-bytes", str(MIB)).stdout)["errors"] == {}
    seen = len(_Replies.seen)
    refused = judge("--max-response-bytes", "0")
    assert refused.exit_code == 2
    assert "'--max-response-bytes': 0 is not in the range x>=1" in refused.stderr
    assert len(_Replies.seen) == seen  # nothing was sent
