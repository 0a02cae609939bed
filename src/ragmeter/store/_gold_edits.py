"""SQL for gold edits (used by ``Store.add_gold_edit`` and ``Store.gold_edits``).

An edit is validated by ``ragmeter.gold.edits`` before it gets here; this module only
writes it and reads it back, oldest first.
"""

from __future__ import annotations

from sqlalchemy import Connection, insert, select

from ragmeter.gold.edits import GoldEdit
from ragmeter.store.schema import gold_edits

__all__ = ["insert_edit", "read_edits"]

_FIELDS = ("created", "user", "run_id", "gold_hash", "item_id", "action", "doc", "chunk",
           "grade", "quote")  # fmt: skip


def insert_edit(conn: Connection, edit: GoldEdit) -> int:
    """Insert ``edit`` in the caller's transaction; returns its new id."""
    values = {name: getattr(edit, name) for name in _FIELDS}
    result = conn.execute(insert(gold_edits).values(**values).returning(gold_edits.c.id))
    return int(result.scalar_one())


def read_edits(conn: Connection, run_id: int | None = None) -> list[GoldEdit]:
    """Every stored edit (of run ``run_id`` when given), oldest first."""
    query = select(gold_edits).order_by(gold_edits.c.id)
    if run_id is not None:
        query = query.where(gold_edits.c.run_id == run_id)
    return [
        GoldEdit(id=int(row.id), **{name: getattr(row, name) for name in _FIELDS})
        for row in conn.execute(query)
    ]
