"""A run's metric means and per-question metric values (mixed into ``Store``), issue 29.2.

Each metric of a run is one row of ``metric_columns``: its item ids as a JSON list in code
point order (``sorted()``'s, whatever the database's collation) and its values as one
float64 blob in little-endian byte order, NaN where a value is undefined. A 100,000-question
run with ten metrics is ten rows, not a million. Values are decoded with the standard
library (``array``, ``struct``): ``show`` imports no numpy.

>>> per_query = {"mrr": {"q2": 0.5, "q1": math.nan}, "ndcg@10": {"q2": 1.0, "q1": 0.0}}
>>> rows = list(column_rows(1, per_query.items()))
>>> [(row["metric"], row["item_ids"], row["same_ids_as"]) for row in rows]
[('mrr', '["q1", "q2"]', None), ('ndcg@10', None, 'mrr')]
>>> decode_values(rows[0]["values_f64le"], 2), decode_values(rows[1]["values_f64le"], 2)
([nan, 0.5], [0.0, 1.0])
"""

from __future__ import annotations

import json
import math
import struct
import sys
from array import array
from bisect import bisect_left
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from operator import itemgetter
from typing import Any, cast

from sqlalchemy import Connection, Select, delete, func, insert, select

from ragmeter.errors import StoreError
from ragmeter.run import QuestionValues
from ragmeter.store import _codec
from ragmeter.store._results import _fetch_raw, _insert_many
from ragmeter.store._runs import RunStoreMixin
from ragmeter.store.schema import metric_columns, run_metrics, runs

__all__ = ["MetricStoreMixin", "column_rows", "decode_values"]

_BIG_ENDIAN = sys.byteorder == "big"
_ONE = struct.Struct("<d")


def _order(ids: list[str]) -> list[int] | None:
    """The positions of ``ids`` in code point order; None when they are in it already."""
    if ids == sorted(ids):
        return None
    return sorted(range(len(ids)), key=ids.__getitem__)


def _ids_json(ids: list[str], order: list[int] | None) -> str:
    return json.dumps(ids if order is None else [ids[i] for i in order])


def _blob(values: Any, order: list[int] | None) -> bytes:
    """``values`` (floats, or a numpy float64 column: taken as it is) as the stored blob."""
    if type(values) is not list:  # a column of QuestionValues: numpy, not imported here
        taken = values if order is None else values.take(order)
        return bytes(taken.astype("<f8", copy=False).tobytes())
    column = array("d", values if order is None else [values[i] for i in order])
    if _BIG_ENDIAN:  # pragma: no cover - no big-endian machine in CI
        column.byteswap()
    return column.tobytes()


def decode_values(blob: bytes, n: int) -> list[float]:
    """A stored blob of ``n`` values as floats; an undefined value is ``math.nan`` itself,
    as a NULL of the old layout was read."""
    out = _floats(blob, n)
    total = sum(out)
    if total != total:  # some NaN (or +inf and -inf): name each undefined value the same way
        out = [math.nan if v != v else v for v in out]
    return out


def _floats(blob: bytes, n: int) -> list[float]:
    _check(len(blob), n)
    column = array("d")
    column.frombytes(blob)
    if _BIG_ENDIAN:  # pragma: no cover - no big-endian machine in CI
        column.byteswap()
    return column.tolist()


def _check(size: int, n: int) -> None:
    if size != 8 * n:
        raise StoreError(
            f"a stored metric column holds {size} bytes for {n} item ids (expected "
            f"{8 * n}): the store is damaged"
        )


