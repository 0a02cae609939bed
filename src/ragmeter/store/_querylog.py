"""SQL for the production query log and its feedback (used by ``Store``).

Rows arrive already shaped as dicts by ``ragmeter.feedback.querylog``; this module only
writes them and reads them back. Kept apart from ``store.py`` so that file stays
about runs.

A query row whose id is already stored (an exporter re-sending a span after a restart, a
log file imported twice) is **skipped, not updated**: the first row written with an id is
kept, the batch's other rows are still written, and the skipped rows are reported in
:class:`QueryLogWrite` (issue 18.4). Before, one such row failed the whole batch.

Every row passes through the one redaction (``_scrub.redact_row``) on its way in: a
service that logs ``meta={"api_key": ...}`` or a hit text quoting a URL's password
stores ``***`` in its place (issue 19.2).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, func, select, update

from ragmeter._redact import redact
from ragmeter.errors import StoreError
from ragmeter.store._scrub import redact_row
from ragmeter.store.schema import query_feedback, query_log

__all__ = ["LoggedQuery", "QueryLogWrite", "count_rows", "insert_rows", "read_queries"]

# Rows per executemany call: large enough to amortise, small enough for Postgres' limits.
_INSERT_CHUNK = 5_000
# Query rows per multi-row INSERT: 7 parameters a row stays far below SQLite's 32,766 and
# PostgreSQL's 65,535 bound parameters per statement.
_QUERY_CHUNK = 1_000


@dataclass(frozen=True)
class LoggedQuery:
    """One logged query with the feedback given on it, oldest feedback first.

    ``feedback`` holds ``(thumbs_up, comment, created)`` tuples.
    """

    id: str
    created: str
    query: str
    hits: tuple[dict[str, Any], ...]
    latency_ms: float | None = None
    user: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    feedback: tuple[tuple[bool, str | None, str], ...] = ()

    @property
    def thumbs_down(self) -> bool:
        """True when the latest feedback on this query is a thumbs down."""
        return bool(self.feedback) and not self.feedback[-1][0]


@dataclass(frozen=True)
class QueryLogWrite:
    """What one query-log write stored.

    ``skipped`` holds the positions (in the ``queries`` given) of rows not written because
    a row with their id was already stored, or came earlier in the same write.

    >>> QueryLogWrite(queries=2, feedback=0, skipped=(1,)).duplicates
    1
    """

    queries: int
    feedback: int
    skipped: tuple[int, ...] = ()
    #: Stored queries whose ``meta.answer`` was set (an answer that arrived after them).
    answers: int = 0

    @property
    def duplicates(self) -> int:
        """How many query rows were skipped because their id was already stored."""
        return len(self.skipped)


def _insert_queries(conn: Connection, rows: Sequence[Mapping[str, Any]]) -> tuple[int, ...]:
    """Insert query rows, skipping ids already stored; the positions skipped."""
    keys = [c.name for c in query_log.columns]
    missing = [k for k in keys if k not in rows[0]]
    if missing:
        raise StoreError(f"query log row without {', '.join(missing)}")
    style = conn.dialect.paramstyle
    if style not in ("qmark", "format", "pyformat"):
        raise StoreError(f"query log: unsupported driver parameter style {style!r}")
    mark = "?" if style == "qmark" else "%s"
    quote = conn.dialect.identifier_preparer.quote
    head = f"INSERT INTO {quote(query_log.name)} ({', '.join(quote(k) for k in keys)}) VALUES "
    one = "(" + ", ".join([mark] * len(keys)) + ")"
    # ON CONFLICT DO NOTHING RETURNING (SQLite >= 3.35, PostgreSQL >= 9.5): one statement
    # per chunk, and the ids it returns are exactly the rows it wrote.
    tail = f" ON CONFLICT ({quote('id')}) DO NOTHING RETURNING {quote('id')}"
    written: set[str] = set()
    for start in range(0, len(rows), _QUERY_CHUNK):
        part = rows[start : start + _QUERY_CHUNK]
        params = tuple(row[key] for row in part for key in keys)
        sql = head + ", ".join([one] * len(part)) + tail
        written.update(str(r[0]) for r in conn.exec_driver_sql(sql, params))
    skipped: list[int] = []
    for position, row in enumerate(rows):
        if row["id"] in written:
            written.discard(row["id"])  # a later row with this id is the duplicate
        else:
            skipped.append(position)
    return tuple(skipped)


def _set_answers(conn: Connection, answers: Mapping[str, str]) -> int:
    """Write ``meta.answer`` onto stored queries; how many were found."""
    ids, found = list(answers), 0
    for start in range(0, len(ids), _QUERY_CHUNK):
        part = ids[start : start + _QUERY_CHUNK]
        where = query_log.c.id.in_(part)
        for row in conn.execute(select(query_log.c.id, query_log.c.meta).where(where)).all():
            meta = json.loads(row.meta) if row.meta else {}
            meta["answer"] = answers[row.id]
            change = update(query_log).where(query_log.c.id == row.id)
            conn.execute(change.values(meta=json.dumps(redact(meta))))
            found += 1
    return found


def insert_rows(
    conn: Connection,
    queries: Sequence[Mapping[str, Any]],
    feedback: Sequence[Mapping[str, Any]],
    answers: Mapping[str, str] | None = None,
) -> QueryLogWrite:
    """Insert query rows and feedback rows in the caller's transaction.

    Query rows whose id is already stored are skipped and reported (module doc); then
    ``answers`` (query id -> answer) are written onto stored queries' ``meta``. The
    statements are built once per call and run through the driver, as in
    ``_results._insert_many``: the logger's writer thread must spend as little time as
    possible holding the GIL, or the request threads calling ``log()`` wait for it.
    """
    queries = [redact_row(query_log.name, row) for row in queries]
    skipped = _insert_queries(conn, queries) if queries else ()
    if feedback:
        keys = [c.name for c in query_feedback.columns if c.name in feedback[0]]
        compiled = query_feedback.insert().compile(dialect=conn.dialect, column_keys=keys)
        order = compiled.positiontup if compiled.positional else None
        for start in range(0, len(feedback), _INSERT_CHUNK):
            part = feedback[start : start + _INSERT_CHUNK]
            params: Sequence[Any] = part
            if order is not None:
                params = [tuple(row[key] for key in order) for row in part]
            conn.exec_driver_sql(str(compiled), params)
    found = _set_answers(conn, answers) if answers else 0
    return QueryLogWrite(
        queries=len(queries) - len(skipped), feedback=len(feedback), skipped=skipped, answers=found
    )


def read_queries(
    conn: Connection, *, since: str | None = None, feedback_only: bool = False
) -> list[LoggedQuery]:
    """Logged queries created at or after ``since`` (ISO 8601), oldest first."""
    query = select(query_log).order_by(query_log.c.created, query_log.c.id)
    if since is not None:
        query = query.where(query_log.c.created >= since)
    if feedback_only:
        has = select(query_feedback.c.query_id).distinct()
        query = query.where(query_log.c.id.in_(has))
    rows = conn.execute(query).all()
    by_query: dict[str, list[tuple[bool, str | None, str]]] = {}
    fb = select(query_feedback).order_by(query_feedback.c.created, query_feedback.c.id)
    if since is not None:
        # Feedback comes after its query, so older feedback cannot belong to these queries.
        fb = fb.where(query_feedback.c.created >= since)
    for row in conn.execute(fb):
        by_query.setdefault(row.query_id, []).append(
            (bool(row.thumbs_up), row.comment, row.created)
        )
    return [
        LoggedQuery(
            id=row.id,
            created=row.created,
            query=row.query,
            hits=tuple(json.loads(row.hits)),
            latency_ms=row.latency_ms,
            user=row.user,
            meta=json.loads(row.meta) if row.meta else {},
            feedback=tuple(by_query.get(row.id, ())),
        )
        for row in rows
    ]


def count_rows(conn: Connection) -> tuple[int, int]:
    """(logged queries, feedback rows)."""
    n_queries = conn.execute(select(func.count()).select_from(query_log)).scalar_one()
    n_feedback = conn.execute(select(func.count()).select_from(query_feedback)).scalar_one()
    return int(n_queries), int(n_feedback)
