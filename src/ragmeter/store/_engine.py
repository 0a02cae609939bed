"""Turning a path or URL into a configured SQLAlchemy engine.

SQLite gets WAL, a busy timeout and foreign keys on every connection, and write
transactions that start with ``BEGIN IMMEDIATE``: a deferred transaction that
reads first and writes later can fail at once with "database is locked" when
another process wrote in between, whatever the busy timeout, so writers take
the write lock up front and wait for it in SQLite's busy handler instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote
from weakref import WeakKeyDictionary

from sqlalchemy import URL, Connection, Engine, create_engine, event, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import StaticPool

from ragmeter.errors import StoreError

__all__ = [
    "BUSY_TIMEOUT_MS",
    "WRITE_OPTION",
    "Tracer",
    "is_memory",
    "make_engine",
    "to_url",
    "tracer_of",
]

Tracer = Callable[[str, Any], object]

# How long one SQLite statement waits for another process's write lock.
BUSY_TIMEOUT_MS = 10_000
# Execution option that marks a connection as a writer (see module docstring).
WRITE_OPTION = "ragmeter_write"


def to_url(target: str | os.PathLike[str]) -> URL:
    """A SQLAlchemy URL for a path or URL string.

    ``postgresql://`` means psycopg 3, the driver the ``[postgres]`` extra installs.

    >>> to_url("runs/ragmeter.db").drivername
    'sqlite'
    >>> to_url("postgresql://u@db/ragmeter").drivername
    'postgresql+psycopg'
    """
    text = os.fspath(target)
    if "://" not in text:
        return URL.create("sqlite", database=str(Path(text).expanduser().resolve()))
    try:
        url = make_url(text)
    except ArgumentError as exc:
        raise StoreError(f"store URL {text!r} is not a valid database URL: {exc}") from exc
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    return url


def is_memory(url: URL) -> bool:
    """True for an in-memory SQLite URL (``sqlite://`` or ``sqlite:///:memory:``)."""
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")


def _read_only_sqlite(url: URL) -> URL:
    """A URL that opens the SQLite file of ``url`` with ``mode=ro``.

    A WAL database can only be read where its ``-shm`` file exists or can be made;
    in a folder nobody can write, neither holds and no writer can exist, so the file
    is opened ``immutable`` (SQLite then takes no locks).
    """
    path = Path(url.database or "")
    if not path.is_file():
        raise StoreError(f"store {path} does not exist")
    query = {"mode": "ro", "uri": "true"}
    shared = any(Path(f"{path}{suffix}").exists() for suffix in ("-wal", "-shm"))
    if not shared and not os.access(path.parent, os.W_OK):
        query["immutable"] = "1"
    return URL.create("sqlite", database=f"file:{quote(str(path))}", query=query)


def make_engine(url: URL, tracer: Tracer | None, *, read_only: bool = False) -> Engine:
    """Create the engine for ``url``; for a SQLite file, create its folder first.

    ``read_only`` opens a SQLite file with ``mode=ro`` and creates nothing.
    """
    kwargs: dict[str, Any] = {}
    sqlite = url.get_backend_name() == "sqlite"
    if sqlite and read_only and not is_memory(url):
        url = _read_only_sqlite(url)
    if sqlite and is_memory(url):
        # One connection shared by every thread, so all of them see one database.
        kwargs = {"poolclass": StaticPool, "connect_args": {"check_same_thread": False}}
    elif sqlite and url.database and not url.database.startswith("file:"):
        try:
            Path(url.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the folder of store {url.database}: {exc}") from exc
    try:
        engine = create_engine(url, **kwargs)
    except (ArgumentError, ImportError) as exc:
        hint = " (install ragmeter[postgres])" if "psycopg" in str(exc) else ""
        raise StoreError(f"cannot open store {url!r}: {exc}{hint}") from exc
    if tracer is not None:
        _trace(engine, tracer)
    if sqlite:
        # A read-only connection cannot switch the journal mode: leave the file as it is.
        _configure_sqlite(engine, memory=is_memory(url) or read_only, tracer=tracer)
    return engine


# The tracer of each engine, for statements sent past SQLAlchemy (PostgreSQL COPY).
_TRACERS: WeakKeyDictionary[Engine, Tracer] = WeakKeyDictionary()


def tracer_of(engine: Engine) -> Tracer | None:
    """The tracer ``engine`` was made with, if any."""
    return _TRACERS.get(engine)


def _trace(engine: Engine, tracer: Tracer) -> None:
    _TRACERS[engine] = tracer

    @event.listens_for(engine, "before_cursor_execute")
    def before(
        conn: Connection, cursor: Any, statement: str, params: Any, context: Any, many: bool
    ) -> None:
        tracer(statement, params)


def _configure_sqlite(engine: Engine, *, memory: bool, tracer: Tracer | None) -> None:
    pragmas = [f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}", "PRAGMA foreign_keys = ON"]
    if not memory:
        # WAL: readers never block the writer. synchronous=NORMAL is safe with WAL
        # (a crash of the process loses nothing committed; power loss may drop the
        # last commits) and makes each commit several times cheaper.
        pragmas += ["PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL"]

    @event.listens_for(engine, "connect")
    def connect(dbapi_connection: Any, record: Any) -> None:
        # Let SQLAlchemy's "begin" event, not the driver, decide how to BEGIN.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            for pragma in pragmas:
                if tracer is not None:
                    tracer(pragma, ())
                cursor.execute(pragma)
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def begin(conn: Connection) -> None:
        write = conn.get_execution_options().get(WRITE_OPTION, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")