def column_rows(
    run_id: int, per_query: Iterable[tuple[str, Mapping[str, float] | tuple[list[str], Any]]]
) -> Iterator[dict[str, Any]]:
    """The ``metric_columns`` rows of a run's ``(metric, item id -> value)`` pairs (or
    ``(metric, (item ids, float64 column))``, a column of
    :class:`~ragmeter.run.QuestionValues`).

    A metric with the same item ids in the same order as the metric before it (the usual
    case) shares its sort and is stored with ``same_ids_as`` naming the first of them."""
    last: tuple[list[str], list[int] | None, str] | None = None
    for metric, values in per_query:
        if type(values) is tuple:
            ids, column = values
        else:
            ids, column = list(values), None  # type: ignore[arg-type]
        if not ids:
            continue  # no question has it: not stored, as no row was before
        row = {"run_id": run_id, "metric": metric, "item_ids": None, "same_ids_as": None}
        if last is None or (ids is not last[0] and ids != last[0]):
            order = _order(ids)
            last = (ids, order, metric)
            row["item_ids"] = _ids_json(ids, order)
        else:
            row["same_ids_as"] = last[2]
        listed = list(values.values()) if column is None else column  # type: ignore[union-attr]
        row["values_f64le"] = _blob(listed, last[1])
        yield row


def _pairs(
    per_query: Mapping[str, Mapping[str, float]],
) -> Iterator[tuple[str, Mapping[str, float] | tuple[list[str], Any]]]:
    """``per_query``'s metrics with their values: a column of a
    :class:`~ragmeter.run.QuestionValues` as it is, without its dict (issue 29.2)."""
    if not isinstance(per_query, QuestionValues):
        yield from per_query.items()
        return
    for metric in per_query:
        yield metric, per_query.column(metric) or per_query[metric]


def _with_ids(
    conn: Connection, run_id: int, rows: Sequence[tuple[Any, ...]]
) -> list[tuple[str, list[str], Any]]:
    """``(metric, item ids, payload)`` of rows ``(metric, item_ids, same_ids_as, payload)``
    sorted by metric: a shared id list is read (from a metric not among ``rows`` if need
    be) and decoded once."""
    texts = {row[0]: row[1] for row in rows if row[1] is not None}
    missing = {row[2] for row in rows if row[1] is None} - set(texts)
    if missing:
        table = metric_columns
        query = select(table.c.metric, table.c.item_ids).where(
            table.c.run_id == run_id, table.c.metric.in_(sorted(missing))
        )
        texts.update(_fetch_raw(query)(conn))
    decoded: dict[str, list[str]] = {}
    out = []
    for metric, _, same_as, payload in sorted(rows, key=itemgetter(0)):
        owner = metric if same_as is None else same_as
        ids = decoded.get(owner)
        if ids is None:
            text = texts.get(owner)
            if text is None:
                raise StoreError(
                    f"run {run_id}'s metric {metric} has the item ids of metric {owner}, "
                    "which has none stored: the store is damaged"
                )
            ids = decoded[owner] = json.loads(text)
        out.append((metric, ids, payload))
    return out


def _where(query: Select[Any], run_id: int, metrics: Sequence[str] | None) -> Select[Any]:
    query = query.where(metric_columns.c.run_id == run_id)
    if metrics is not None:
        query = query.where(metric_columns.c.metric.in_(list(metrics)))
    return query


