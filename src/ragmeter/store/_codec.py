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
    "RESULT_KEYS",
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


_OPTIONS: int = 0 if _orjson is None else _orjson.OPT_NON_STR_KEYS | _orjson.OPT_SERIALIZE_NUMPY


def dumps(value: Any) -> str:
    """Compact JSON; values JSON does not know (paths, dates) become strings.

    >>> dumps({"k": [1, 2.5, None]})
    '{"k":[1,2.5,null]}'
    """
    if _orjson is not None:
        return str(_orjson.dumps(value, default=str, option=_OPTIONS), "utf-8")
    return json.dumps(value, separators=(",", ":"), default=str)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def nan_to_null(value: float) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def null_to_nan(value: float | None) -> float:
    return math.nan if value is None else value


def _ranking(hits: Iterable[Hit]) -> str:
    """A ranking as the store keeps it: ``[{"id", "doc", "score"?, "start"?, "end"?}, ...]``.

    A ranking of plain hits (float scores, no span) — what nearly every retriever gives —
    is built in one comprehension and written by orjson without its options, which
    change nothing for str, number and None ids; an id that needs them or ``default``
    (numpy, a path) makes orjson raise ``TypeError`` and takes :func:`_ranking_each`, so
    the text is the same either way (issue 29.2).
    """
    if _orjson is not None:
        if type(hits) is not tuple and type(hits) is not list:
            hits = tuple(hits)
        out = [
            {"id": hit.id, "doc": hit.doc, "score": hit.score}
            for hit in hits
            if hit.start is None and hit.end is None and type(hit.score) is float
        ]
        if len(out) == len(hits):
            try:
                return _orjson.dumps(out).decode()  # type: ignore[no-any-return]
            except TypeError:
                pass
    return _ranking_each(hits)


def _ranking_each(hits: Iterable[Hit]) -> str:
    """:func:`_ranking` a hit at a time: a hit of plain values (string ids, a float score
    or none, no span) takes a short path without the per-field checks."""
    out: list[dict[str, Any]] = []
    append = out.append
    plain = True
    for hit in hits:
        score = hit.score
        if hit.start is None and hit.end is None:
            hid, doc = hit.id, hit.doc
            if type(hid) is str and type(doc) is str:
                if type(score) is float:
                    append({"id": hid, "doc": doc, "score": score})
                    continue
                if score is None:
                    append({"id": hid, "doc": doc})
                    continue
        plain = False
        entry: dict[str, Any] = {"id": hit.id, "doc": hit.doc}
        if score is not None:
            entry["score"] = float(score)  # numpy scalars become plain floats
        if hit.start is not None:
            entry["start"] = int(hit.start)
        if hit.end is not None:
            entry["end"] = int(hit.end)
        append(entry)
    if plain and _orjson is not None:
        return _orjson.dumps(out).decode()  # type: ignore[no-any-return]
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


#: The columns of ``results`` that :func:`result_row` fills, in its tuple's order.
RESULT_KEYS = (
    "run_id",
    "item_id",
    "ranking",
    "latency_ms",
    "error",
    "answer",
    "extra",
    "summary",
)


def result_row(
    run_id: int, result: QuestionResult, summary: Mapping[str, Any] | None = None
) -> tuple[Any, ...]:
    """A result's row of ``results``, its values in :data:`RESULT_KEYS` order (a tuple, not
    a dict: the writer hands these to the driver as they are, issue 29.2)."""
    latency = result.latency_ms
    error = result.error
    return (
        run_id,
        result.item_id,
        _ranking(result.hits),
        latency if latency is None or type(latency) is float else float(latency),
        # Chunk texts, contexts and error messages may quote a URL's password (issue 19.2).
        None if error is None else redact(error),
        result.answer,
        _mapping_json(result.extra) if result.extra else None,
        _mapping_json(summary) if summary is not None else None,
    )


def _mapping_json(mapping: Mapping[str, Any]) -> str:
    """``dumps(redact(dict(mapping)))``, without the copy when it would change nothing.

    Such a mapping holds only numbers, booleans and None (or lists of them), for which
    orjson's options and ``default`` change nothing; a key orjson refuses without its
    options (not a string) or an integer it cannot write takes :func:`dumps` as before,
    so the text and the errors are :func:`dumps`'s (issue 29.2).
    """
    if type(mapping) is dict and unchanged_by_redact(mapping):
        if _orjson is not None:
            try:
                return _orjson.dumps(mapping).decode()  # type: ignore[no-any-return]
            except TypeError:
                pass
        return dumps(mapping)
    return dumps(redact(dict(mapping)))


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
