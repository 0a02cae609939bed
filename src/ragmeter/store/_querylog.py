"""SQL for the production query log and its feedback (used by ``Store``).

Rows arrive already shaped as dicts by ``ragmeter.feedback.querylog``; this module only
writes them and reads them back. Kept apart from ``store.py`` so that file stays
about runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, func, select

from ragmeter.store.schema import query_feedback, query_log

__all__ = ["LoggedQuery", "count_rows", "insert_rows", "read_queries"]

# Rows per executemany call: large enough to amortise, small enough for Postgres' limits.
_INSERT_CHUNK = 5_000


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


def insert_rows(
    conn: Connection,
    queries: Sequence[Mapping[str, Any]],
    feedback: Sequence[Mapping[str, Any]],
) -> None:
    """Insert query rows and feedback rows in the caller's transaction.

    The driver's own ``executemany`` is used, as in ``_results._insert_many``: the
    logger's writer thread must spend as little time as possible holding the GIL,
    or the request threads calling ``log()`` wait for it.
    """
    for table, rows in ((query_log, queries), (query_feedback, feedback)):
        if not rows:
            continue
        keys = [c.name for c in table.columns if c.name in rows[0]]
        compiled = table.insert().compile(dialect=conn.dialect, column_keys=keys)
        order = compiled.positiontup if compiled.positional else None
        for start in range(0, len(rows), _INSERT_CHUNK):
            part = rows[start : start + _INSERT_CHUNK]
            params: Sequence[Any] = part
            if order is not None:
                params = [tuple(row[key] for key in order) for row in part]
            conn.exec_driver_sql(str(compiled), params)


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
