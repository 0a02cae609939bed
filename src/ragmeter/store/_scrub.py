"""Passing what a store already holds through :func:`ragmeter._redact.redact` (issue 19.2).

Since issue 19.2 every spec and config is redacted where it enters the store. A store
written before that still holds the secrets (a retriever URL's password, an
``api_key=`` query parameter, a judge ``base_url`` password). ``Store.redact_secrets``
(``ragmeter store redact``) rewrites those columns in place, and ``store copy``
redacts each row as it copies it, both with the same one function.

The columns are named in :data:`REDACTED_COLUMNS`: each is plain text (a spec, an error
message) or a JSON document (a config, a result's ``extra``, a logged query's ``meta`` and
hits). A JSON column that does not parse is redacted as text, so a URL inside it still
loses its password. Beside specs and configs, what a run or the query log keeps of the
user's data is covered too (issue 19.2 leftover): a chunk text or an answer's context
quoting ``postgres://app:PASSWORD@db/prod``, an error message naming a URL with its
password, and ``{"api_key": ...}`` in the ``meta`` a service logs with a query. Results'
``answer`` and the logged ``query`` are the user's words, kept as given.

Issue 27: judge verdicts' error messages are covered too (a judge server may quote the key
it was sent), and every value remembered with :func:`ragmeter._redact.remember_secret` is
hidden wherever it appears (``store redact --secret-env NAME`` remembers a variable's value,
for a token a service echoed into errors stored before values were masked).

>>> redact_row("runs", {"id": 1, "retriever": "http://u:pw@h/x", "config": '{"k":1}'})
{'id': 1, 'retriever': 'http://u:***@h/x', 'config': '{"k":1}'}
>>> redact_row("results", {"id": 1, "answer": "see http://u:pw@h/x"})["answer"]  # user's words
'see http://u:pw@h/x'
>>> redact_row("query_log", {"id": "a", "meta": '{"api_key": "sk-1", "user": "u"}'})["meta"]
'{"api_key": "***", "user": "u"}'
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import Connection, Engine, Table, inspect, select, update

from ragmeter._redact import redact
from ragmeter.errors import StoreBusyError
from ragmeter.store import _codec, schema
from ragmeter.store._engine import BUSY_TIMEOUT_MS

__all__ = [
    "COMPACT_WAIT_S",
    "REDACTED_COLUMNS",
    "compact",
    "redact_cell",
    "redact_row",
    "redact_tables",
]

#: How long ``store redact`` waits for other readers to let the write-ahead log go.
COMPACT_WAIT_S = 10.0
# Each checkpoint attempt waits at most this long inside SQLite, then we look again.
_CHECKPOINT_STEP_S = 1.0
_RETRY_PAUSE_S = 0.05

#: "text", "json", or "json_urls": a JSON document whose keys ragmeter chose (a logged
#: query's hits), where only a URL inside a string can hold a secret, so one without
#: "://" is left as it is without being parsed (the ingest path is hot).
Kind = Literal["text", "json", "json_urls"]

#: table -> column -> what the column holds: every place a spec or a config is stored.
REDACTED_COLUMNS: Mapping[str, Mapping[str, Kind]] = {
    "runs": {"retriever": "text", "config": "json"},
    "judge_runs": {"config": "json"},
    "judge_calibrations": {"config": "json"},
    "results": {"error": "text", "extra": "json"},
    "judge_verdicts": {"error": "text"},
    "query_log": {"hits": "json_urls", "meta": "json"},
}

# Each JSON column is re-encoded the way its writer encodes it.
_DUMPS: Mapping[str, Callable[[Any], str]] = {
    "runs": _codec.dumps,
    "judge_runs": json.dumps,
    "judge_calibrations": json.dumps,
    "results": _codec.dumps,
    "query_log": json.dumps,
}


def redact_cell(table: str, kind: Kind, value: Any) -> Any:
    """``value`` of a ``kind`` column of ``table`` with its secrets hidden.

    Returns ``value`` itself (the same string) when nothing had to be hidden, so an
    unchanged row is recognised by identity and never rewritten.

    >>> redact_cell("judge_runs", "json", '{"base_url": "http://u:pw@h/v1"}')
    '{"base_url": "http://u:***@h/v1"}'
    >>> v = '{"model": "m"}'; redact_cell("judge_runs", "json", v) is v
    True
    """
    if not isinstance(value, str) or (kind == "json_urls" and "://" not in value):
        return value
    if kind != "text":
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        else:
            hidden = redact(parsed)
            return value if hidden == parsed else _DUMPS[table](hidden)
    hidden_text = redact(value)
    return value if hidden_text == value else hidden_text


def redact_row(table: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``row`` (column -> value) of ``table`` with every stored secret hidden."""
    columns = REDACTED_COLUMNS.get(table, {})
    return {
        name: redact_cell(table, columns[name], value) if name in columns else value
        for name, value in row.items()
    }


