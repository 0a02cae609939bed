"""Numbered, named schema migrations, applied when a store is opened.

Each migration is a plain function of an open connection. ``migrate`` applies the
missing ones in order, each in its own write transaction together with the row
that records it in ``_migrations``, so a crash leaves the store at a clean
version and two processes opening a new store at once apply each step once.

To change the schema: add a function and append it to ``MIGRATIONS`` with the
next number. Never edit or renumber a migration that has shipped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import NamedTuple, Protocol, TypeVar

from sqlalchemy import Connection, insert, inspect, select, text

from ragmeter.errors import StoreError
from ragmeter.store import schema

__all__ = ["MIGRATIONS", "Migration", "Writer", "applied", "latest_version", "migrate"]

T = TypeVar("T")


class Writer(Protocol):
    """Runs a function in one write transaction (with the store's lock and retries)."""

    def __call__(self, fn: Callable[[Connection], T], /) -> T: ...


# Any constant will do: it only has to be the same for every ragmeter process.
_PG_MIGRATION_LOCK = 0x7261676D  # "ragm"


class Migration(NamedTuple):
    """One schema step: its number, a short name and the function that applies it."""

    number: int
    name: str
    apply: Callable[[Connection], None]


def _m0001_initial(conn: Connection) -> None:
    """Gold sets, runs and one result row per question."""
    for table in (schema.gold_sets, schema.runs, schema.results):
        table.create(conn)


def _m0002_metrics(conn: Connection) -> None:
    """Run-level metric means and per-question metric values."""
    for table in (schema.run_metrics, schema.question_metrics_v2):
        table.create(conn)


def _m0003_query_log(conn: Connection) -> None:
    """The production query log and the thumbs up/down feedback on it (flywheel)."""
    for table in (schema.query_log, schema.query_feedback):
        table.create(conn)


def _m0004_judge(conn: Connection) -> None:
    """Judge cache, verdicts per run, people's labels and calibration results."""
    from ragmeter.store import _judge

    _judge.create_tables(conn)


def _m0005_gold_edits(conn: Connection) -> None:
    """People's gold edits made from a run's missed questions (issue 15.3)."""
    schema.gold_edits.create(conn)


def _m0006_claim_labels(conn: Connection) -> None:
    """People's labels of a run's claim decisions, for corrected claim metrics (issue 17.2)."""
    schema.claim_labels.create(conn)


def _m0007_explanations(conn: Connection) -> None:
    """Why each miss of a run was missed, with evidence (``ragmeter explain``, issue 28)."""
    schema.explanations.create(conn)


def _m0008_result_summary(conn: Connection) -> None:
    """A per-question summary beside the ranking, so reports decode only the rankings
    they print (issue 29.1); older rows keep NULL and are decoded as before."""
    # A store created at this version already has it (migration 1 creates today's table).
    if any(c["name"] == "summary" for c in inspect(conn).get_columns("results")):
        return
    conn.execute(text("ALTER TABLE results ADD COLUMN summary TEXT"))


def _m0009_metric_columns(conn: Connection) -> None:
    """Per-question metric values as one row per run and metric (its item ids and a float64
    blob) instead of one row per question (issue 29.2): the values move over, NULL
    (undefined) becoming NaN, and the old ``question_metrics`` table is dropped."""
    from ragmeter.store._metric_columns import column_rows
    from ragmeter.store._results import _fetch_raw

    old, new = schema.question_metrics_v2, schema.metric_columns
    new.create(conn)

    def metrics_of(run_id: int) -> Iterator[tuple[str, dict[str, float]]]:
        names = conn.execute(
            select(old.c.metric).where(old.c.run_id == run_id).distinct().order_by(old.c.metric)
        ).scalars()
        for metric in list(names):
            # The driver's own tuples: a 100k-question run's metric is 100k rows.
            rows = _fetch_raw(
                select(old.c.item_id, old.c.value).where(
                    old.c.run_id == run_id, old.c.metric == metric
                )
            )(conn)
            yield metric, {item_id: math.nan if v is None else v for item_id, v in rows}

    run_ids = list(conn.execute(select(old.c.run_id).distinct().order_by(old.c.run_id)).scalars())
    for run_id in run_ids:
        for row in column_rows(run_id, metrics_of(run_id)):  # one metric in memory at a time
            conn.execute(insert(new), [row])
    old.drop(conn)


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial", _m0001_initial),
    Migration(2, "metrics", _m0002_metrics),
    Migration(3, "query_log", _m0003_query_log),
    Migration(4, "judge", _m0004_judge),
    Migration(5, "gold_edits", _m0005_gold_edits),
    Migration(6, "claim_labels", _m0006_claim_labels),
    Migration(7, "explanations", _m0007_explanations),
    Migration(8, "result_summary", _m0008_result_summary),
    Migration(9, "metric_columns", _m0009_metric_columns),
)


