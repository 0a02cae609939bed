"""The run store: gold sets, runs, per-question results and metric values.

One small protocol over SQLAlchemy Core, so the same code serves a SQLite file
(the default) and PostgreSQL. Writes go through one writer per ``Store``: a lock
serialises them inside a process, and each write is one transaction that is
retried when another process holds the database ("database is locked",
serialisation failures), so several ``ragmeter eval`` processes can share a store.

This module opens the store and holds the writer and the gold sets; runs live in
``_runs.py``, per-question results and metrics in ``_results.py``, the judge's
tables in ``_judge.py`` (mixins of ``Store``).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from sqlalchemy import Connection, insert, select
from sqlalchemy.exc import DBAPIError, IntegrityError

from ragmeter.errors import StoreError
from ragmeter.store import _codec, migrations
from ragmeter.store._engine import (
    WRITE_OPTION,
    Tracer,
    is_memory,
    make_engine,
    to_url,
)
from ragmeter.store._judge import JudgeStoreMixin
from ragmeter.store._metric_columns import MetricStoreMixin
from ragmeter.store._results import ResultStoreMixin
from ragmeter.store.schema import gold_sets

if TYPE_CHECKING:
    from ragmeter.gold.edits import GoldEdit
    from ragmeter.store._querylog import QueryLogWrite

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


class Store(ResultStoreMixin, MetricStoreMixin, JudgeStoreMixin):
    """Where runs are kept: a SQLite file by default, or any SQLAlchemy URL.

    >>> with Store.memory() as store:
    ...     store.list_runs()
    []
    """

    def __init__(
        self,
        url: str,
        *,
        tracer: Tracer | None = None,
        schema_version: int | None = None,
        read_only: bool = False,
    ):
        """Open (and migrate) the store at ``url``; prefer ``Store.open`` / ``Store.memory``."""
        parsed = to_url(url)
        self.url: str = parsed.render_as_string(hide_password=True)
        self.read_only = read_only
        self._engine = make_engine(parsed, tracer, read_only=read_only)
        self._memory = is_memory(parsed)
        self._lock = threading.RLock()
        try:
            if read_only:
                migrations.check(self._read, self.url)
            else:
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
        read_only: bool = False,
    ) -> Store:
        """Open the store at a path or SQLAlchemy URL, creating and migrating it as needed.

        ``tracer(sql, params)`` is called with every SQL statement (``tracer=print``).
        ``schema_version`` stops migrating at that version: tests use it to build an
        old store, which then only supports what its tables hold. ``read_only=True``
        writes nothing, not even a migration, so a store in a folder (or on a disk) we
        cannot write can still be read; every write then raises ``StoreError``.

        >>> store = Store.open("sqlite://")   # a path works too: Store.open("runs.db")
        >>> store.url
        'sqlite://'
        >>> store.close()
        """
        return cls(
            os.fspath(target), tracer=tracer, schema_version=schema_version, read_only=read_only
        )

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

    def redact_secrets(self, *, dry_run: bool = False, wait: float | None = None) -> dict[str, int]:
        """Hide the secrets a store written before issue 19.2 still holds.

        Every stored spec and config (``runs.retriever``, ``runs.config``,
        ``judge_runs.config``, ``judge_calibrations.config``) passes through the one
        ``redact()``; then the database is rebuilt (SQLite ``VACUUM`` with its
        write-ahead log emptied) so the old values are not left in free pages.
        Returns ``{"table.column": values that held a secret}``; ``dry_run`` only counts.
        While another connection reads the file the old values stay on disk: the rebuild
        waits ``wait`` seconds (default ``COMPACT_WAIT_S``) for it, then raises
        ``StoreBusyError`` (exit 3) naming who holds the file.

        >>> from types import SimpleNamespace
        >>> gold = SimpleNamespace(hash="h1", name="faq", to_records=lambda: [])
        >>> with Store.memory() as store:
        ...     _ = store.save_gold(gold)
        ...     store.redact_secrets()
        {}
        """
        from ragmeter.store import _scrub

        changed = self._write(lambda conn: _scrub.redact_tables(conn, dry_run=dry_run))
        # Compacted even when nothing changed now: a run stopped by a busy reader rewrote
        # the rows but left their old bytes on disk, and running it again must remove them.
        if not dry_run and not self._memory:
            with self._lock:
                _scrub.compact(self._engine, wait=_scrub.COMPACT_WAIT_S if wait is None else wait)
        return changed

    # -- the one writer ----------------------------------------------------------------

    def _write(self, fn: Callable[[Connection], T]) -> T:
        """Run ``fn`` in one write transaction, serialised and retried while busy.

        A lost connection is retried ``RECONNECT_ATTEMPTS`` times on a fresh one, but
        only when it was lost before the commit began: a commit whose outcome is
        unknown is never replayed (issue 19.1).
        """
        if self.read_only:
            raise StoreError(f"store {self.url} is open read-only: it cannot be written")
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

    def save_gold(self, gold: GoldLike, records: list[dict[str, Any]] | None = None) -> str:
        """Keep a gold set's content once per content hash; returns the hash.

        ``records``: ``gold.to_records()`` when the caller has them already.

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
            content = records if records is not None else gold.to_records()
            conn.execute(
                insert(gold_sets).values(
                    hash=digest,
                    name=gold.name,
                    created=_codec.now(),
                    n_items=len(content),
                    content=_codec.dumps(content),
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

    def gold_names(self) -> dict[str, str]:
        """``hash -> name`` of every saved gold set (the runs table's gold column).

        >>> Store.memory().gold_names()
        {}
        """
        query = select(gold_sets.c.hash, gold_sets.c.name)
        rows = self._read(lambda conn: conn.execute(query).all())
        return {str(row.hash): str(row.name) for row in rows}

    def load_gold_records(self, gold_hash: str) -> list[dict[str, Any]]:
        """The item records of a saved gold set (rebuild with ``GoldSet.from_records``)."""
        return cast(list[dict[str, Any]], json.loads(self.load_gold_text(gold_hash)))

    def load_gold_text(self, gold_hash: str) -> str:
        """A saved gold set's item records as the JSON text stored (``show`` reads from it
        only what it prints: :class:`~ragmeter.gold.stored.StoredGold`, issue 29.1)."""
        query = select(gold_sets.c.content).where(gold_sets.c.hash == gold_hash)
        content = self._read(lambda conn: conn.execute(query).scalar())
        if content is None:
            raise StoreError(f"gold set {gold_hash} is not in the store {self.url}")
        return str(content)

    # -- production query log (flywheel) ---------------------------------------------

    def add_query_log(
        self,
        queries: Sequence[Mapping[str, Any]],
        feedback: Sequence[Mapping[str, Any]] = (),
        answers: Mapping[str, str] | None = None,
    ) -> QueryLogWrite:
        """Write logged queries and feedback rows in one transaction; what was written.

        A query whose id is already stored is skipped, not updated, and counted in the
        result's ``duplicates``; the other rows are written. ``answers`` (query id ->
        answer) set ``meta.answer`` on queries already stored. Rows are shaped by
        ``ragmeter.feedback.querylog``; use ``QueryLogger`` rather than this.

        >>> row = {"id": "q1", "created": "2026-01-01T00:00:00.000Z", "query": "q",
        ...        "hits": "[]", "latency_ms": None, "user": None, "meta": None}
        >>> with Store.memory() as store:
        ...     store.add_query_log([row]).duplicates, store.add_query_log([row]).duplicates
        (0, 1)
        """
        from ragmeter.store import _querylog

        if not (queries or feedback or answers):
            return _querylog.QueryLogWrite(queries=0, feedback=0)
        return self._write(lambda conn: _querylog.insert_rows(conn, queries, feedback, answers))

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

    # -- gold edits (issue 15.3) -----------------------------------------------------

    def add_gold_edit(self, edit: GoldEdit) -> GoldEdit:
        """Store a validated gold edit (``GoldEdit.new`` + ``check_edit``); returns it with its id.

        >>> from ragmeter.gold.edits import GoldEdit
        >>> with Store.memory() as store:
        ...     saved = store.add_gold_edit(GoldEdit.new(run_id=1, item_id="q1",
        ...                                              action="wrong", doc="a.md"))
        ...     saved.id, [e.doc for e in store.gold_edits()]
        (1, ['a.md'])
        """
        from ragmeter.store import _gold_edits

        new_id = self._write(lambda conn: _gold_edits.insert_edit(conn, edit))
        return replace(edit, id=new_id)

    def gold_edits(self, run_id: int | None = None) -> list[GoldEdit]:
        """The stored gold edits, oldest first; only run ``run_id``'s when given."""
        from ragmeter.store import _gold_edits

        return self._read(lambda conn: _gold_edits.read_edits(conn, run_id))

    # -- people's claim labels (issue 17.2) ------------------------------------------

    def save_claim_labels(
        self, run_id: int, labels: Mapping[str, Mapping[str, Any]], *, who: str
    ) -> dict[str, int]:
        """Store people's claim labels of run ``run_id``, ``item_id -> labels`` (JSON-able).

        One transaction; equal labels already stored are left as they were (their ``who``
        and ``created`` too). Returns ``{"stored", "updated", "unchanged"}`` counts. Build
        the labels with ``ragmeter.judging.claim_label_files.import_claim_labels``.

        >>> with Store.memory() as store:   # run 1 does not exist: nothing to label
        ...     store.save_claim_labels(1, {}, who="ana"), store.claim_labels(1)
        ({'stored': 0, 'updated': 0, 'unchanged': 0}, {})
        """
        from ragmeter.store import _claim_labels

        return self._write(lambda conn: _claim_labels.write_labels(conn, run_id, labels, who))

    def claim_labels(self, run_id: int) -> dict[str, dict[str, Any]]:
        """``item_id -> {"labels", "who", "created"}``: people's claim labels of a run."""
        from ragmeter.store import _claim_labels

        return self._read(lambda conn: _claim_labels.read_labels(conn, run_id))

    # -- explanations of a run's misses (issue 28) --------------------------------------

    def save_explanation(self, run_id: int, content: Mapping[str, Any]) -> None:
        """Store run ``run_id``'s explanation (JSON-able, ``Explanation.to_dict()``), replacing
        any earlier one.

        >>> with Store.memory() as store:
        ...     store.explanation(1) is None
        True
        """
        from ragmeter.store import _explanations

        self.get_run(run_id)  # a clear error for an unknown run
        self._write(lambda conn: _explanations.write_explanation(conn, run_id, content))

    def explanation(self, run_id: int) -> dict[str, Any] | None:
        """Run ``run_id``'s stored explanation (``ragmeter explain``), or None."""
        from ragmeter.store import _explanations

        return self._read(lambda conn: _explanations.read_explanation(conn, run_id))

    def explanation_created(self, run_id: int) -> str | None:
        """When run ``run_id``'s explanation was stored, or None (a cheap freshness check)."""
        from ragmeter.store import _explanations

        return self._read(lambda conn: _explanations.explanation_created(conn, run_id))
