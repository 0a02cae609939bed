"""Secrets never stored nor shown (issue 19.2): the real CLI, a real loopback retriever
and judge, then the SQLite file bytes, every CLI output and the API/page answers grepped.

Issue 27.3-5: secrets ragmeter was given (``env:`` headers, credential headers, keys in
request templates) are masked by their value wherever text leaves the process."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from click.testing import CliRunner
from sqlalchemy import insert

from _openai_server import ChatState
from _servers import serve_handler
from _web_fixtures import get_text
from ragmeter._redact import redact, secret_name
from ragmeter.cli import main
from ragmeter.errors import ConfigError, RetrieverError
from ragmeter.retrievers.http import HttpRetriever
from ragmeter.store import Store, schema
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


def test_planted_secrets_are_never_stored_or_shown(
    tmp_path: Path, search_url: str, judge_server: ChatState
) -> None:
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
    base_url = judge_server.base_url.replace("http://", f"http://judge:{JUDGE_PASSWORD}@")
    judge_args = ["judge", "faithfulness", "1", "--model", "judge", "--base-url", base_url]
    run("judge", [*judge_args, *store])
    run("judge --json", [*judge_args, "--json", *store])
    assert judge_server.requests  # the judge was really asked

    # Resume needs the spec again, since the stored one lost its secrets.
    with Store.open(db) as opened:
        opened.update_run(1, status="interrupted")
        assert "***" in opened.get_run(1).retriever
        assert opened.judge_runs(1)["faithfulness"]["config"]["base_url"].count("***") == 1
    message = run("resume without spec", ["eval", "--resume", "1", *store], code=2)
    assert "pass the same --retriever again" in message
    run("resume", ["eval", "--resume", "1", "--retriever", search_url, *store])

    app = create_app(str(db))
    pages = {path: get_text(app, path) for path in ("/api/runs", "/api/runs/1", "/runs/1", "/")}
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


# -- issue 27.3-5: secrets masked by their value ---------------------------------------
# A real loopback service echoes what it was sent (the Authorization header, the request
# body, the query string) in its error answers; the SQLite file and its WAL, `show`, every
# export format, the dashboard's API and an MLflow file store are searched for each secret.

TOKEN = "sk-live-27b-Qz7xW3vK9mP2rT5y"
TEMPLATE_KEY = "tmplkey-27b-9f8e7d6c5b4a"
KNOWN = {"token": TOKEN, "template key": TEMPLATE_KEY}


class _Echo(BaseHTTPRequestHandler):
    """Answers hits when it got the token and the template key; a question about shipping
    gets a 401 that quotes everything it was sent, as careless services do."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, question: str, sent: str) -> None:
        auth = self.headers.get("Authorization", "")
        if "ship" in question or auth != f"Bearer {TOKEN}" or TEMPLATE_KEY not in sent:
            status, body = 401, f"invalid credentials: {auth} for {self.path} {sent}"
        else:
            hits = [{"id": f"d{i}#0", "doc": f"d{i}", "text": question} for i in range(3)]
            status, body = 200, json.dumps({"hits": hits})
        raw = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self) -> None:
        sent = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        self._answer(str(json.loads(sent).get("question", "")), sent)

    def do_GET(self) -> None:
        query = urlsplit(self.path).query
        self._answer(parse_qs(query).get("q", [""])[0], query)


@pytest.fixture
def echo_url() -> Iterator[str]:
    with serve_handler(_Echo) as base_url:
        yield f"{base_url}/search"


def _count(data: bytes | str, secret: str) -> int:
    raw = data.encode() if isinstance(data, str) else data
    return raw.count(secret.encode())


def _store_bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(db.parent.glob(db.name + "*")))


