"""The store's runs: create, find, list, update and delete them (mixed into ``Store``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar, get_args

from sqlalchemy import Connection, delete, func, insert, select, update

from ragmeter._redact import redact
from ragmeter.errors import RunNotFoundError, StoreError
from ragmeter.run import RunInfo, RunStatus
from ragmeter.store import _codec
from ragmeter.store.schema import (
    claim_labels,
    explanations,
    gold_sets,
    metric_columns,
    results,
    run_metrics,
    runs,
)

__all__ = ["RunStoreMixin", "StoreIO"]

T = TypeVar("T")

_FINISHED = ("complete", "interrupted", "failed")
_STATUSES = get_args(RunStatus)
_LEVELS = ("doc", "passage", "chunk")
# Run ids are 32-bit integers on PostgreSQL (64-bit on SQLite): no larger id exists.
MAX_RUN_ID = 2**31 - 1
_UPDATABLE = ("name", "note", "status", "level", "config", "n_questions", "n_errors")


class StoreIO:
    """What the mixins need from ``Store``: its URL and its one writer and reader."""

    url: str

    def _write(self, fn: Callable[[Connection], T]) -> T:  # pragma: no cover - Store's
        raise NotImplementedError

    def _read(self, fn: Callable[[Connection], T]) -> T:  # pragma: no cover - Store's
        raise NotImplementedError


class RunStoreMixin(StoreIO):
    """Runs: one row each, with status, config and counts; metric means come along."""

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
        >>> from ragmeter.store import Store
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
                    # The one place specs and configs enter the store: secrets never do.
                    retriever=redact(retriever),
                    config=_codec.dumps(redact(dict(config))),
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
        """Change a run's ``name``, ``note``, ``status``, ``level``, ``config`` or counts.

        ``store.update_run(run.id, note="+ bigger chunks").note == "+ bigger chunks"``
        """
        unknown = sorted(set(fields) - set(_UPDATABLE))
        if unknown:
            raise TypeError(f"update_run() cannot change {unknown}; it changes {_UPDATABLE}")
        if "level" in fields and fields["level"] not in _LEVELS:
            raise ValueError(f"level must be one of {_LEVELS}, not {fields['level']!r}")
        if "status" in fields and fields["status"] not in _STATUSES:
            raise ValueError(f"status must be one of {_STATUSES}, not {fields['status']!r}")
        values = dict(fields)
        if "config" in values:
            values["config"] = _codec.dumps(redact(dict(values["config"])))

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

            tables = (metric_columns, run_metrics, results, judge_verdicts, judge_runs)
            for table in (*tables, claim_labels, explanations):
                conn.execute(delete(table).where(table.c.run_id == run_id))
            if conn.execute(delete(runs).where(runs.c.id == run_id)).rowcount == 0:
                raise self._not_found(conn, run_id)

        self._write(tx)

    def get_run(self, ref: str | int) -> RunInfo:
        """Find a run by id, ``"latest"``, or name (the newest run of that name).

        >>> from ragmeter.store import Store
        >>> with Store.memory() as store:
        ...     store.get_run("latest")
        Traceback (most recent call last):
        ...
        ragmeter.errors.RunNotFoundError: no run "latest": the store sqlite:// has no runs yet
        """

        def find(conn: Connection) -> RunInfo:
            text = str(ref).strip()
            if isinstance(ref, int) or text.isdigit():
                if int(text) > MAX_RUN_ID:  # no such run, and too big for the database
                    raise self._not_found(conn, ref)
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
