"""HTTP search services as they are: templates, hits paths, presets, env headers (issue 14.5).

A real stdlib server on loopback answers in each shape people run (Elasticsearch
``_search``, the OpenAI vector-store search page, LangServe ``/invoke``, a custom
``{"results": [...]}`` service, a GET endpoint) and records what it was sent.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml
from click.testing import CliRunner

from _servers import serve_handler
from ragmeter.cli import main
from ragmeter.errors import ConfigError, RetrieverError
from ragmeter.retrievers import resolve_retriever
from ragmeter.retrievers.presets import HttpShape

TOPICS = ["install", "cache", "python", "tools", "lock", "sync"]
DOCS = [f"guide/{t}.md" for t in TOPICS]
GOLD = [
    {"id": t, "question": f"how do I {t}?", "relevant": [{"doc": f"guide/{t}.md"}]} for t in TOPICS
]
SECRET = "Bearer s3cret-token-value"
SEEN: list[dict[str, Any]] = []


def _ranked(question: str, k: int) -> list[str]:
    topic = question.removeprefix("how do I ").rstrip("?")
    first = f"guide/{topic}.md"
    return [first, *sorted(d for d in DOCS if d != first)][:k]


def _answer(path: str, body: dict[str, Any], query: dict[str, list[str]]) -> Any:
    if query:  # a GET endpoint: q and size
        return {"hits": _ranked(query["q"][0], int(query["size"][0]))}
    if path.endswith("/search") and "top_k" in body:
        return {"results": [{"doc": d} for d in _ranked(body["query"], body["top_k"])]}
    if path.endswith("/_search"):
        question = body["query"]["multi_match"]["query"]
        ranked = _ranked(question, body["size"])
        return {
            "took": 2,
            "hits": {
                "total": {"value": len(ranked), "relation": "eq"},
                "max_score": 3.0,
                "hits": [
                    {"_index": "docs", "_id": doc, "_score": 3.0 - n, "_source": {"text": doc}}
                    for n, doc in enumerate(ranked)
                ],
            },
        }
    if path.endswith("/search") and "max_num_results" in body:
        ranked = _ranked(body["query"], body["max_num_results"])
        return {
            "object": "vector_store.search_results.page",
            "search_query": body["query"],
            "data": [
                {
                    "file_id": f"file-{n}",
                    "filename": doc,
                    "score": 0.9 - n / 10,
                    "attributes": {},
                    "content": [{"type": "text", "text": f"about {doc}"}],
                }
                for n, doc in enumerate(ranked)
            ],
            "has_more": False,
            "next_page": None,
        }
    if path.endswith("/invoke"):
        ranked = _ranked(body["input"], 20)  # LangServe cannot be told k
        return {
            "output": [
                {"page_content": "…", "metadata": {"source": doc}, "type": "Document", "id": None}
                for doc in ranked
            ],
            "metadata": {"run_id": "r1"},
        }
    if path.endswith("/custom"):
        return {"status": "ok", "results": [{"doc": d} for d in _ranked(body["q"], body["n"])]}
    return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _reply(self, body: dict[str, Any]) -> None:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        SEEN.append(
            {
                "method": self.command,
                "path": parts.path,
                "body": body,
                "query": query,
                "auth": self.headers.get("Authorization"),
            }
        )
        answer = _answer(parts.path, body, query)
        data = json.dumps(answer).encode()
        self.send_response(200 if answer is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        self._reply(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self._reply({})

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


@pytest.fixture
def url() -> Iterator[str]:
    SEEN.clear()
    with serve_handler(_Handler) as base:
        yield base


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "gold.yaml").write_text(yaml.safe_dump(GOLD, sort_keys=False), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGMETER_STORE", f"sqlite:///{tmp_path / 'runs.db'}")
    return tmp_path


def _eval(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["eval", "--gold", "gold.yaml", "-k", "3", "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("path", "preset"),
    [
        ("/docs/_search", "elasticsearch"),
        ("/docs/_search", "opensearch"),
        ("/v1/vector_stores/vs_1/search", "openai-vector-store"),
        ("/chain/invoke", "langserve"),
    ],
    ids=["elasticsearch", "opensearch", "openai-vector-store", "langserve"],
)
def test_presets_score_exactly(project: Path, url: str, path: str, preset: str) -> None:
    """Issue 14.5: each preset asks the service in its own shape and reads its answer."""
    data = _eval("--retriever", f"{url}{path}", "--http-preset", preset)
    assert data["metrics"]["hit@1"] == 1.0 and data["n_errors"] == 0
    assert SEEN and all(seen["method"] == "POST" for seen in SEEN)
    if preset == "langserve":
        assert set(SEEN[0]["body"]) == {"input"}
        assert any("cut to k" in n for n in data["notes"])  # a note, not a warning (24.6)


def test_template_and_hits_path(project: Path, url: str) -> None:
    """Issue 14.5: --http-body fills {question} (JSON-escaped) and {k}; --hits-path finds
    the hits; the template is stored with the run."""
    data = _eval(
        "--retriever",
        f"{url}/custom",
        "--http-body",
        '{"q": "{question}", "n": {k}, "mode": "hybrid"}',
        "--hits-path",
        "results",
    )
    assert data["metrics"]["hit@1"] == 1.0
    assert SEEN[0]["body"]["n"] == 3 and SEEN[0]["body"]["mode"] == "hybrid"
    shape = HttpShape.of(body='{"q": "{question}"}')
    assert shape.request('a "b"\nc', 2)["json"] == {"q": 'a "b"\nc'}


def test_get_with_query_parameters(project: Path, url: str) -> None:
    """Issue 14.5: GET sends the template as query parameters, the question kept whole."""
    data = _eval(
        "--retriever", f"{url}/get", "--http-method", "GET", "--http-body", "q={question}&size={k}"
    )
    assert data["metrics"]["hit@1"] == 1.0
    assert SEEN[0]["method"] == "GET" and SEEN[0]["query"]["size"] == ["3"]
    assert HttpShape.of(method="GET").request("a&b=c", 1)["params"] == {
        "question": "a&b=c",
        "k": "1",
    }


def test_env_header_is_sent_never_stored(
    project: Path, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 14.5: --header 'Authorization: env:NAME' sends the variable's value and neither
    the run store nor the output ever holds it; a missing variable is named, exit 2."""
    monkeypatch.setenv("SEARCH_TOKEN", SECRET)
    args = ["--retriever", f"{url}/docs/_search", "--http-preset", "elasticsearch"]
    data = _eval(*args, "--header", "Authorization: env:SEARCH_TOKEN")
    assert data["metrics"]["hit@1"] == 1.0
    assert {seen["auth"] for seen in SEEN} == {SECRET}
    assert SECRET not in json.dumps(data)
    with sqlite3.connect(project / "runs.db") as db:
        dump = "\n".join(db.iterdump())
    assert SECRET not in dump and "s3cret" not in dump
    missing = CliRunner().invoke(
        main, ["eval", "--gold", "gold.yaml", *args, "--header", "Authorization: env:NOPE"]
    )
    assert missing.exit_code == 2 and "NOPE" in missing.output


def test_shape_errors_are_clear(url: str) -> None:
    """Issue 14.5: a template that is not JSON, an unknown preset, a missing hits path, and
    shape options without an HTTP retriever fail with what to do; errors name the URL."""
    with pytest.raises(ConfigError, match="not JSON once"):
        HttpShape.of(body='{"q": {question}}')
    with pytest.raises(ConfigError, match="unknown HTTP preset"):
        HttpShape.of(preset="solr")
    with pytest.raises(ConfigError, match="need an http"):
        resolve_retriever("mod:fn", hits_path="results")
    retriever = resolve_retriever(
        f"{url}/custom", http_body='{"q": "{question}", "n": {k}}', hits_path="items", timeout=5
    )
    with pytest.raises(RetrieverError, match=rf"no hits at --hits-path items.*{url}/custom"):
        retriever.retrieve("how do I sync?", 2)
    retriever.close()