def _everywhere(tmp_path: Path, db: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    """Every place a stored run's text goes: the store, show, exports, the API, MLflow."""
    runner = CliRunner()
    store = ["--store", str(db)]
    out: dict[str, bytes] = {"store+wal": _store_bytes(db)}
    for args in (["show", "1"], ["show", "1", "--json"], ["runs", "--json"]):
        result = runner.invoke(main, [*args, *store])
        assert result.exit_code == 0, result.output
        out[" ".join(args)] = result.output.encode()
    for fmt in ("csv", "jsonl", "ragas", "deepeval", "trec"):
        target = tmp_path / f"export.{fmt}"
        result = runner.invoke(main, ["export", "1", "--format", fmt, "--out", str(target), *store])
        assert result.exit_code == 0, result.output
        out[f"export {fmt}"] = target.read_bytes()
    for path in ("/api/runs/1", "/api/runs/1/questions.csv", "/api/runs"):
        out[path] = get_text(create_app(str(db)), path).encode()
    pytest.importorskip("mlflow", reason="MLflow output is checked when MLflow is installed")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"file://{tmp_path / 'mlruns'}")
    result = runner.invoke(main, ["export", "1", "--to", "mlflow", *store])
    assert result.exit_code == 0, result.output
    mlflow = [p for p in (tmp_path / "mlruns").rglob("*") if p.is_file()]
    assert any(p.name == "per_question.csv" for p in mlflow)
    out["mlflow (params, per_question.csv, report.html)"] = b"".join(p.read_bytes() for p in mlflow)
    return out


def _assert_no_secret(places: dict[str, bytes]) -> None:
    found = {
        (name, where): _count(data, secret)
        for where, data in places.items()
        for name, secret in KNOWN.items()
    }
    assert {k: n for k, n in found.items() if n} == {}


