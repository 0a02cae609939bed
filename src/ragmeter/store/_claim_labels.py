"""SQL for people's claim labels (``Store.save_claim_labels`` and ``Store.claim_labels``).

One row per run and question: the labels as JSON text (shaped and validated by
``ragmeter.judging.claim_labels`` before they get here), who gave them and when. Saving the
same labels again writes nothing, so importing one file twice changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, insert, select, update

from ragmeter.store import _codec
from ragmeter.store.schema import claim_labels

__all__ = ["read_labels", "write_labels"]


def _encode(labels: Mapping[str, Any]) -> str:
    # Sorted keys: equal labels are equal text, whatever order they were built in.
    return json.dumps(dict(labels), ensure_ascii=False, sort_keys=True)


def write_labels(
    conn: Connection, run_id: int, labels: Mapping[str, Mapping[str, Any]], who: str
) -> dict[str, int]:
    """Insert new questions' labels, replace changed ones, leave equal ones alone.

    Returns ``{"stored": new, "updated": changed, "unchanged": equal}``.
    """
    table = claim_labels
    query = select(table.c.item_id, table.c.labels).where(table.c.run_id == run_id)
    known = {row.item_id: row.labels for row in conn.execute(query)}
    counts = {"stored": 0, "updated": 0, "unchanged": 0}
    now = _codec.now()
    for item_id, value in labels.items():
        text = _encode(value)
        if item_id not in known:
            conn.execute(
                insert(table).values(
                    run_id=run_id, item_id=item_id, labels=text, who=who, created=now
                )
            )
            counts["stored"] += 1
        elif known[item_id] != text:
            conn.execute(
                update(table)
                .where(table.c.run_id == run_id, table.c.item_id == item_id)
                .values(labels=text, who=who, created=now)
            )
            counts["updated"] += 1
        else:
            counts["unchanged"] += 1
    return counts


def read_labels(conn: Connection, run_id: int) -> dict[str, dict[str, Any]]:
    """``item_id -> {"labels", "who", "created"}`` of one run, in item order."""
    table = claim_labels
    query = select(table).where(table.c.run_id == run_id).order_by(table.c.item_id)
    return {
        row.item_id: {"labels": json.loads(row.labels), "who": row.who, "created": row.created}
        for row in conn.execute(query)
    }
