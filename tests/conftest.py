"""Fixtures every test gets."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import _postgres
from _openai_server import ChatState, serve_chat
from ragmeter.examples import example_gold_path
from ragmeter.gold.files import load_gold
from ragmeter.gold.goldset import GoldSet
from ragmeter.judge import JudgeClient
from ragmeter.store import Store

# Read by session fixtures before this one runs; kept so a developer can point the
# Postgres tests at an existing server.
KEEP = {"RAGMETER_TEST_POSTGRES_URL"}

# The suite never leaves loopback: Haystack sends telemetry from every Pipeline.run unless
# this is set before it is imported (issue 24: found by the embedding pipeline cell).
os.environ["HAYSTACK_TELEMETRY_ENABLED"] = "False"


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's OPENAI_* / RAGMETER_* settings (keys, stores, models)."""
    for name in list(os.environ):
        if name.startswith(("OPENAI_", "RAGMETER_")) and name not in KEEP:
            monkeypatch.delenv(name)


@pytest.fixture(autouse=True)
def forget_secrets() -> Iterator[None]:
    """Secrets one test gave ragmeter are masked by value for the rest of the process
    (issue 27.3-5); no other test inherits them."""
    from ragmeter._redact import forget_secrets as forget

    forget()
    yield
    forget()


# Fixtures that start real infrastructure (a server, a browser, a cluster, a model): a test
# that uses one is marked `slow` here, so `make test-fast` leaves it out and no module can
# forget the mark (issue 25.4).
SLOW_FIXTURES = frozenset(
    {
        "postgres_server",
        "postgres_url",
        "local_ray",
        "llm_server",
        "embedder",
        "scifact",
        "browser",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `slow` every test that starts real infrastructure (by fixture or by parameter)."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        callspec = getattr(item, "callspec", None)
        params = callspec.params.values() if callspec is not None else ()
        on_postgres = any(isinstance(value, str) and value == "postgres" for value in params)
        if names & SLOW_FIXTURES or on_postgres:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def local_ray() -> Iterator[Any]:
    """A real local Ray (2 CPUs), started once per session: it takes seconds to start."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ragmeter[ray]')")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="warning")
    try:
        yield ray
    finally:
        ray.shutdown()


# -- shared fixtures (STYLE.md: `store`, `gold`, `judge`; issue 25.4) -----------------------
# Written once here; a test that just needs "a fresh store", "the example gold" or "a model
# judge" takes the fixture instead of opening its own. Tests that open, reopen, migrate or
# compare two stores still open them themselves: that is what they test.


@pytest.fixture
def store() -> Iterator[Store]:
    """A fresh, empty in-memory SQLite store (``Store.memory()``), closed after the test."""
    with Store.memory() as opened:
        yield opened


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """Where a test's file-backed store lives (``tmp_path / "runs.db"``), for the CLI's
    ``--store`` and for :func:`file_store`; nothing is created until something opens it."""
    return tmp_path / "runs.db"


@pytest.fixture
def file_store(store_path: Path) -> Iterator[Store]:
    """A fresh SQLite store on disk at :func:`store_path`, closed after the test: for tests
    whose store the CLI or the dashboard also opens by path."""
    with Store.open(store_path) as opened:
        yield opened


@pytest.fixture(scope="session")
def gold() -> GoldSet:
    """The bundled example gold set (``ragmeter.examples.example_gold_path()``), loaded and
    validated once per session (a ``GoldSet`` is immutable); it matches the bundled example
    corpus (``example_corpus_dir()``)."""
    return load_gold(example_gold_path())


@pytest.fixture
def judge_server() -> Iterator[ChatState]:
    """The deterministic judge on loopback (``tests/_openai_server.py``, ``mode="judge"``):
    faithful exactly when the answer's text occurs in the context, relevance graded by
    shared question words. ``judge_server.requests`` holds what it was sent."""
    with serve_chat("judge") as server:
        yield server


@pytest.fixture
def judge(judge_server: ChatState) -> JudgeClient:
    """A model judge (``JudgeClient``, model ``"m"``) wired to :func:`judge_server`: the whole
    client stack (HTTP, structured output, retries) against a reply the test can predict.
    The offline lexical judge needs no fixture (``client=None``); the real llama.cpp judge
    is ``llm_server`` (slow)."""
    return JudgeClient(model="m", base_url=judge_server.base_url)


# The real PostgreSQL server, its per-test schemas and the sqlite/postgres `store_url`
# (tests/_postgres.py), registered once for every folder; a test using them is `slow`.
postgres_server = _postgres.postgres_server
postgres_url = _postgres.postgres_url
store_url = _postgres.store_url
