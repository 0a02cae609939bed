"""The run store: gold sets, runs, per-question results and metric values.

One small protocol over SQLAlchemy Core, so the same code serves a SQLite file
(the default) and PostgreSQL. Writes go through one writer per ``Store``: a lock
serialises them inside a process, and each write is one transaction that is
retried when another process holds the database ("database is locked",
serialisation failures), so several ``ragmeter eval`` processes can share a store.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from types import TracebackType
from typing import Any, Protocol, TypeVar, cast, get_args

from sqlalchemy import Connection, Row, Table, delete, func, insert, select, update
from sqlalchemy.exc import DBAPIError, IntegrityError

from ragmeter.errors import RunNotFoundError, StoreError
from ragmeter.run import QuestionResult, RunInfo, RunStatus
from ragmeter.store import _codec, migrations
from ragmeter.store._engine import (
    WRITE_OPTION,
    Tracer,
    is_memory,
    make_engine,
    to_url,
    tracer_of,
)
from ragmeter.store._judge import JudgeStoreMixin
from ragmeter.store.schema import gold_sets, question_metrics, results, run_metrics, runs

__all__ = ["DEFAULT_STORE_URL", "GoldLike", "Store"]

T = TypeVar("T")

DEFAULT_STORE_URL = "sqlite:///.ragmeter/ragmeter.db"

# Retries of one write transaction when the database is busy, with backoff.
WRITE_ATTEMPTS = 20
RETRY_FIRST_DELAY_S = 0.02
RETRY_MAX_DELAY_S = 1.0
# Retries of one transaction after the connection was lost (a PostgreSQL backend
# terminated, a server restart): a new connection is taken from the pool each time.
RECONNECT_ATTEMPTS = 3
RECONNECT_DELAY_S = 0.2
# Rows per statement for long IN lists and per page when reading results back.
_IN_CHUNK = 500
_PAGE = 2_000
_INSERT_CHUNK = 10_000
# Batches at least this big go through COPY on PostgreSQL.
_COPY_MIN_ROWS = 200
_FINISHED = ("complete", "interrupted", "failed")
_STATUSES = get_args(RunStatus)
_LEVELS = ("doc", "chunk")
_UPDATABLE = ("name", "note", "status", "config", "n_questions", "n_errors")


class GoldLike(Protocol):
    """What ``save_gold`` needs from a gold set."""

    @property
    def hash(self) -> str: ...
    @property
    def name(self) -> str: ...
    def to_records(self) -> list[dict[str, Any]]: ...


def _retryable(exc: DBAPIError) -> bool:
    message = str(exc.orig).lower()
    sqlstate = getattr(exc.orig, "sqlstate", None)
    # 40001 serialization failure, 40P01 deadlock (PostgreSQL).
    return "locked" in message or "busy" in message or sqlstate in ("40001", "40P01")


def _disconnected(exc: DBAPIError) -> bool:
    """True when the database connection itself was lost (SQLAlchemy invalidated it)."""
    return bool(exc.connection_invalidated)


def _reason(exc: DBAPIError) -> str:
    """The driver's message on one line (PostgreSQL's span several)."""
    return " ".join(str(exc.orig).split())


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class Store(JudgeStoreMixin):
    """Where runs are kept: a SQLite file by default, or any SQLAlchemy URL.

    >>> with Store.memory() as store:
    ...     store.list_runs()
    []
    """

    def __init__(
        self, url: str, *, tracer: Tracer | None = None, schema_version: int | None = None
    ):
        """Open (and migrate) the store at ``url``; prefer ``Store.open`` / ``Store.memory``."""
        parsed = to_url(url)
        self.url: str = parsed.render_as_string(hide_password=True)
        self._engine = make_engine(parsed, tracer)
        self._memory = is_memory(parsed)
        self._lock = threading.RLock()
        try:
            migrations.migrate(self._write, target=schema_version)
        except BaseException:
            self._engine.dispose()
            raise

    # -- opening and closing ---------------------------------------------------------

    @classmethod
    def open(
        cls,
        target: str | os.PathLike[str] = DEFAULT_STORE_URL,
        *,
        tracer: Tracer | None = None,
        schema_version: int | None = None,
    ) -> Store:
        """Open the store at a path or SQLAlchemy URL, creating and migrating it as needed.

        ``tracer(sql, params)`` is called with every SQL statement (``tracer=print``).
        ``schema_version`` stops migrating at that version: tests use it to build an
        old store, which then only supports what its tables hold.

        >>> store = Store.open("sqlite://")   # a path works too: Store.open("runs.db")
        >>> store.url
        'sqlite://'
        >>> store.close()
        """
        return cls(os.fspath(target), tracer=tracer, schema_version=schema_version)

    @classmethod
    def memory(cls, *, tracer: Tracer | None = None) -> Store:
        """A store in memory (one SQLite connection shared by all threads).

        >>> Store.memory().schema_version >= 2
        True
        """
        return cls("sqlite://", tracer=tracer)

    def close(self) -> None:
        """Close every connection (a memory store loses its contents)."""
        self._engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Store {self.url}>"

    @property
    def schema_version(self) -> int:
        """The number of the newest migration applied to this store."""
        return max(self._read(migrations.applied), default=0)

    def copy_to(self, other: Store) -> dict[str, int]:
        """Copy this store's whole history (every table, ids unchanged) into ``other``.

        ``other`` must be empty; the copy is one transaction there, so a failure
        leaves it empty. Returns ``{table: rows copied}``. This is how a team moves
        its SQLite history into a shared PostgreSQL store.

        >>> from types import SimpleNamespace
        >>> gold = SimpleNamespace(hash="h1", name="faq", to_records=lambda: [])
        >>> with Store.memory() as old, Store.memory() as new:
        ...     _ = old.save_gold(gold)
        ...     old.copy_to(new)["gold_sets"], new.load_gold_records("h1")
        (1, [])
        """
        from ragmeter.store._copy import copy_store

        if other is self or (not self._memory and other.url == self.url):
            raise StoreError(f"cannot copy the store {self.url} onto itself")
        with self._lock:
            return copy_store(self._engine, other._write, self.url, other.url)

    # -- the one writer ----------------------------------------------------------------

    def _write(self, fn: Callable[[Connection], T]) -> T:
        """Run ``fn`` in one write transaction, serialised and retried while busy.

        A lost connection is retried ``RECONNECT_ATTEMPTS`` times on a fresh one, but
        only when it was lost before the commit began: a commit whose outcome is
        unknown is never replayed (issue 19.1).
        """
        delay = RETRY_FIRST_DELAY_S
        busy = lost = 0
        while True:
            committing = False
            try:
                with self._lock, self._engine.connect() as conn:
                    conn = conn.execution_options(**{WRITE_OPTION: True})
                    with conn.begin():
                        result = fn(conn)
                        committing = True
                    return result
            except DBAPIError as exc:
                if _retryable(exc) and busy < WRITE_ATTEMPTS - 1:
                    busy += 1
                    time.sleep(delay)
                    delay = min(delay * 2, RETRY_MAX_DELAY_S)
                    continue
                if _disconnected(exc) and not committing and lost < RECONNECT_ATTEMPTS:
                    lost += 1
                    time.sleep(RECONNECT_DELAY_S * lost)
                    continue
                raise StoreError(f"store {self.url}: cannot write: {_reason(exc)}") from exc

    def _read(self, fn: Callable[[Connection], T]) -> T:
        guard: AbstractContextManager[Any] = self._lock if self._memory else nullcontext()
        lost = 0
        while True:
            try:
                with guard, self._engine.connect() as conn:
                    return fn(conn)
            except DBAPIError as exc:
                if _disconnected(exc) and lost < RECONNECT_ATTEMPTS:
                    lost += 1
                    time.sleep(RECONNECT_DELAY_S * lost)
                    continue
                raise StoreError(f"store {self.url}: cannot read: {_reason(exc)}") from exc

    # -- gold sets ---------------------------------------------------------------------

    def save_gold(self, gold: GoldLike) -> str:
        """Keep a gold set's content once per content hash; returns the hash.

        >>> class G:
        ...     hash, name = "abc", "faq"
        ...     def to_records(self): return [{"id": "q1", "question": "?"}]
        >>> with Store.memory() as store:
        ...     store.save_gold(G()), store.load_gold_records("abc")[0]["id"]
        ('abc', 'q1')
        """
        digest = gold.hash

        def tx(conn: Connection) -> None:
            if conn.execute(select(gold_sets.c.hash).where(gold_sets.c.hash == digest)).first():
                return
            records = gold.to_records()
            conn.execute(
                insert(gold_sets).values(
                    hash=digest,
                    name=gold.name,
                    created=_codec.now(),
                    n_items=len(records),
                    content=_codec.dumps(records),
                )
            )

        try:
            self._write(tx)
        except StoreError as exc:
            # Another process inserted the same gold set between our check and insert.
            if not (isinstance(exc.__cause__, IntegrityError) and self._has_gold(digest)):
                raise
        return digest

    def _has_gold(self, digest: str) -> bool:
        query = select(gold_sets.c.hash).where(gold_sets.c.hash == digest)
        return self._read(lambda conn: conn.execute(query).first()) is not None

    def load_gold_records(self, gold_hash: str) -> list[dict[str, Any]]:
        """The item records of a saved gold set (rebuild with ``GoldSet.from_records``)."""
        query = select(gold_sets.c.content).where(gold_sets.c.hash == gold_hash)
        content = self._read(lambda conn: conn.execute(query).scalar())
        if content is None:
            raise StoreError(f"gold set {gold_hash} is not in the store {self.url}")
        return cast(list[dict[str, Any]], json.loads(content))

    # -- runs --------------------------------------------------------------------------

    def create_run(
        self,
        *,
        name: str | None,
        note: str = "",
        gold_hash: str,
        retriever: str,
        config: Mapping[str, Any],
        k: int,
        level: str,
        commit: str | None,
    ) -> RunInfo:
        """Record a new run with status ``running``; ``name=None`` names it ``run-<id>``.

        >>> from types import SimpleNamespace
        >>> gold = SimpleNamespace(hash="h1", name="faq", to_records=lambda: [])
        >>> with Store.memory() as store:
        ...     run = store.create_run(name=None, gold_hash=store.save_gold(gold),
        ...                            retriever="bm25", config={}, k=10, level="doc", commit=None)
        ...     run.name, run.status
        ('run-1', 'running')
        """
        if level not in _LEVELS:
            raise ValueError(f"level must be one of {_LEVELS}, not {level!r}")

        def tx(conn: Connection) -> RunInfo:
            found = select(gold_sets.c.hash).where(gold_sets.c.hash == gold_hash)
            if conn.execute(found).first() is None:
                raise StoreError(
                    f"gold set {gold_hash} is not in the store {self.url}: save_gold() it first"
                )
            key = conn.execute(
                insert(runs).values(
                    name=name or "",
                    note=note,
                    created=_codec.now(),
                    git_commit=commit,
                    gold_hash=gold_hash,
                    retriever=retriever,
                    config=_codec.dumps(dict(config)),
                    k=k,
                    level=level,
                    status="running",
                    n_questions=0,
                    n_errors=0,
                )
            ).inserted_primary_key
            if key is None:  # pragma: no cover - every supported database returns it
                raise StoreError(f"store {self.url}: the new run got no id")
            run_id = key[0]
            if not name:
                conn.execute(update(runs).where(runs.c.id == run_id).values(name=f"run-{run_id}"))
            return self._run_info(conn, run_id)

        return self._write(tx)

    def finish_run(self, run_id: int, status: str, *, n_questions: int, n_errors: int) -> RunInfo:
        """Close a run: ``complete``, ``interrupted`` (resumable) or ``failed``."""
        if status not in _FINISHED:
            raise ValueError(f"a finished run's status is one of {_FINISHED}, not {status!r}")
        return self.update_run(run_id, status=status, n_questions=n_questions, n_errors=n_errors)

    def update_run(self, run_id: int, **fields: Any) -> RunInfo:
        """Change a run's ``name``, ``note``, ``status``, ``config`` or counts.

        ``store.update_run(run.id, note="+ bigger chunks").note == "+ bigger chunks"``
        """
        unknown = sorted(set(fields) - set(_UPDATABLE))
        if unknown:
            raise TypeError(f"update_run() cannot change {unknown}; it changes {_UPDATABLE}")
        if "status" in fields and fields["status"] not in _STATUSES:
            raise ValueError(f"status must be one of {_STATUSES}, not {fields['status']!r}")
        values = dict(fields)
        if "config" in values:
            values["config"] = _codec.dumps(dict(values["config"]))

        def tx(conn: Connection) -> RunInfo:
            if values:
                changed = conn.execute(update(runs).where(runs.c.id == run_id).values(**values))
                if changed.rowcount == 0:
                    raise self._not_found(conn, run_id)
            return self._run_info(conn, run_id)

        return self._write(tx)

    def delete_run(self, run_id: int) -> None:
        """Delete a run with its results and metrics (its gold set stays)."""

        def tx(conn: Connection) -> None:
            # Explicit deletes rather than relying on ON DELETE CASCADE being enabled.
            from ragmeter.store._judge import judge_runs, judge_verdicts

            for table in (question_metrics, run_metrics, results, judge_verdicts, judge_runs):
                conn.execute(delete(table).where(table.c.run_id == run_id))
            if conn.execute(delete(runs).where(runs.c.id == run_id)).rowcount == 0:
                raise self._not_found(conn, run_id)

        self._write(tx)

    def get_run(self, ref: str | int) -> RunInfo:
        """Find a run by id, ``"latest"``, or name (the newest run of that name).

        >>> with Store.memory() as store:
        ...     store.get_run("latest")
        Traceback (most recent call last):
        ...
        ragmeter.errors.RunNotFoundError: no run "latest": the store sqlite:// has no runs yet
        """

        def find(conn: Connection) -> RunInfo:
            text = str(ref).strip()
            if isinstance(ref, int) or text.isdigit():
                query = select(runs.c.id).where(runs.c.id == int(text))
            elif text == "latest":
                query = select(func.max(runs.c.id))
            else:
                query = select(runs.c.id).where(runs.c.name == text).order_by(runs.c.id.desc())
            run_id = conn.execute(query.limit(1)).scalar()
            if run_id is None:
                raise self._not_found(conn, ref)
            return self._run_info(conn, run_id)

        return self._read(find)

    def list_runs(self) -> list[RunInfo]:
        """Every run, oldest first, with its metric means."""

        def fetch(conn: Connection) -> list[RunInfo]:
            means: dict[int, dict[str, float]] = {}
            query = select(run_metrics).order_by(run_metrics.c.run_id, run_metrics.c.metric)
            for run_id, metric, value in conn.execute(query):
                means.setdefault(run_id, {})[metric] = _codec.null_to_nan(value)
            rows = conn.execute(select(runs).order_by(runs.c.id))
            return [_codec.run_info(row, means.get(row.id, {})) for row in rows]

        return self._read(fetch)

    def _run_info(self, conn: Connection, run_id: int) -> RunInfo:
        row = conn.execute(select(runs).where(runs.c.id == run_id)).first()
        if row is None:
            raise self._not_found(conn, run_id)
        query = select(run_metrics.c.metric, run_metrics.c.value).where(
            run_metrics.c.run_id == run_id
        )
        means = {metric: _codec.null_to_nan(value) for metric, value in conn.execute(query)}
        return _codec.run_info(row, means)

    def _not_found(self, conn: Connection, ref: str | int) -> RunNotFoundError:
        newest = conn.execute(
            select(runs.c.id, runs.c.name, runs.c.created, runs.c.status)
            .order_by(runs.c.id.desc())
            .limit(5)
        ).all()
        if not newest:
            return RunNotFoundError(f'no run "{ref}": the store {self.url} has no runs yet')
        listed = "; ".join(f"{r.id} {r.name} ({r.status}, {r.created})" for r in newest)
        return RunNotFoundError(
            f'no run "{ref}" in the store {self.url}; give a run id, a name or "latest". '
            f"Newest runs: {listed}"
        )

    # -- per-question results ----------------------------------------------------------

    def add_results(self, run_id: int, results_: Iterable[QuestionResult]) -> None:
        """Store a batch of question results in one transaction.

        Re-adding an item id replaces its earlier row (a resumed run re-runs the
        questions that were in flight). Hits keep id, doc, score and span, not text.
        """
        rows = {}
        for result in results_:
            rows[result.item_id] = _codec.result_row(run_id, result)  # last one wins
        if not rows:
            return
        item_ids = list(rows)

        def tx(conn: Connection) -> None:
            for chunk in _chunks(item_ids, _IN_CHUNK):
                conn.execute(
                    delete(results).where(results.c.run_id == run_id, results.c.item_id.in_(chunk))
                )
            _insert_many(conn, results, list(rows.values()))

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
        last = 0
        while True:
            query = (
                select(results)
                .where(results.c.run_id == run_id, results.c.id > last)
                .order_by(results.c.id)
                .limit(_PAGE)
            )
            page = self._read(_fetch_all(query))
            for row in page:
                yield QuestionResult(
                    item_id=row.item_id,
                    hits=_codec.hits_from_json(row.ranking),
                    latency_ms=row.latency_ms,
                    error=row.error,
                    answer=row.answer,
                    extra=json.loads(row.extra) if row.extra else {},
                )
            if len(page) < _PAGE:
                return
            last = page[-1].id

    # -- metrics -----------------------------------------------------------------------

    def set_metrics(
        self,
        run_id: int,
        means: Mapping[str, float],
        per_query: Mapping[str, Mapping[str, float]],
    ) -> None:
        """Replace a run's metric means and per-question values.

        ``per_query`` maps metric -> item id -> value, as ``question_metrics`` returns
        it. NaN (undefined) is stored as NULL and read back as NaN.
        """
        mean_rows = [
            {"run_id": run_id, "metric": metric, "value": _codec.nan_to_null(value)}
            for metric, value in means.items()
        ]
        item_rows = [
            {
                "run_id": run_id,
                "metric": metric,
                "item_id": item_id,
                "value": _codec.nan_to_null(value),
            }
            for metric, values in per_query.items()
            for item_id, value in values.items()
        ]

        def tx(conn: Connection) -> None:
            if conn.execute(select(runs.c.id).where(runs.c.id == run_id)).first() is None:
                raise self._not_found(conn, run_id)
            for table, rows in ((run_metrics, mean_rows), (question_metrics, item_rows)):
                conn.execute(delete(table).where(table.c.run_id == run_id))
                for chunk in _chunks(rows, _INSERT_CHUNK):
                    _insert_many(conn, table, chunk)

        self._write(tx)

    def question_metrics(
        self, run_id: int, metrics: Sequence[str] | None = None
    ) -> dict[str, dict[str, float]]:
        """Per-question metric values: metric -> item id -> value."""
        table = question_metrics
        query = select(table.c.metric, table.c.item_id, table.c.value).where(
            table.c.run_id == run_id
        )
        if metrics is not None:
            query = query.where(table.c.metric.in_(list(metrics)))
        out: dict[str, dict[str, float]] = {m: {} for m in metrics or ()}
        for metric, item_id, value in self._read(lambda conn: conn.execute(query).all()):
            out.setdefault(metric, {})[item_id] = _codec.null_to_nan(value)
        return out

    # -- production query log (flywheel) ---------------------------------------------

    def add_query_log(
        self,
        queries: Sequence[Mapping[str, Any]],
        feedback: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        """Write logged queries and feedback rows in one transaction (all or nothing).

        Rows are shaped by ``ragmeter.feedback.querylog``; use ``QueryLogger`` rather than this.
        """
        from ragmeter.store import _querylog

        if queries or feedback:
            self._write(lambda conn: _querylog.insert_rows(conn, queries, feedback))

    def logged_queries(self, *, since: str | None = None, feedback_only: bool = False) -> list[Any]:
        """Logged queries (``LoggedQuery``) created at or after ``since``, oldest first."""
        from ragmeter.store import _querylog

        return self._read(
            lambda conn: _querylog.read_queries(conn, since=since, feedback_only=feedback_only)
        )

    def query_log_counts(self) -> tuple[int, int]:
        """(logged queries, feedback rows) in the store."""
        from ragmeter.store import _querylog

        return self._read(_querylog.count_rows)


def _fetch_all(query: Any) -> Callable[[Connection], Sequence[Row[Any]]]:
    return lambda conn: conn.execute(query).all()


def _insert_many(conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert many rows with the driver's own ``executemany``.

    SQLAlchemy's per-row parameter processing cost more than SQLite's inserts
    (60k vs 200k+ rows/s). The statement is still compiled by SQLAlchemy for the
    connection's dialect, so this stays portable; it is only used for tables whose
    column types (integers, strings, floats) need no bind processing.
    """
    if not rows:
        return
    keys = list(rows[0])
    if conn.dialect.name == "postgresql" and len(rows) >= _COPY_MIN_ROWS:
        _copy_rows(conn, table, keys, rows)
        return
    compiled = insert(table).compile(dialect=conn.dialect, column_keys=keys)
    params: Sequence[Any] = rows
    if compiled.positional:
        order = compiled.positiontup or []
        params = [tuple(row[key] for key in order) for row in rows]
    conn.exec_driver_sql(str(compiled), params)


def _copy_rows(
    conn: Connection, table: Table, keys: list[str], rows: Sequence[Mapping[str, Any]]
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
                copy.write_row(tuple(row[key] for key in keys))
    finally:
        cursor.close()
