"""SQL for a run's explanation (``Store.save_explanation`` and ``Store.explanation``).

One row per run: the explanation as JSON text (shaped by
``ragmeter.evaluation.explain``); explaining a run again replaces it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, delete, insert, select

from ragmeter.store import _codec
from ragmeter.store.schema import explanations

__all__ = ["explanation_created", "read_explanation", "write_explanation"]


def write_explanation(conn: Connection, run_id: int, content: Mapping[str, Any]) -> None:
    """Replace run ``run_id``'s explanation in the caller's transaction."""
    conn.execute(delete(explanations).where(explanations.c.run_id == run_id))
    text = json.dumps(dict(content), ensure_ascii=False, sort_keys=True)
    conn.execute(insert(explanations).values(run_id=run_id, created=_codec.now(), content=text))


def read_explanation(conn: Connection, run_id: int) -> dict[str, Any] | None:
    """Run ``run_id``'s stored explanation, or None."""
    query = select(explanations.c.content).where(explanations.c.run_id == run_id)
    row = conn.execute(query).first()
    return dict(json.loads(row.content)) if row is not None else None


def explanation_created(conn: Connection, run_id: int) -> str | None:
    """When run ``run_id``'s explanation was stored (None: never), without reading it."""
    query = select(explanations.c.created).where(explanations.c.run_id == run_id)
    return conn.execute(query).scalar_one_or_none()
