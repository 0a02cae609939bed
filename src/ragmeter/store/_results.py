"""The store's per-question results (mixed into ``Store``; metrics: ``_metric_columns``).

Results stream in batches while a run goes. Bulk inserts bypass SQLAlchemy's per-row
processing (and use COPY on PostgreSQL), because this table holds most of a store's rows.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from operator import itemgetter
from typing import Any, TypeVar

from sqlalchemy import Connection, Dialect, Row, Table, delete, func, insert, select

from ragmeter.run import QuestionResult
from ragmeter.store import _codec
from ragmeter.store._engine import tracer_of
from ragmeter.store._runs import RunStoreMixin
from ragmeter.store.schema import results

__all__ = ["ResultStoreMixin"]

T = TypeVar("T")

# Rows per statement for long IN lists and per page when reading results back.
_IN_CHUNK = 500
_PAGE = 2_000
#: Rows per page of summaries: small rows, and a query per page costs (issue 29.1).
_SUMMARY_PAGE = 10_000
# Batches at least this big go through COPY on PostgreSQL.
_COPY_MIN_ROWS = 200


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class ResultStoreMixin(RunStoreMixin):
    """Per-question results and metric values of runs."""

    def add_results(
        self,
        run_id: int,
        results_: Iterable[QuestionResult],
        summarize: Callable[[QuestionResult], Mapping[str, Any]]
        | Sequence[Mapping[str, Any]]
        | None = None,
        *,
        replace: bool = True,
    ) -> None:
        """Store a batch of question results in one transaction.

        Re-adding an item id replaces its earlier row (a resumed run re-runs the
        questions that were in flight). Hits keep id, doc, score and span, not text.
        ``replace=False`` skips that delete for a run that has no rows to replace (a
        fresh run, issue 29.2); a repeated item id then fails on the unique key.
        ``summarize`` gives each result's summary (JSON-able), stored beside it so a
        report reads it instead of decoding the ranking (:meth:`result_summaries`): a
        function of the result, or the summaries themselves in the results' order.
        """
        row = _codec.result_row
        if summarize is None:
            rows = [row(run_id, result) for result in results_]
        elif callable(summarize):
            rows = [row(run_id, result, summarize(result)) for result in results_]
        else:
            pairs = zip(results_, summarize, strict=True)
            rows = [row(run_id, result, summary) for result, summary in pairs]
        self.add_result_rows(run_id, rows, replace=replace)

    #: A result's row as :meth:`add_result_rows` takes it: ``result_row(run_id, result,
    #: summary)`` (a tuple of plain values, the ranking and ``extra`` as JSON, redacted).
    result_row = staticmethod(_codec.result_row)

    def add_result_rows(
        self, run_id: int, rows: Iterable[tuple[Any, ...]], *, replace: bool = True
    ) -> None:
        """:meth:`add_results` of rows made by :attr:`result_row` for ``run_id``.

        ``evaluate()`` makes each row as its question is delivered, so what waits for the
        writer is a tuple of strings and numbers, not a result with its hits for the
        garbage collector to walk (issue 29.2).
        """
        by_id: dict[str, tuple[Any, ...]] = {}
        for row in rows:
            if row[0] != run_id:
                raise ValueError(f"add_result_rows: a row of run {row[0]} given for run {run_id}")
            by_id[row[1]] = row  # last one wins
        if not by_id:
            return
        item_ids = list(by_id)
        values = list(by_id.values())

        def tx(conn: Connection) -> None:
            for chunk in _chunks(item_ids, _IN_CHUNK) if replace else ():
                conn.execute(
                    delete(results).where(results.c.run_id == run_id, results.c.item_id.in_(chunk))
                )
            _insert_tuples(conn, results, _codec.RESULT_KEYS, values)

        self._write(tx)

    def completed_items(self, run_id: int, *, include_errors: bool = True) -> set[str]:
        """Item ids with a stored result; ``include_errors=False`` leaves error rows out,
        so a resume retries them."""
        query = select(results.c.item_id).where(results.c.run_id == run_id)
        if not include_errors:
            query = query.where(results.c.error.is_(None))
        return self._read(lambda conn: set(conn.execute(query).scalars()))

    def results(self, run_ref: int | str) -> Iterator[QuestionResult]:
        """A run's results in insertion order, read page by page (hits have no text).

        ``run_ref`` is what :meth:`get_run` accepts: an id, ``"latest"`` or a name.
        """
        run_id = self.get_run(run_ref).id  # and a clear error for an unknown run
        for page in self._pages(run_id, tuple(results.c), _fetch_all):
            for row in page:
                yield _result(row)

    def _pages(
        self,
        run_id: int,
        columns: tuple[Any, ...],
        fetch: Callable[[Any], Callable[[Connection], Sequence[Any]]],
        page_size: int = _PAGE,
    ) -> Iterator[Sequence[Any]]:
        """A run's rows of ``results`` (``columns``, the id first), :data:`_PAGE` at a time in
        id order. Walks the primary key between the run's first and last row: compared as
        ``run_id + 0``, SQLite does not read every row of the run through the (run_id,
        item_id) index and sort them again for each page (issue 29.1)."""
        bounds = select(func.min(results.c.id), func.max(results.c.id))
        ((low, high),) = self._read(_fetch_raw(bounds.where(results.c.run_id == run_id)))
        if low is None:
            return
        last = low - 1
        while True:
            query = (
                select(*columns)
                .where(results.c.id > last, results.c.id <= high, (results.c.run_id + 0) == run_id)
                .order_by(results.c.id)
                .limit(page_size)
            )
            page = self._read(fetch(query))
            yield page
            if len(page) < page_size:
                return
            last = page[-1][0]

    def result_summaries(
        self, run_id: int
    ) -> Iterator[tuple[QuestionResult, dict[str, Any] | None]]:
        """A run's results without their rankings or ``extra`` (``hits`` empty, ``extra``
        ``{}``), each with its stored summary (None: stored without one), page by page.

        A report reads these and decodes rankings only for the rows it prints
        (:meth:`results_for`), issue 29.1.
        """
        for item_id, latency_ms, error, answer, summary in self.summary_rows(run_id):
            result = QuestionResult(
                item_id=item_id, latency_ms=latency_ms, error=error, answer=answer
            )
            yield result, summary

    def summary_rows(
        self, run_id: int
    ) -> Iterator[tuple[str, float | None, str | None, str | None, dict[str, Any] | None]]:
        """:meth:`result_summaries` as plain ``(item id, latency ms, error, answer, summary)``
        tuples, a page at a time (``show`` of 100,000 questions builds no result object)."""
        for page in self.summary_pages(run_id):
            yield from zip(*page, strict=True)

    def summary_pages(
        self, run_id: int
    ) -> Iterator[
        tuple[
            list[str],
            list[float | None],
            list[str | None],
            list[str | None],
            list[dict[str, Any] | None],
        ]
    ]:
        """:meth:`summary_rows` a page at a time, as columns: ``(item ids, latencies, errors,
        answers, summaries)`` (``show`` of 100,000 questions keeps columns, issue 29.1)."""
        columns = (
            results.c.id,
            results.c.item_id,
            results.c.latency_ms,
            results.c.error,
            results.c.answer,
            results.c.summary,
        )
        for page in self._pages(run_id, columns, _fetch_raw, _SUMMARY_PAGE):
            yield (
                [row[1] for row in page],
                [row[2] for row in page],
                [row[3] for row in page],
                [row[4] for row in page],
                _json_list([row[5] for row in page]),
            )

    def summaries_for(
        self, run_id: int, item_ids: Collection[str]
    ) -> dict[str, tuple[str | None, dict[str, Any] | None]]:
        """Some questions' ``(error, summary)`` (summary None: stored without one), keyed by
        item id; reads neither rankings nor ``extra`` (a diff's flipped questions, 29.1)."""
        out: dict[str, tuple[str | None, dict[str, Any] | None]] = {}
        for chunk in _chunks(sorted(set(item_ids)), _IN_CHUNK):
            query = select(results.c.item_id, results.c.error, results.c.summary).where(
                results.c.run_id == run_id, results.c.item_id.in_(chunk)
            )
            for item_id, error, summary in self._read(_fetch_raw(query)):
                out[item_id] = (error, json.loads(summary) if summary else None)
        return out

    def results_for(
        self, run_id: int, item_ids: Collection[str], *, top: int | None = None
    ) -> dict[str, QuestionResult]:
        """Some questions' results, rankings decoded, keyed by item id (ids without a
        result are left out); reads only those rows. ``top``: only the first ``top`` hits of
        each ranking become hits, and only the hits and ``extra`` are read (what a report's
        misses list shows: three hits with their grades and texts; issue 29.2)."""
        out: dict[str, QuestionResult] = {}
        for chunk in _chunks(sorted(set(item_ids)), _IN_CHUNK):
            where = (results.c.run_id == run_id, results.c.item_id.in_(chunk))
            if top is not None:
                query = select(results.c.item_id, results.c.ranking, results.c.extra).where(*where)
                for item_id, ranking, extra in self._read(_fetch_raw(query)):
                    out[item_id] = QuestionResult(
                        item_id,
                        hits=_codec.hits_from_json(ranking, item_id, top),
                        extra=json.loads(extra) if extra else {},
                    )
                continue
            for row in self._read(_fetch_all(select(results).where(*where))):
                out[row.item_id] = _result(row)
        return out

    def result_extras(self, run_id: int, item_ids: Collection[str]) -> dict[str, dict[str, Any]]:
        """The ``extra`` of some questions' results (chunk texts, grades, generation context),
        keyed by item id; an id without a result is left out, a result without extra is ``{}``.

        Reads only those rows and that column, so one expanded question or one page of a big
        run decodes neither the whole run nor its rankings (issue 15.5).
        """
        wanted = sorted(set(item_ids))
        out: dict[str, dict[str, Any]] = {}
        for chunk in _chunks(wanted, _IN_CHUNK):
            query = select(results.c.item_id, results.c.extra).where(
                results.c.run_id == run_id, results.c.item_id.in_(chunk)
            )
            for row in self._read(_fetch_all(query)):
                out[row.item_id] = json.loads(row.extra) if row.extra else {}
        return out

    def has_answers(self, run_id: int) -> bool:
        """Whether any question of a run has a stored answer (a run with generation)."""
        query = (
            select(results.c.id)
            .where(results.c.run_id == run_id, results.c.answer.is_not(None))
            .limit(1)
        )
        return bool(self._read(_fetch_raw(query)))


def _result(row: Row[Any]) -> QuestionResult:
    return QuestionResult(
        item_id=row.item_id,
        hits=_codec.hits_from_json(row.ranking, row.item_id),
        latency_ms=row.latency_ms,
        error=row.error,
        answer=row.answer,
        extra=json.loads(row.extra) if row.extra else {},
    )


def _json_list(texts: Sequence[str | None]) -> list[Any]:
    """Each stored JSON text decoded (None or empty: None), in one ``json.loads`` call: a
    call per text was a quarter of reading a 100,000-question run's summaries (issue 29.1).
    Each text is one JSON value the store wrote, so the list holds exactly those values."""
    return json.loads("[" + ",".join(text or "null" for text in texts) + "]")  # type: ignore[no-any-return]


def _fetch_all(query: Any) -> Callable[[Connection], Sequence[Row[Any]]]:
    return lambda conn: conn.execute(query).all()


def _fetch_raw(query: Any) -> Callable[[Connection], Sequence[tuple[Any, ...]]]:
    """``query``'s rows as the driver's plain tuples: SQLAlchemy's ``Row`` objects cost more
    than SQLite's reads on a run's per-question tables (issue 29.1). Only for columns whose
    types need no result processing (integers, strings, floats)."""

    def fetch(conn: Connection) -> Sequence[tuple[Any, ...]]:
        compiled = query.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
        params: Any = compiled.params
        if compiled.positional:
            params = tuple(compiled.params[key] for key in compiled.positiontup or [])
        tracer = tracer_of(conn.engine)
        if tracer is not None:
            tracer(str(compiled), params)
        cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        try:
            cursor.execute(str(compiled), params)
            return list(cursor.fetchall())
        finally:
            cursor.close()

    return fetch


def _insert_many(conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert many rows (dicts with the same keys) with the driver's own ``executemany``."""
    if not rows:
        return
    keys = tuple(rows[0])
    pick = itemgetter(*keys)
    _insert_tuples(
        conn,
        table,
        keys,
        [pick(row) for row in rows] if len(keys) > 1 else [(pick(row),) for row in rows],
    )


def _insert_tuples(
    conn: Connection, table: Table, keys: Sequence[str], rows: Sequence[tuple[Any, ...]]
) -> None:
    """Insert many rows given as tuples in ``keys`` order, with the driver's ``executemany``.

    SQLAlchemy's per-row parameter processing cost more than SQLite's inserts
    (60k vs 200k+ rows/s). The statement is still compiled by SQLAlchemy for the
    connection's dialect, so this stays portable; it is only used for tables whose
    column types (integers, strings, floats) need no bind processing. Batches of
    ``_COPY_MIN_ROWS`` or more go through COPY on PostgreSQL.
    """
    if not rows:
        return
    if conn.dialect.name == "postgresql" and len(rows) >= _COPY_MIN_ROWS:
        _copy_rows(conn, table, list(keys), rows)
        return
    statement, order = _insert_statement(conn.dialect, table, tuple(keys))
    params: Sequence[Any]
    if order is None:
        params = rows
    elif order == ():
        params = [dict(zip(keys, row, strict=True)) for row in rows]
    else:
        pick = itemgetter(*order)
        params = [pick(row) for row in rows] if len(order) > 1 else [(pick(r),) for r in rows]
    conn.exec_driver_sql(statement, params)


@functools.lru_cache(maxsize=64)
def _insert_statement(
    dialect: Dialect, table: Table, keys: tuple[str, ...]
) -> tuple[str, tuple[int, ...] | None]:
    """The INSERT of ``keys`` into ``table`` as ``dialect`` writes it, compiled once for each
    (a batch of a run's results compiled it anew every time, issue 29.2), with how a row
    tuple in ``keys`` order becomes its parameters: None, as it is; ``()``, a dict by key
    (named parameters); else the positions to pick, in the statement's order."""
    compiled = insert(table).compile(dialect=dialect, column_keys=list(keys))
    if not compiled.positional:
        return str(compiled), ()
    order = tuple(keys.index(key) for key in compiled.positiontup or [])
    return str(compiled), None if order == tuple(range(len(keys))) else order


def _copy_rows(
    conn: Connection, table: Table, keys: list[str], rows: Sequence[tuple[Any, ...]]
) -> None:
    """PostgreSQL's ``COPY ... FROM STDIN`` in the current transaction.

    A run's per-question metric values are hundreds of thousands of rows; COPY
    writes them several times faster than ``executemany``.
    """
    quote = conn.dialect.identifier_preparer
    columns = ", ".join(quote.quote(key) for key in keys)
    statement = f"COPY {quote.format_table(table)} ({columns}) FROM STDIN"
    tracer = tracer_of(conn.engine)
    if tracer is not None:
        tracer(statement, f"<{len(rows)} rows>")
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        with cursor.copy(statement) as copy:
            for row in rows:
                copy.write_row(row)
    finally:
        cursor.close()
