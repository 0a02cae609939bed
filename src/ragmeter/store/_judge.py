"""The judge's tables and the store methods that use them (mixed into ``Store``).

- ``judge_cache``: a verdict per ``sha256(model, prompt version, inputs)``, so a
  re-run with unchanged inputs makes no request;
- ``judge_verdicts``: per run, per judge, per question (and chunk, for relevance);
- ``judge_runs``: which judge ran on a run, its config (never a key) and usage;
- ``judge_labels``: people's labels per calibration set;
- ``judge_calibrations``: agreement results, so runs can say whether their judge
  was calibrated.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from sqlalchemy import (
    Column,
    Connection,
    Float,
    ForeignKey,
    Integer,
    String,
    Table,
    Text,
    delete,
    insert,
    select,
)

from ragmeter._redact import redact
from ragmeter.store import _codec
from ragmeter.store.schema import metadata

__all__ = [
    "JudgeStoreMixin",
    "judge_cache",
    "judge_calibrations",
    "judge_labels",
    "judge_runs",
    "judge_verdicts",
]

T = TypeVar("T")

judge_cache = Table(
    "judge_cache",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("model", String(), nullable=False),
    Column("prompt_version", String(), nullable=False),
    Column("created", String(40), nullable=False),
    Column("value", Text, nullable=False),  # JSON object: the parsed reply
)

judge_verdicts = Table(
    "judge_verdicts",
    metadata,
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("judge", String(32), primary_key=True),  # faithfulness | relevance
    Column("item_id", String(), primary_key=True),
    Column("target", String(), primary_key=True),  # "" or the chunk id judged
    Column("source", String(), nullable=False),  # model name, or "lexical"
    Column("verdict", Text, nullable=True),  # JSON, NULL when the judge failed
    Column("error", Text, nullable=True),
    Column("created", String(40), nullable=False),
)

judge_runs = Table(
    "judge_runs",
    metadata,
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("judge", String(32), primary_key=True),
    Column("created", String(40), nullable=False),
    Column("config", Text, nullable=False),  # JSON; never holds a key
    Column("usage", Text, nullable=False),  # JSON: requests, cached, tokens, cost
    Column("calibration_id", Integer, nullable=True),
)

judge_labels = Table(
    "judge_labels",
    metadata,
    Column("set_name", String(), primary_key=True),
    Column("item_id", String(), primary_key=True),
    Column("label", String(32), nullable=False),
    Column("created", String(40), nullable=False),
)

judge_calibrations = Table(
    "judge_calibrations",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("created", String(40), nullable=False),
    Column("model", String(), nullable=False),
    Column("prompt_version", String(), nullable=False),
    Column("set_name", String(), nullable=False),
    Column("config", Text, nullable=False),
    Column("n", Integer, nullable=False),
    Column("agreement", Float, nullable=False),
    Column("kappa", Float, nullable=True),
    Column("flagged", Integer, nullable=False),
    Column("result", Text, nullable=False),  # JSON of Calibration.to_dict()
)

TABLES = (judge_cache, judge_verdicts, judge_runs, judge_labels, judge_calibrations)


class JudgeStoreMixin:
    """Judge cache, verdicts, labels and calibrations (``Store`` provides the I/O)."""

    _write: Callable[..., Any]
    _read: Callable[..., Any]

    # -- cache -------------------------------------------------------------------------

    def judge_cache_get(self, key: str) -> dict[str, Any] | None:
        """The cached reply for ``key``, or None."""
        query = select(judge_cache.c.value).where(judge_cache.c.key == key)
        value = self._read(lambda conn: conn.execute(query).scalar())
        return json.loads(value) if value is not None else None

    def judge_cache_put(
        self, key: str, *, model: str, prompt_version: str, value: Mapping[str, Any]
    ) -> None:
        """Keep a reply under ``key`` (a later put for the same key replaces it)."""

        def tx(conn: Connection) -> None:
            conn.execute(delete(judge_cache).where(judge_cache.c.key == key))
            conn.execute(
                insert(judge_cache).values(
                    key=key,
                    model=model,
                    prompt_version=prompt_version,
                    created=_codec.now(),
                    value=json.dumps(dict(value), ensure_ascii=False),
                )
            )

        self._write(tx)

    # -- verdicts per run ----------------------------------------------------------------

    def save_judge_verdicts(
        self,
        run_id: int,
        judge: str,
        rows: Iterable[tuple[str, str, Mapping[str, Any] | None, str | None]],
        *,
        source: str,
    ) -> None:
        """Store ``(item_id, target, verdict, error)`` rows, replacing earlier ones."""
        values = [
            {
                "run_id": run_id,
                "judge": judge,
                "item_id": item_id,
                "target": target,
                "source": source,
                "verdict": json.dumps(dict(verdict), ensure_ascii=False) if verdict else None,
                "error": redact(error),  # a server may quote a key it was sent (issue 27.4)
                "created": _codec.now(),
            }
            for item_id, target, verdict, error in rows
        ]

        def tx(conn: Connection) -> None:
            for row in values:
                conn.execute(
                    delete(judge_verdicts).where(
                        judge_verdicts.c.run_id == run_id,
                        judge_verdicts.c.judge == judge,
                        judge_verdicts.c.item_id == row["item_id"],
                        judge_verdicts.c.target == row["target"],
                    )
                )
            if values:
                conn.execute(insert(judge_verdicts), values)

        self._write(tx)

    def judge_verdicts(self, run_id: int, judge: str) -> dict[tuple[str, str], dict[str, Any]]:
        """``(item_id, target) -> {"verdict", "error", "source"}`` for one judge of a run."""
        table = judge_verdicts
        query = select(table).where(table.c.run_id == run_id, table.c.judge == judge)
        rows = self._read(lambda conn: conn.execute(query).all())
        return {
            (row.item_id, row.target): {
                "verdict": json.loads(row.verdict) if row.verdict else None,
                "error": row.error,
                "source": row.source,
            }
            for row in rows
        }

    def verdict_judges(self, run_id: int) -> set[str]:
        """The judges with a stored verdict (or failure) on a run: a read that finds none
        skips the judge metrics without importing what computes them (issue 29.1)."""
        query = select(judge_verdicts.c.judge).where(judge_verdicts.c.run_id == run_id).distinct()
        return set(self._read(lambda conn: conn.execute(query).scalars().all()))

    def record_judge_run(
        self,
        run_id: int,
        judge: str,
        *,
        config: Mapping[str, Any],
        usage: Mapping[str, Any],
        calibration_id: int | None,
    ) -> None:
        """Remember which judge ran on a run, with its config (no key) and usage."""

        def tx(conn: Connection) -> None:
            conn.execute(
                delete(judge_runs).where(judge_runs.c.run_id == run_id, judge_runs.c.judge == judge)
            )
            conn.execute(
                insert(judge_runs).values(
                    run_id=run_id,
                    judge=judge,
                    created=_codec.now(),
                    config=json.dumps(redact(dict(config))),  # no key, no URL password
                    usage=json.dumps(dict(usage)),
                    calibration_id=calibration_id,
                )
            )

        self._write(tx)

    def judge_runs(self, run_id: int) -> dict[str, dict[str, Any]]:
        """judge -> ``{"config", "usage", "calibration"}`` for a run (calibration may be None)."""

        def fetch(conn: Connection) -> dict[str, dict[str, Any]]:
            out: dict[str, dict[str, Any]] = {}
            query = select(judge_runs).where(judge_runs.c.run_id == run_id)
            for row in conn.execute(query).all():
                calibration = None
                if row.calibration_id is not None:
                    found = conn.execute(
                        select(judge_calibrations).where(
                            judge_calibrations.c.id == row.calibration_id
                        )
                    ).first()
                    calibration = _calibration_dict(found) if found is not None else None
                out[row.judge] = {
                    "config": json.loads(row.config),
                    "usage": json.loads(row.usage),
                    "calibration": calibration,
                }
            return out

        return self._read(fetch)  # type: ignore[no-any-return]

    # -- people's labels -----------------------------------------------------------------

    def save_labels(self, set_name: str, labels: Mapping[str, str]) -> None:
        """Store (or replace) people's labels for items of a calibration set."""

        def tx(conn: Connection) -> None:
            for item_id, label in labels.items():
                conn.execute(
                    delete(judge_labels).where(
                        judge_labels.c.set_name == set_name, judge_labels.c.item_id == item_id
                    )
                )
                conn.execute(
                    insert(judge_labels).values(
                        set_name=set_name, item_id=item_id, label=label, created=_codec.now()
                    )
                )

        self._write(tx)

    def labels(self, set_name: str) -> dict[str, str]:
        """People's labels of a calibration set: item id -> label."""
        query = select(judge_labels.c.item_id, judge_labels.c.label).where(
            judge_labels.c.set_name == set_name
        )
        return dict(self._read(lambda conn: conn.execute(query).all()))

    # -- calibrations --------------------------------------------------------------------

    def save_calibration(
        self,
        *,
        model: str,
        prompt_version: str,
        set_name: str,
        config: Mapping[str, Any],
        result: Mapping[str, Any],
    ) -> int:
        """Store one calibration result; returns its id."""

        def tx(conn: Connection) -> int:
            key = conn.execute(
                insert(judge_calibrations).values(
                    created=_codec.now(),
                    model=model,
                    prompt_version=prompt_version,
                    set_name=set_name,
                    config=json.dumps(redact(dict(config))),  # no key, no URL password
                    n=int(result["n"]),
                    agreement=float(result["agreement"]),
                    kappa=result.get("kappa"),
                    flagged=int(bool(result["flagged"])),
                    result=json.dumps(dict(result), ensure_ascii=False),
                )
            ).inserted_primary_key
            return int(key[0]) if key is not None else 0

        return self._write(tx)  # type: ignore[no-any-return]

    def latest_calibration(self, model: str, prompt_version: str) -> dict[str, Any] | None:
        """The newest calibration of this model and prompt version, or None."""
        table = judge_calibrations
        query = (
            select(table)
            .where(table.c.model == model, table.c.prompt_version == prompt_version)
            .order_by(table.c.id.desc())
            .limit(1)
        )
        row = self._read(lambda conn: conn.execute(query).first())
        return _calibration_dict(row) if row is not None else None


def _calibration_dict(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "created": row.created,
        "model": row.model,
        "prompt_version": row.prompt_version,
        "set_name": row.set_name,
        "n": row.n,
        "agreement": row.agreement,
        "kappa": row.kappa,
        "flagged": bool(row.flagged),
        # The kappa interval lives in the stored result (issue 17.3); the gate reads it.
        "kappa_interval": json.loads(row.result).get("kappa_interval"),
        "config": json.loads(row.config),  # the judge's identity among it (issue 17.6)
    }


def create_tables(conn: Connection) -> None:
    """Migration body: create the judge tables."""
    for table in TABLES:
        table.create(conn)
