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

>>> redact_row("runs", {"id": 1, "retriever": "http://u:pw@h/x", "config": '{"k":1}'})
{'id': 1, 'retriever': 'http://u:***@h/x', 'config': '{"k":1}'}
>>> redact_row("results", {"id": 1, "answer": "see http://u:pw@h/x"})["answer"]  # user's words
'see http://u:pw@h/x'
>>> redact_row("query_log", {"id": "a", "meta": '{"api_key": "sk-1", "user": "u"}'})["meta"]
'{"api_key": "***", "user": "u"}'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Literal

from sqlalchemy import Connection, Engine, Table, inspect, select, update

from ragmeter._redact import redact
from ragmeter.errors import StoreError
from ragmeter.store import _codec, schema

__all__ = ["REDACTED_COLUMNS", "compact", "redact_cell", "redact_row", "redact_tables"]

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


def compact(engine: Engine) -> None:
    """Rebuild the database so that overwritten values leave no copy behind.

    SQLite: checkpoint and empty the write-ahead log, ``VACUUM`` (a fresh file holding
    only live rows), then empty the log again. PostgreSQL: ``VACUUM FULL`` of the
    redacted tables (old row versions are otherwise kept until a vacuum; its own WAL
    and backups are outside ragmeter's reach).
    """
    raw = engine.raw_connection()
    errors = engine.dialect.loaded_dbapi.Error
    try:
        if engine.dialect.name == "sqlite":
            # The driver runs in autocommit (isolation_level None): VACUUM needs no transaction.
            cursor = raw.cursor()
            for statement in (
                "PRAGMA wal_checkpoint(TRUNCATE)",
                "VACUUM",
                "PRAGMA wal_checkpoint(TRUNCATE)",
            ):
                cursor.execute(statement)
            cursor.close()
        elif engine.dialect.name == "postgresql":
            driver = raw.driver_connection
            driver.autocommit = True  # type: ignore[union-attr]
            present = set(inspect(engine).get_table_names())
            names = ", ".join(n for n in REDACTED_COLUMNS if n in present)
            with driver.cursor() as cursor:  # type: ignore[union-attr]
                cursor.execute(f"VACUUM FULL {names}")
    except errors as exc:
        raise StoreError(
            f"store {engine.url.render_as_string(hide_password=True)}: the secrets were "
            f"overwritten but the database could not be compacted ({exc}); run it again "
            "when no one else has the store open"
        ) from exc
    finally:
        raw.close()
