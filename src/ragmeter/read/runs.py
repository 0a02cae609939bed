"""The runs table as people read it: a row per run, its health, and deltas against an
explicit reference (issue 25.1: the dashboard renders this, it computes nothing).

A row's deltas are against the baseline the person picked, or the run before it when none
is picked. A run scored at another level or against another gold set than that reference
gets no delta at all, only the reason (:func:`ragmeter.compare.comparable.not_comparable`):
the two numbers measure different things (issue 15.2).
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any, cast

from ragmeter.compare.comparable import not_comparable
from ragmeter.compare.health import HealthThresholds, diagnose, precision_ceiling
from ragmeter.gold.goldset import GoldSet
from ragmeter.metrics import lower_is_better
from ragmeter.read.questions import clean, metric_order
from ragmeter.run import RunInfo
from ragmeter.store import Store

__all__ = ["DEFAULT_COLUMNS", "Ceilings", "read_runs"]

#: Columns shown by default on the runs page; the rest are one click away.
DEFAULT_COLUMNS = ("hit@5", "recall@10", "mrr", "ndcg@10", "precision@5", "latency_p95_ms")


def _delta(value: float, before: float | None) -> float | None:
    if before is None or not (math.isfinite(value) and math.isfinite(before)):
        return None
    return value - before


class Ceilings:
    """precision@5's best achievable value per gold set, computed once per gold hash."""

    def __init__(self, store: Store):
        self._store = store
        self._cache: dict[str, float | None] = {}

    def __call__(self, run: RunInfo) -> float | None:
        # Relevant chunks per question are unknown at chunk level (they depend on chunking).
        if run.level != "doc":
            return None
        if run.gold_hash not in self._cache:
            gold = GoldSet.from_records(self._store.load_gold_records(run.gold_hash))
            counts = (
                len(dict.fromkeys(rel.doc_id for rel in item.relevant if rel.grade > 0))
                for item in gold
            )
            self._cache[run.gold_hash] = precision_ceiling(counts)
        return self._cache[run.gold_hash]


def read_runs(
    store: Store,
    thresholds: HealthThresholds | None = None,
    baseline: int | str | None = None,
) -> dict[str, Any]:
    """Every run (oldest first) with level, gold set, metrics, deltas and health.

    ``delta`` is against ``baseline`` (a run id, name or ``latest``) or, without one, the
    previous run; ``compared_with`` names that run and ``not_compared`` says why a row has
    no delta (another level or gold set). ``health`` maps a metric to ``good``/``fair``/
    ``poor`` where a threshold applies; ``shaded`` lists those metrics.

    >>> read_runs(Store.memory())["runs"]
    []
    """
    t = thresholds or HealthThresholds()
    runs = store.list_runs()
    chosen = store.get_run(baseline) if baseline not in (None, "") else None
    names = metric_order([m for run in runs for m in run.metrics])
    gold_names = store.gold_names()
    ceilings = Ceilings(store)
    rows: list[dict[str, Any]] = []
    previous: RunInfo | None = None
    for run in runs:
        health = diagnose(run.metrics, t, precision_ceiling=ceilings(run))
        reference = chosen if chosen is not None else previous
        refused = not_comparable(reference, run) if reference is not None else []
        deltas: dict[str, float | None] = {}
        if reference is not None and reference.id != run.id and not refused:
            before = reference.metrics
            deltas = {name: _delta(value, before.get(name)) for name, value in run.metrics.items()}
        row = run.to_dict()
        row.update(
            metrics=dict(run.metrics),
            gold={"hash": run.gold_hash, "name": gold_names.get(run.gold_hash, "")},
            compared_with=reference.id if reference is not None else None,
            is_baseline=chosen is not None and chosen.id == run.id,
            not_compared=refused,
            delta=deltas,
            health={c.metric: c.status for c in health.checks if c.metric in names},
        )
        rows.append(row)
        previous = run
    shaded = [m for m in names if any(m in row["health"] for row in rows)]
    return cast(
        dict[str, Any],
        clean(
            {
                "metrics": names,
                "default_columns": [m for m in DEFAULT_COLUMNS if m in names] or names[:6],
                "lower_is_better": [m for m in names if lower_is_better(m)],
                "thresholds": asdict(t),
                "shaded": shaded,
                "baseline": chosen.to_dict() if chosen is not None else None,
                "runs": rows,
            }
        ),
    )