def test_finding_03_env_header_with_a_line_break_is_refused_without_its_value(
    tmp_path: Path, echo_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27.3: `--header 'Authorization: env:VAR'` whose value ends with a newline (a token
    file read into a variable) used to reach the HTTP library, whose "Illegal header value
    b'Bearer sk-...\\n'" was stored as every question's error, shown, exported and logged.
    Now the value is checked before any request: exit 2 naming the header and the
    variable, never the value; nothing is stored."""
    monkeypatch.setenv("T27_TOKEN", f"Bearer {TOKEN}\n")
    gold = tmp_path / "gold.yaml"
    gold.write_text(GOLD, encoding="utf-8")
    db = tmp_path / "runs.db"
    header = ["--header", "Authorization: env:T27_TOKEN"]
    runner = CliRunner()
    size = len(f"Bearer {TOKEN}\n")
    for args in (
        ["eval", "--gold", str(gold), "--retriever", echo_url, *header, "--store", str(db)],
        ["retrieve", "refunds?", "--retriever", echo_url, *header],
    ):
        result = runner.invoke(main, args)
        assert result.exit_code == 2, result.output
        assert "header Authorization (from env:T27_TOKEN)" in result.output
        assert f"line break (character {size} of {size})" in result.output
        assert _count(result.output, TOKEN) == 0
    assert not db.exists() or _count(_store_bytes(db), TOKEN) == 0
    for value in (f"Bearer {TOKEN}\r\nX-Injected: 1", f"Bearer {TOKEN} ", "Bearer tök"):
        with pytest.raises(ConfigError) as caught:
            HttpRetriever(echo_url, headers={"Authorization": value})
        assert "header Authorization" in str(caught.value) and TOKEN not in str(caught.value)


def _plant_error(db: Path, error: str) -> None:
    """A store holding one run whose question failed with ``error``, written as an older
    ragmeter wrote it: past ``redact()``."""
    with Store.open(db) as store:

        def tx(conn: Any) -> None:
            conn.execute(
                insert(schema.gold_sets).values(
                    hash="h1", name="old", created="2025-01-01T00:00:00Z", n_items=0, content="[]"
                )
            )
            conn.execute(
                insert(schema.runs).values(
                    id=1, name="old", note="", created="2025-01-01T00:00:00Z", git_commit=None,
                    gold_hash="h1", retriever="http://h/s", config="{}", k=3, level="doc",
                    status="complete", n_questions=1, n_errors=1,
                )
            )  # fmt: skip
            conn.execute(
                insert(schema.results).values(run_id=1, item_id="q1", ranking="[]", error=error)
            )

        store._write(tx)


def test_finding_03_old_illegal_header_errors_are_hidden_by_store_redact(tmp_path: Path) -> None:
    """Issue 27.3: a store written before the fix holds the h11 message with the value;
    `store redact` now finds it by its pattern and the bytes leave the file."""
    db = tmp_path / "old.db"
    message = f"could not reach http://h/s: Illegal header value b'Bearer {TOKEN}\\n'"
    _plant_error(db, message)
    assert _count(_store_bytes(db), TOKEN) == 1
    result = CliRunner().invoke(main, ["store", "redact", "--store", str(db)])
    assert result.exit_code == 0, result.output
    assert "results.error" in result.output
    assert _count(_store_bytes(db), TOKEN) == 0


@pytest.mark.parametrize("source", ["literal", "env"])
def test_finding_04_echoed_credentials_are_masked_everywhere(
    tmp_path: Path, echo_url: str, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    """Issue 27.4: a service that quotes the Authorization header (and the request) in a 401
    body got the token stored as the question's error through the error snippet. ragmeter
    knows the values it sends and masks them: 0 bytes of the token in the store file + WAL,
    `show`, every export, the API and MLflow, while the other question is answered (so the
    token was really sent)."""
    monkeypatch.setenv("T27_TOKEN", f"Bearer {TOKEN}")
    value = "env:T27_TOKEN" if source == "env" else f"Bearer {TOKEN}"
    gold = tmp_path / "gold.yaml"
    gold.write_text(GOLD, encoding="utf-8")
    db = tmp_path / "runs.db"
    body = '{"question": "{question}", "k": {k}, "api_key": "' + TEMPLATE_KEY + '"}'
    args = ["eval", "--gold", str(gold), "--retriever", echo_url, "--header",
            f"Authorization: {value}", "--http-body", body, "--store", str(db), "--json"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["n_errors"] == 1 and report["metrics"]["hit@1"] == 0.5, report
    with Store.open(db) as store:
        error = {r.item_id: r.error for r in store.results(1)}["ship"]
    assert error is not None and error.startswith("HTTP 401 from")
    assert "invalid credentials: *** for /search" in error
    _assert_no_secret(_everywhere(tmp_path, db, monkeypatch))


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_finding_05_template_secrets_are_masked_in_config_and_everywhere(
    tmp_path: Path, echo_url: str, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    """Issue 27.5: `--http-body 'q={question}&api_key=X'` (GET) or a JSON template holding an
    api_key (POST) stored X in runs.config and the MLflow param
    config.retriever.request.body. The template is stored with the key hidden, the key
    is still sent (the service answers), and no byte of it is left anywhere."""
    gold = tmp_path / "gold.yaml"
    gold.write_text(GOLD, encoding="utf-8")
    db = tmp_path / "runs.db"
    if method == "GET":
        body = f"q={{question}}&size={{k}}&api_key={TEMPLATE_KEY}"
        stored = "q={question}&size={k}&api_key=***"
    else:
        body = '{"question": "{question}", "k": {k}, "api_key": "' + TEMPLATE_KEY + '"}'
        stored = '{"question": "{question}", "k": {k}, "api_key": "***"}'
    args = ["eval", "--gold", str(gold), "--retriever", echo_url, "--http-method", method,
            "--http-body", body, "--header", f"Authorization: Bearer {TOKEN}",
            "--store", str(db), "--json"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["metrics"]["hit@1"] == 0.5  # the key was sent
    with Store.open(db) as store:
        assert store.get_run(1).config["retriever"]["request"]["body"] == stored
    _assert_no_secret(_everywhere(tmp_path, db, monkeypatch))


def test_finding_04_a_token_cut_by_the_snippet_is_masked(tmp_path: Path) -> None:
    """Issue 27.4: the error snippet keeps 200 bytes of the answer; a token straddling that
    end leaves no prefix of itself behind."""
    pad = "x" * (200 - 30)

    class _Cut(_Echo):
        def do_POST(self) -> None:
            raw = f"{pad} {self.headers['Authorization']} and more".encode()
            self.send_response(403)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    with serve_handler(_Cut) as base_url:
        retriever = HttpRetriever(base_url, headers={"Authorization": f"Bearer {TOKEN}"})
        with pytest.raises(RetrieverError) as caught:
            retriever.retrieve("q", 3)
        retriever.close()
    message = str(caught.value)
    assert message.endswith("***...") and TOKEN[:4] not in message, message


def test_known_value_masking_rules() -> None:
    """Issue 27.5: templates' credential-named values are found and hidden; short values are
    not masked by value (they would change chunk texts), only where a name points at them."""
    from ragmeter._redact import mask_known, redact, redact_template, template_secrets

    assert template_secrets("q={question}&api_key=abc&token={k}") == ["abc"]
    assert redact_template('{"q": "{question}", "auth": {"token": "t"}}') == (
        '{"q": "{question}", "auth": {"token": "***"}}'
    )
    assert mask_known("the short value abc stays", ["abc"]) == "the short value abc stays"
    assert redact({"request": {"body": "q={question}&apikey=K9"}}) == {
        "request": {"body": "q={question}&apikey=***"}
    }


def test_finding_04_a_judge_server_echoing_the_key_leaves_no_byte_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27.4, the judge's side: an OpenAI-compatible server that quotes the
    Authorization header in its 401 had the key (from OPENAI_API_KEY) printed by `judge
    faithfulness` and stored as each question's judge error. Now 0 bytes of it anywhere."""
    key = "sk-judge-27b-Zq9Wx8Vu7Ts6"

    class _EchoJudge(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            said = "bad key " + self.headers.get("Authorization", "")
            raw = json.dumps({"error": {"message": said, "type": "invalid_request_error"}})
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw.encode())))
            self.end_headers()
            self.wfile.write(raw.encode())

    gold = tmp_path / "gold.yaml"
    gold.write_text(GOLD, encoding="utf-8")
    db = tmp_path / "runs.db"
    (tmp_path / "answering.py").write_text(
        "def search(q, k):\n"
        "    return {'hits': [{'id': 'd0#0', 'doc': 'd0', 'text': 'three days'}],"
        " 'answer': 'three days'}\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    runner = CliRunner()
    run = runner.invoke(main, ["eval", "--gold", str(gold), "--retriever", "answering:search",
                               "--store", str(db)])  # fmt: skip
    assert run.exit_code == 0, run.output
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with serve_handler(_EchoJudge) as base_url:
        judged = runner.invoke(main, ["judge", "faithfulness", "1", "--model", "m",
                                      "--base-url", f"{base_url}/v1", "--store", str(db)])  # fmt: skip
    assert "bad key Bearer ***" in judged.output, judged.output
    assert _count(judged.output, key) == 0
    assert _count(_store_bytes(db), key) == 0


def test_finding_04_store_redact_hides_a_known_value_in_an_old_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27.4: errors stored before values were masked hold an echoed token that no
    pattern finds; `store redact --secret-env NAME` hides every copy of that variable's
    value (results and judge errors), and the file and WAL lose its bytes."""
    db = tmp_path / "old.db"
    echoed = f"HTTP 401 from http://h/s: invalid credentials: Bearer {TOKEN}"
    _plant_error(db, echoed)
    assert _count(_store_bytes(db), TOKEN) == 1
    monkeypatch.setenv("T27_TOKEN", TOKEN)
    runner = CliRunner()
    plain = runner.invoke(main, ["store", "redact", "--store", str(db)])
    assert plain.exit_code == 0 and _count(_store_bytes(db), TOKEN) == 1  # no pattern finds it
    result = runner.invoke(
        main, ["store", "redact", "--secret-env", "T27_TOKEN", "--store", str(db)]
    )
    assert result.exit_code == 0, result.output
    assert "results.error" in result.output and TOKEN not in result.output
    assert _count(_store_bytes(db), TOKEN) == 0
