"""Copying a whole store into another one (``Store.copy_to``, ``ragmeter store copy``).

Every table of the schema is copied row for row with its ids unchanged, in
foreign-key order, streaming pages from the source, all in one transaction on
the destination: a failure leaves the destination as it was. Stored specs and
configs pass through the one ``redact()`` on the way (``_scrub.redact_row``), so a
store written before secrets were redacted (issue 19.2) is copied without them. Ids stay the same
because users refer to runs by id; the destination's id counters are then moved
past the source's, so a run id the source handed out (even one deleted since)
never comes back.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    LargeBinary,
    Table,
    func,
    insert,
    inspect,
    select,
    text,
)

from ragmeter.errors import StoreError
from ragmeter.store import schema
from ragmeter.store._scrub import redact_row

__all__ = ["PAGE_ROWS", "copy_store"]

# Rows read from the source per round trip (and inserted per executemany).
PAGE_ROWS = 5_000
# The same for a table with a blob column.
_BLOB_PAGE_ROWS = 20


def _tables(conn: Connection) -> list[Table]:
    """Schema tables present in the database behind ``conn``, parents before children."""
    present = set(inspect(conn).get_table_names())
    return [
        table
        for table in schema.metadata.sorted_tables
        if table.name in present and table is not schema.migrations_table
    ]


def _pages(conn: Connection, table: Table) -> Iterator[Sequence[Any]]:
    query = select(table).order_by(*table.primary_key.columns)
    # A row with a blob can be megabytes (a run's metric column, 8 bytes per question).
    blobs = any(isinstance(column.type, LargeBinary) for column in table.columns)
    rows = _BLOB_PAGE_ROWS if blobs else PAGE_ROWS
    result = conn.execution_options(yield_per=rows).execute(query)
    yield from result.partitions()


def _autoincrement_id(table: Table) -> str | None:
    """The name of ``table``'s integer id column that the database numbers, if any."""
    column = table.autoincrement_column
    return None if column is None else column.name


def _last_ids(conn: Connection, tables: Sequence[Table]) -> dict[str, int]:
    """The highest id each numbered table has handed out (deleted rows included if known)."""
    out: dict[str, int] = {}
    sqlite_seq: dict[str, int] = {}
    if conn.dialect.name == "sqlite" and "sqlite_sequence" in set(
        conn.exec_driver_sql("SELECT name FROM sqlite_master").scalars()
    ):
        rows = conn.exec_driver_sql("SELECT name, seq FROM sqlite_sequence").all()
        sqlite_seq = {name: int(seq) for name, seq in rows}
    for table in tables:
        column = _autoincrement_id(table)
        if column is None:
            continue
        highest = conn.execute(select(func.max(table.c[column]))).scalar() or 0
        if conn.dialect.name == "postgresql":
            seq = conn.execute(
                text("SELECT pg_get_serial_sequence(:t, :c)"), {"t": table.name, "c": column}
            ).scalar()
            if seq:
                row = conn.execute(text(f"SELECT last_value, is_called FROM {seq}")).first()
                if row is not None and row.is_called:
                    highest = max(highest, int(row.last_value))
        highest = max(highest, int(sqlite_seq.get(table.name, 0)))
        out[table.name] = int(highest)
    return out


def _advance_ids(conn: Connection, last_ids: dict[str, int], tables: Sequence[Table]) -> None:
    """Make the destination's next ids come after ``last_ids``."""
    for table in tables:
        column = _autoincrement_id(table)
        last = last_ids.get(table.name, 0)
        if column is None or last < 1:
            continue
        if conn.dialect.name == "postgresql":
            # Explicit ids do not move a PostgreSQL sequence: move it ourselves.
            conn.execute(
                text("SELECT setval(pg_get_serial_sequence(:t, :c), :v)"),
                {"t": table.name, "c": column, "v": last},
            )
        elif conn.dialect.name == "sqlite":
            names = set(conn.exec_driver_sql("SELECT name FROM sqlite_master").scalars())
            if "sqlite_sequence" not in names:
                continue  # a table without AUTOINCREMENT reuses max(id) + 1 anyway
            conn.execute(
                text("UPDATE sqlite_sequence SET seq = max(seq, :v) WHERE name = :t"),
                {"t": table.name, "v": last},
            )


def copy_store(source: Engine, write: Any, source_url: str, dest_url: str) -> dict[str, int]:
    """Copy every row of the store behind ``source`` through ``write`` (a store writer).

    Returns ``{table: rows copied}``. Refuses a destination that holds any rows.
    """
    with source.connect() as src:
        tables = _tables(src)
        last_ids = _last_ids(src, tables)

    def tx(dst: Connection) -> dict[str, int]:
        present = set(inspect(dst).get_table_names())
        missing = [t.name for t in tables if t.name not in present]
        if missing:
            raise StoreError(f"store {dest_url} lacks the tables {missing}: upgrade ragmeter")
        busy = [t.name for t in tables if dst.execute(select(func.count()).select_from(t)).scalar()]
        if busy:
            raise StoreError(
                f"store {dest_url} is not empty (it has rows in {', '.join(busy)}); "
                "copy into a new, empty store so that run ids stay the same"
            )
        copied: dict[str, int] = {}
        with source.connect() as src:
            for table in tables:
                n = 0
                for page in _pages(src, table):
                    dst.execute(
                        insert(table), [redact_row(table.name, row._mapping) for row in page]
                    )
                    n += len(page)
                copied[table.name] = n
        _advance_ids(dst, last_ids, tables)
        return copied

    copied: dict[str, int] = write(tx)
    return copied
