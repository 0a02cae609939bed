"""Fixtures every test gets."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from _cache import persistent_cache

# numba (under ranx) compiles its kernels on first use and caches them where this says; numba
# reads it when first imported, so it is set before any test module (issue 29.5).
os.environ.setdefault("NUMBA_CACHE_DIR", str(persistent_cache("numba")))

# Read by session fixtures before this one runs; kept so a developer can point the
# Postgres tests at an existing server.
KEEP = {"RAGMETER_TEST_POSTGRES_URL"}


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
    {"postgres_server", "postgres_url", "local_ray", "llm_server", "embedder", "scifact"}
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