class MetricStoreMixin(RunStoreMixin):
    """A run's metric means and per-question metric values."""

    def set_metrics(
        self,
        run_id: int,
        means: Mapping[str, float],
        per_query: Mapping[str, Mapping[str, float]],
    ) -> None:
        """Replace a run's metric means and per-question values.

        ``per_query`` maps metric -> item id -> value, as ``question_metrics`` returns
        it. NaN (undefined) is stored as such and read back as NaN.
        """
        mean_rows = [
            {"run_id": run_id, "metric": metric, "value": _codec.nan_to_null(value)}
            for metric, value in means.items()
        ]
        rows = list(column_rows(run_id, _pairs(per_query)))

        def tx(conn: Connection) -> None:
            if conn.execute(select(runs.c.id).where(runs.c.id == run_id)).first() is None:
                raise self._not_found(conn, run_id)
            for table in (run_metrics, metric_columns):
                conn.execute(delete(table).where(table.c.run_id == run_id))
            _insert_many(conn, run_metrics, mean_rows)
            if rows:
                conn.execute(insert(metric_columns), rows)

        self._write(tx)

    def _columns(
        self, run_id: int, metrics: Sequence[str] | None
    ) -> list[tuple[str, list[str], bytes]]:
        """``(metric, item ids, blob)`` of a run's stored metrics (``metrics``: only those),
        sorted by metric; a shared id list is decoded once."""
        table = metric_columns
        columns = (table.c.metric, table.c.item_ids, table.c.same_ids_as, table.c.values_f64le)
        query = _where(select(*columns), run_id, metrics)
        rows = self._read(lambda conn: _with_ids(conn, run_id, _fetch_raw(query)(conn)))
        return [(metric, ids, bytes(blob)) for metric, ids, blob in rows]

    def question_metrics(
        self,
        run_id: int,
        metrics: Sequence[str] | None = None,
        *,
        item_ids: Collection[str] | None = None,
    ) -> dict[str, dict[str, float]]:
        """Per-question metric values: metric -> item id -> value (NaN: undefined);
        ``item_ids``: only those questions' (a page of a run, issue 29.1)."""
        if item_ids is not None:
            return self._some_questions(run_id, metrics, sorted(set(item_ids)))
        out: dict[str, dict[str, float]] = {m: {} for m in metrics or ()}
        for metric, ids, blob in self._columns(run_id, metrics):
            out[metric] = dict(zip(ids, decode_values(blob, len(ids)), strict=True))
        return out

    def _some_questions(
        self, run_id: int, metrics: Sequence[str] | None, wanted: list[str]
    ) -> dict[str, dict[str, float]]:
        """``question_metrics`` of the ``wanted`` (sorted) item ids: each metric's ids are
        searched by bisection and only the span of the blob from the first value wanted to
        the last is read (a page of a 100k-question run on PostgreSQL moved every blob)."""
        table = metric_columns
        blob = table.c.values_f64le
        columns = (table.c.metric, table.c.item_ids, table.c.same_ids_as, func.length(blob))
        query = _where(select(*columns), run_id, metrics)

        def read(conn: Connection) -> dict[str, dict[str, float]]:
            out: dict[str, dict[str, float]] = {m: {} for m in metrics or ()}
            for metric, ids, size in _with_ids(conn, run_id, _fetch_raw(query)(conn)):
                _check(size, len(ids))
                found = []
                for item_id in wanted:
                    at = bisect_left(ids, item_id)
                    if at < len(ids) and ids[at] == item_id:
                        found.append((item_id, at))
                out[metric] = {}
                if not found:
                    continue
                low, high = found[0][1], found[-1][1]
                span = select(func.substr(blob, 8 * low + 1, 8 * (high - low + 1))).where(
                    table.c.run_id == run_id, table.c.metric == metric
                )
                part = bytes(_fetch_raw(span)(conn)[0][0])
                _check(len(part), high - low + 1)
                for item_id, at in found:
                    (value,) = _ONE.unpack_from(part, 8 * (at - low))
                    out[metric][item_id] = math.nan if value != value else value
            return out

        return self._read(read)

    def question_metric_names(self, run_id: int) -> list[str]:
        """The metrics a run stored per question, sorted."""
        query = select(metric_columns.c.metric).where(metric_columns.c.run_id == run_id)
        return sorted(row[0] for row in self._read(_fetch_raw(query)))

    def metric_column(self, run_id: int, metric: str) -> tuple[list[str], list[float | None]]:
        """One metric's per-question values of a run as two aligned lists: the item ids in
        code point order (``sorted()``'s) and their values (None: undefined).

        A diff reads two runs one metric at a time this way, without a dict per question
        (issue 29.1)."""
        columns = self._columns(run_id, [metric])
        if not columns:
            return [], []
        _, ids, blob = columns[0]
        raw = _floats(blob, len(ids))
        total = sum(raw)
        if total != total:  # some NaN (or +inf and -inf)
            return ids, [None if v != v else v for v in raw]
        return ids, cast("list[float | None]", raw)  # no NaN: the same floats