def latest_version() -> int:
    """The schema version this ragmeter writes.

    >>> latest_version() >= 2
    True
    """
    return MIGRATIONS[-1].number


def _serialise(conn: Connection) -> None:
    # SQLite write transactions already start with BEGIN IMMEDIATE (one writer);
    # PostgreSQL needs an explicit lock so concurrent openers queue up here.
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})


def applied(conn: Connection) -> dict[int, str]:
    """Migration number -> name of every migration recorded in the store."""
    table = schema.migrations_table
    rows = conn.execute(select(table.c.number, table.c.name).order_by(table.c.number))
    return {number: name for number, name in rows}


def check(read: Writer, url: str) -> None:
    """Refuse to read a store whose schema is not the one this ragmeter writes.

    For stores opened read-only, which cannot be migrated.
    """

    def versions(conn: Connection) -> dict[int, str] | None:
        if not inspect(conn).has_table(schema.migrations_table.name):
            return None
        return applied(conn)

    done = read(versions)
    if done is None:
        raise StoreError(f"store {url} is not a ragmeter store (it has no _migrations table)")
    newest = max(done, default=0)
    if newest > latest_version():
        raise StoreError(
            f"the store has schema version {newest} but this ragmeter only knows "
            f"up to {latest_version()}: upgrade ragmeter to use this store"
        )
    missing = [m.number for m in MIGRATIONS if m.number not in done]
    if missing:
        raise StoreError(
            f"store {url} has schema version {newest} and needs migrating to "
            f"{latest_version()}, which a read-only open cannot do: open it once with "
            "write access (e.g. ragmeter eval)"
        )


def migrate(write: Writer, *, target: int | None = None) -> list[Migration]:
    """Create ``_migrations`` if needed and apply the missing migrations up to ``target``.

    Returns the migrations applied now (empty when the store was up to date).
    ``write`` runs a function in one write transaction, e.g. ``Store._write``.

    >>> from ragmeter.store import Store
    >>> with Store.memory() as store:   # opening a store migrates it
    ...     store.schema_version == latest_version()
    True
    """
    target = latest_version() if target is None else target
    known = {m.number for m in MIGRATIONS}

    def create_table(conn: Connection) -> dict[int, str]:
        _serialise(conn)
        schema.migrations_table.create(conn, checkfirst=True)
        return applied(conn)

    done = write(create_table)
    unknown = sorted(set(done) - known)
    if unknown:
        raise StoreError(
            f"the store has schema version {max(unknown)} but this ragmeter only knows "
            f"up to {latest_version()}: upgrade ragmeter to use this store"
        )
    now_applied: list[Migration] = []
    for migration in MIGRATIONS:
        if migration.number > target or migration.number in done:
            continue

        def step(conn: Connection, migration: Migration = migration) -> bool:
            _serialise(conn)
            # Another process may have applied it since we looked.
            if migration.number in applied(conn):
                return False
            migration.apply(conn)
            conn.execute(
                insert(schema.migrations_table).values(
                    number=migration.number,
                    name=migration.name,
                    applied=datetime.now(UTC).isoformat(timespec="seconds"),
                )
            )
            return True

        if write(step):
            now_applied.append(migration)
    return now_applied
