"""Turning values into rows and rows back into values (no SQL here).

JSON goes through orjson when it is installed (several times faster for
rankings) and the standard library otherwise; both write compact JSON that
``json.loads`` reads back (a NaN score is ``null`` with orjson, ``NaN`` without).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Row

from ragmeter._redact import redact, unchanged_by_redact
from ragmeter.documents import Hit
from ragmeter.run import QuestionResult, RunInfo

__all__ = [
    "RANKING_OBSERVERS",
    "dumps",
    "hits_from_json",
    "nan_to_null",
    "now",
    "null_to_nan",
    "result_row",
    "run_info",
]


def _load_orjson() -> Any:
    try:
        import orjson
    except ImportError:  # pragma: no cover - depends on the environment
        return None
    return orjson


# Optional: several times faster than json.dumps for rankings.
_orjson: Any = _load_orjson()


def dumps(value: Any) -> str:
    """Compact JSON; values JSON does not know (paths, dates) become strings.

    >>> dumps({"k": [1, 2.5, None]})
    '{"k":[1,2.5,null]}'
    """
    if _orjson is not None:
        options = _orjson.OPT_NON_STR_KEYS | _orjson.OPT_SERIALIZE_NUMPY
        return str(_orjson.dumps(value, default=str, option=options), "utf-8")
    return json.dumps(value, separators=(",", ":"), default=str)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def nan_to_null(value: float) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def null_to_nan(value: float | None) -> float:
    return math.nan if value is None else value


def _ranking(hits: Iterable[Hit]) -> str:
    out = []
    for hit in hits:
        entry: dict[str, Any] = {"id": hit.id, "doc": hit.doc}
        if hit.score is not None:
            entry["score"] = float(hit.score)  # numpy scalars become plain floats
        if hit.start is not None:
            entry["start"] = int(hit.start)
        if hit.end is not None:
            entry["end"] = int(hit.end)
        out.append(entry)
    return dumps(out)


#: Called with the item id of every stored ranking decoded into hits: an injection point
#: for tests and benchmarks that count what a read decodes (issue 29.1).
RANKING_OBSERVERS: list[Callable[[str], None]] = []


def hits_from_json(ranking: str, item_id: str = "", top: int | None = None) -> tuple[Hit, ...]:
    """A stored ranking's hits (its first ``top`` only, when given)."""
    for observe in RANKING_OBSERVERS:
        observe(item_id)
    return tuple(
        Hit(id=h["id"], doc=h["doc"], score=h.get("score"), start=h.get("start"), end=h.get("end"))
        for h in json.loads(ranking)[:top]
    )


def result_row(
    run_id: int, result: QuestionResult, summary: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "item_id": result.item_id,
        "ranking": _ranking(result.hits),
        "latency_ms": None if result.latency_ms is None else float(result.latency_ms),
        # Chunk texts, contexts and error messages may quote a URL's password (issue 19.2).
        "error": None if result.error is None else redact(result.error),
        "answer": result.answer,
        "extra": dumps(_redacted(result.extra)) if result.extra else None,
        "summary": dumps(_redacted(summary)) if summary is not None else None,
    }


def _redacted(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    """``redact(dict(mapping))``, without the copy when it would change nothing."""
    if type(mapping) is dict and unchanged_by_redact(mapping):
        return mapping
    return redact(dict(mapping))


def run_info(row: Row[Any], means: Mapping[str, float]) -> RunInfo:
    return RunInfo(
        id=row.id,
        name=row.name,
        created=row.created,
        gold_hash=row.gold_hash,
        retriever=row.retriever,
        k=row.k,
        level=row.level,
        status=row.status,
        note=row.note,
        commit=row.git_commit,
        config=json.loads(row.config),
        metrics=dict(means),
        n_questions=row.n_questions,
        n_errors=row.n_errors,
    )
