"""A real, throwaway PostgreSQL server for the store tests and benchmarks (issue 9).

``TemporaryPostgres`` runs the Debian binaries (``initdb``, ``pg_ctl``) from
``/usr/lib/postgresql/*/bin`` (or ``PATH``) as an unprivileged user: as root it
runs them as the ``postgres`` system user the Debian package creates, because
PostgreSQL refuses to run as root. The data directory and the unix socket live
in a temporary directory; the server listens on 127.0.0.1 on a free port, with
fsync off (a test database need not survive a power cut).

Fixtures (import them into a test module: ``from _postgres import postgres_url``):

- ``postgres_server`` (session): the base URL of a server, started once.
  ``RAGMETER_TEST_POSTGRES_URL`` points the tests at an existing server instead.
  Without binaries the tests skip, except under ``CI=true``, where they fail:
  CI must really test PostgreSQL.
- ``postgres_url`` (function): a URL whose ``search_path`` is a fresh, empty
  schema, dropped after the test, so every test starts from an empty store
  (a schema costs a millisecond; a database costs far more).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _net import free_port

# Read at import, before any fixture clears RAGMETER_* variables from the environment.
EXISTING_URL = os.environ.get("RAGMETER_TEST_POSTGRES_URL", "").strip()
IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
SYSTEM_USER = "postgres"


class PostgresUnavailable(RuntimeError):
    """The PostgreSQL binaries (or a user to run them as) are missing."""


def find_bindir() -> Path:
    """The folder holding ``initdb`` and ``pg_ctl`` (newest Debian version first)."""
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit() else 0,
        reverse=True,
    )
    for folder in candidates:
        if (Path(folder) / "initdb").is_file() and (Path(folder) / "pg_ctl").is_file():
            return Path(folder)
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(initdb).parent
    raise PostgresUnavailable(
        "PostgreSQL server binaries not found (looked in /usr/lib/postgresql/*/bin and PATH); "
        "install them with `apt-get install -y postgresql` or set RAGMETER_TEST_POSTGRES_URL"
    )


class TemporaryPostgres:
    """Start a PostgreSQL server in a temporary directory; stop and delete it on exit.

    >>> with TemporaryPostgres() as pg:       # doctest: +SKIP
    ...     Store.open(pg.url)
    """

    def __init__(self, *, database: str = "ragmeter") -> None:
        self.bindir = find_bindir()
        self.database = database
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="ragmeter-pg-"))
        self.data = self.root / "data"
        self.sockets = self.root / "sockets"
        self.log = self.root / "server.log"
        self._as_user: list[str] = []
        self.user = SYSTEM_USER
        if os.geteuid() == 0:
            # initdb and postgres refuse to run as root: run them as the Debian system user.
            try:
                import pwd

                entry = pwd.getpwnam(SYSTEM_USER)
            except KeyError as exc:
                shutil.rmtree(self.root, ignore_errors=True)
                raise PostgresUnavailable(
                    f"running as root and there is no {SYSTEM_USER!r} system user to run "
                    "PostgreSQL as (the Debian postgresql package creates it)"
                ) from exc
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            self._as_user = ["runuser", "-u", SYSTEM_USER, "--"]
        else:
            import getpass

            self.user = getpass.getuser()
        self.url = f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"
        self._started = False

    def _run(self, *args: str) -> None:
        command = [*self._as_user, *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            log = self.log.read_text(errors="replace") if self.log.exists() else ""
            raise RuntimeError(
                f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}\n"
                f"{log}"
            )

    def start(self) -> TemporaryPostgres:
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            self.user,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        )
        os.makedirs(self.sockets, exist_ok=True)
        if self._as_user:
            shutil.chown(self.sockets, user=SYSTEM_USER)
        options = " ".join(
            [
                "-c listen_addresses=127.0.0.1",
                f"-p {self.port}",
                f"-k {self.sockets}",
                "-c fsync=off",
                "-c synchronous_commit=off",
                "-c full_page_writes=off",
                "-c max_connections=200",
            ]
        )
        self._run(
            str(self.bindir / "pg_ctl"),
            "start",
            "-w",
            "-t",
            "60",
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            options,
        )
        self._started = True
        self._run(
            str(self.bindir / "createdb"),
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-U",
            self.user,
            self.database,
        )
        return self

    def stop(self) -> None:
        if self._started:
            with contextlib.suppress(RuntimeError, subprocess.SubprocessError):
                self._run(
                    str(self.bindir / "pg_ctl"), "stop", "-D", str(self.data), "-m", "fast", "-w"
                )
            self._started = False
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> TemporaryPostgres:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def with_schema(url: str, schema: str) -> str:
    """``url`` with ``search_path`` set to ``schema`` (libpq ``options``)."""
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}options=-csearch_path%3D{schema}"


def _admin(url: str, statement: str) -> None:
    import psycopg

    conninfo = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(statement)


try:
    import pytest
except ImportError:  # pragma: no cover - the benchmark imports this module without pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.fixture(scope="session")
    def postgres_server() -> Iterator[str]:
        """The URL of a PostgreSQL server: RAGMETER_TEST_POSTGRES_URL or a throwaway one."""
        try:
            import psycopg  # noqa: F401
        except ImportError:
            reason = "psycopg is not installed (pip install 'ragmeter[postgres]')"
            if IN_CI:
                pytest.fail(f"CI=true but {reason}")
            pytest.skip(reason)
        if EXISTING_URL:
            yield EXISTING_URL
            return
        try:
            server = TemporaryPostgres()
        except PostgresUnavailable as exc:
            if IN_CI:
                pytest.fail(f"CI=true but PostgreSQL cannot be tested: {exc}")
            pytest.skip(str(exc))
        with server:
            yield server.url

    @pytest.fixture
    def postgres_url(postgres_server: str) -> Iterator[str]:
        """A URL onto a fresh, empty schema of the test server (dropped afterwards)."""
        schema = f"t_{uuid.uuid4().hex[:12]}"
        _admin(postgres_server, f"CREATE SCHEMA {schema}")
        try:
            yield with_schema(postgres_server, schema)
        finally:
            _admin(postgres_server, f"DROP SCHEMA {schema} CASCADE")

    @pytest.fixture(params=["sqlite", "postgres"])
    def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
        """A URL for a new, empty store: a SQLite file or a PostgreSQL schema."""
        if request.param == "sqlite":
            return f"sqlite:///{tmp_path / 'store.db'}"
        return str(request.getfixturevalue("postgres_url"))


def execute(url: str, statement: str) -> list[tuple[Any, ...]]:
    """Run one SQL statement on the store at ``url`` outside ragmeter; rows if any."""
    from sqlalchemy import text

    from ragmeter.store._engine import make_engine, to_url

    engine = make_engine(to_url(url), None)
    try:
        with engine.begin() as conn:
            result = conn.execute(text(statement))
            return [tuple(row) for row in result] if result.returns_rows else []
    finally:
        engine.dispose()


def table_names(url: str) -> set[str]:
    """The tables of the store at ``url`` (its schema only, on PostgreSQL)."""
    from sqlalchemy import inspect

    from ragmeter.store._engine import make_engine, to_url

    engine = make_engine(to_url(url), None)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
