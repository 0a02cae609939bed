"""Secrets never stored nor shown (issue 19.2): the real CLI, a real loopback retriever
and judge, then the SQLite file bytes, every CLI output and the API/page answers grepped."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from _openai_server import serve_chat
from _servers import serve_handler
from ragmeter._redact import redact, secret_name
from ragmeter.cli import main
from ragmeter.store import Store
from ragmeter.web.app import create_app

PASSWORD = "hunter2pw"
KEY = "sk-planted-key-991"
JUDGE_PASSWORD = "judgepw77"
SECRETS = (PASSWORD, KEY, JUDGE_PASSWORD)

GOLD = """\
- id: refund
  question: How long do refunds take?
  relevant: [{doc: d0}]
- id: ship
  question: When does it ship?
  relevant: [{doc: d1}]
"""


class _Search(BaseHTTPRequestHandler):
    """Answers only when it got the credentials the URL carries (so they were sent)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        expected = "Basic " + base64.b64encode(f"user:{PASSWORD}".encode()).decode()
        authorised = self.headers.get("Authorization") == expected and f"api_key={KEY}" in self.path
        hits = [{"id": f"d{i}#0", "doc": f"d{i}", "text": body["question"]} for i in range(3)]
        data = json.dumps({"hits": hits, "answer": "42"} if authorised else {"error": "no"})
        raw = data.encode()
        self.send_response(200 if authorised else 401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture
def search_url() -> Iterator[str]:
    with serve_handler(_Search) as base_url:
        host = base_url.removeprefix("http://")
        yield f"http://user:{PASSWORD}@{host}/ok?api_key={KEY}&k=3"


def _clean(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} leaked in {where}"


def _get(app: Any, path: str) -> str:
    async def go() -> str:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            response = await client.get(path)
            assert response.status_code == 200, (path, response.text[:300])
            return response.text

    return asyncio.run(go())


def test_planted_secrets_are_never_stored_or_shown(tmp_path: Path, search_url: str) -> None:
    """Issue 19.2: a URL password and an api_key query parameter in --retriever, and a
    password in the judge's --base-url, reach the services but no stored byte, no CLI
    output, no API answer and no page."""
    gold = tmp_path / "gold.yaml"
    gold.write_text(GOLD, encoding="utf-8")
    db = tmp_path / "runs.db"
    store = ["--store", str(db)]
    runner = CliRunner()
    outputs: dict[str, str] = {}

    def run(name: str, args: list[str], code: int = 0) -> str:
        out = runner.invoke(main, args)
        assert out.exit_code == code, out.output
        outputs[name] = out.output
        return out.output

    run("eval", ["eval", "--gold", str(gold), "--retriever", search_url, "-k", "3", *store])
    report = json.loads(
        run(
            "eval --json",
            ["eval", "--gold", str(gold), "--retriever", search_url, "--json", *store],
        )
    )
    assert report["n_errors"] == 0 and report["hit_rate"] == 1.0, report  # credentials sent
    run("retrieve", ["retrieve", "refunds?", "--retriever", search_url, "-k", "2"])
    run("retrieve --json", ["retrieve", "refunds?", "--retriever", search_url, "--json"])
    run("runs", ["runs", *store])
    run("runs --json", ["runs", "--json", *store])
    run("show", ["show", "1", *store])
    run("show --json", ["show", "1", "--json", *store])
    with serve_chat(mode="judge") as judge:
        base_url = judge.base_url.replace("http://", f"http://judge:{JUDGE_PASSWORD}@")
        judge_args = ["judge", "faithfulness", "1", "--model", "judge", "--base-url", base_url]
        run("judge", [*judge_args, *store])
        run("judge --json", [*judge_args, "--json", *store])
        assert judge.requests  # the judge was really asked

    # Resume needs the spec again, since the stored one lost its secrets.
    with Store.open(db) as opened:
        opened.update_run(1, status="interrupted")
        assert "***" in opened.get_run(1).retriever
        assert opened.judge_runs(1)["faithfulness"]["config"]["base_url"].count("***") == 1
    message = run("resume without spec", ["eval", "--resume", "1", *store], code=2)
    assert "pass the same --retriever again" in message
    run("resume", ["eval", "--resume", "1", "--retriever", search_url, *store])

    app = create_app(str(db))
    pages = {path: _get(app, path) for path in ("/api/runs", "/api/runs/1", "/runs/1", "/")}
    for where, text in {**outputs, **pages}.items():
        _clean(text, where)
    assert "user:***@" in pages["/api/runs"] and "api_key=***" in pages["/api/runs"]
    assert "api_key=***" in outputs["eval"] or "api_key=***" in outputs["show"]
    data = db.read_bytes()
    for path in tmp_path.glob("runs.db*"):  # WAL and journal files too
        data += path.read_bytes()
    for secret in SECRETS:
        assert secret.encode() not in data, f"{secret!r} is in the SQLite file"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("http://u:p@h:8/x?api_key=K&q=1", "http://u:***@h:8/x?api_key=***&q=1"),
        ("https://h/x?token=T;sig=S#auth=A", "https://h/x?token=***;sig=***#auth=***"),
        ("https://h/x?key=K&monkey=m&password=", "https://h/x?key=***&monkey=m&password="),
        ("hybrid over http://a:b@[::1]:9/s", "hybrid over http://a:***@[::1]:9/s"),
        ("module:function", "module:function"),
        (
            {"Authorization": "Bearer T", "X-Api-Key": "K", "max_tokens": 512, "api_key_env": "E"},
            {"Authorization": "***", "X-Api-Key": "***", "max_tokens": 512, "api_key_env": "E"},
        ),
    ],
    ids=["userinfo+query", "separators+fragment", "names", "embedded-ipv6", "plain", "mapping"],
)
def test_one_redaction_function(value: Any, expected: Any) -> None:
    """Issue 19.2: one function hides URL passwords, key-like parameters and headers."""
    assert redact(value) == expected
    assert redact(expected) == expected  # idempotent: a stored spec redacts to itself
    assert secret_name("Authorization") and not secret_name("author")