def _table(name: str) -> Table:
    return schema.metadata.tables[name]


def redact_tables(conn: Connection, *, dry_run: bool) -> dict[str, int]:
    """Hide the secrets of every :data:`REDACTED_COLUMNS` column; ``{"table.column": n}``.

    ``n`` counts the values that held a secret (rewritten, or that would be with
    ``dry_run``). Tables an old store lacks are skipped.
    """
    present = set(inspect(conn).get_table_names())
    changed: dict[str, int] = {}
    for name, columns in REDACTED_COLUMNS.items():
        if name not in present:
            continue
        table = _table(name)
        keys = list(table.primary_key.columns)
        cols = [table.c[c] for c in columns]
        for row in conn.execute(select(*keys, *cols)).all():
            values = row._mapping
            new = {c: redact_cell(name, kind, values[c]) for c, kind in columns.items()}
            new = {c: v for c, v in new.items() if v is not values[c]}
            for c in new:
                changed[f"{name}.{c}"] = changed.get(f"{name}.{c}", 0) + 1
            if new and not dry_run:
                where = [k == values[k.name] for k in keys]
                conn.execute(update(table).where(*where).values(**new))
    return changed


def compact(engine: Engine, *, wait: float = COMPACT_WAIT_S) -> None:
    """Rebuild the database so that overwritten values leave no copy behind.

    SQLite: checkpoint and empty the write-ahead log, ``VACUUM`` (a fresh file holding
    only live rows), then empty the log again. A checkpoint cannot finish while another
    connection reads an older snapshot (the old pages, secrets included, stay in the log
    and the file): it is retried for ``wait`` seconds, then :class:`StoreBusyError`
    (exit 3) names the processes that hold the file open, so success is only reported
    once the log is empty (issue 27.8). PostgreSQL: ``VACUUM FULL`` of the redacted tables
    (old row versions are otherwise kept until a vacuum; its own WAL and backups are
    outside ragmeter's reach).
    """
    raw = engine.raw_connection()
    errors = engine.dialect.loaded_dbapi.Error
    try:
        if engine.dialect.name == "sqlite":
            # The driver runs in autocommit (isolation_level None): VACUUM needs no transaction.
            cursor = raw.cursor()
            try:
                _checkpoint(engine, cursor, wait)
                cursor.execute("VACUUM")
                _checkpoint(engine, cursor, wait)
            finally:  # the connection goes back to the pool with the usual timeout
                cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                cursor.close()
        elif engine.dialect.name == "postgresql":
            driver = raw.driver_connection
            driver.autocommit = True  # type: ignore[union-attr]
            present = set(inspect(engine).get_table_names())
            names = ", ".join(n for n in REDACTED_COLUMNS if n in present)
            with driver.cursor() as cursor:  # type: ignore[union-attr]
                cursor.execute(f"VACUUM FULL {names}")
    except errors as exc:
        raise StoreBusyError(
            f"store {engine.url.render_as_string(hide_password=True)}: the secrets were "
            f"overwritten but the database could not be compacted ({exc}); run it again "
            "when no one else has the store open"
        ) from exc
    finally:
        raw.close()


def _checkpoint(engine: Engine, cursor: Any, wait: float) -> None:
    """Copy the write-ahead log into the file and empty it, retrying while readers hold it."""
    deadline = time.monotonic() + wait
    while True:
        left = max(deadline - time.monotonic(), 0.0)
        # A TRUNCATE checkpoint waits for readers through the busy handler, up to this long.
        cursor.execute(f"PRAGMA busy_timeout = {int(min(left, _CHECKPOINT_STEP_S) * 1000)}")
        busy = cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        if not busy:
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(_RETRY_PAUSE_S)
    path = engine.url.database or ""
    raise StoreBusyError(
        f"store {path}: the secrets were overwritten, but copies stay on disk (in the "
        f"write-ahead log {path}-wal and the file's old pages) while another connection "
        f"reads the store ({_holders(path)}; waited {wait:g} s). Close it (a dashboard, "
        "an ingest server, a script) and run `ragmeter store redact` again"
    )


def _holders(path: str) -> str:
    """Who has the database file open, from /proc (Linux); otherwise a plain phrase."""
    try:
        target = os.path.realpath(path)
        names = {target, f"{target}-wal", f"{target}-shm"}
        found: dict[int, str] = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if any(os.path.realpath(fd) in names for fd in (entry / "fd").iterdir()):
                    found[int(entry.name)] = (entry / "comm").read_text().strip()
            except OSError:  # gone, or not ours to look at
                continue
    except OSError:
        found = {}
    if not found:
        return "a reader this system does not name"
    shown = [
        f"pid {pid} ({'this process' if pid == os.getpid() else name})"
        for pid, name in sorted(found.items())
    ]
    return "open in " + ", ".join(shown)
