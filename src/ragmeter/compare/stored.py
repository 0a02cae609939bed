"""Two stored runs' per-question values, read one metric at a time (issue 29.1).

``ragmeter diff`` of two 100,000-question runs used to hold both runs' metric values as
dicts (metric -> question -> value) and every question's report row. :func:`read_pairs`
reads each metric of each run as two aligned lists (item ids in sorted order, values) and
pairs them into numpy arrays (:class:`~ragmeter.compare.comparison.Paired`); a metric whose
questions differ between the runs, or that holds an undefined value, goes through the
per-question dicts of :func:`~ragmeter.compare.comparison.paired_column`, whose checks and
messages are the rule. :func:`first_ranks` reads the first relevant rank of the questions a
diff lists (its flips) from their stored summaries.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ragmeter.compare.comparison import Paired, _column, paired_column
from ragmeter.errors import InputError

if TYPE_CHECKING:
    from ragmeter.run import RunInfo
    from ragmeter.store import Store

__all__ = ["StoredPairs", "first_ranks", "read_pairs"]

_Column = tuple[list[str], list[float | None]]


@dataclass(frozen=True)
class StoredPairs:
    """What :func:`read_pairs` read: the questions both runs scored (sorted), those one run
    lacks, the paired columns asked for and the flip metric's values on every common one."""

    common: list[str]
    only_a: list[str]
    only_b: list[str]
    columns: list[Paired]
    flips: Paired | None


def _union(columns: dict[str, _Column]) -> list[str]:
    """The sorted item ids of any metric (the run's questions, as ``compare_runs`` counts)."""
    lists = [ids for ids, _ in columns.values()]
    if all(ids == lists[0] for ids in lists[1:]):
        return lists[0] if lists else []
    return sorted(set().union(*lists))


def _read(store: Store, run_id: int, names: Sequence[str]) -> dict[str, _Column]:
    out: dict[str, _Column] = {}
    first: list[str] | None = None
    for name in names:
        ids, values = store.metric_column(run_id, name)
        if first is not None and ids == first:
            ids = first  # one list of ids per run, however many metrics
        first = first if first is not None else ids
        out[name] = (ids, values)
    return out


def _pair(
    metric: str,
    a: dict[str, _Column],
    b: dict[str, _Column],
    common: list[str],
    labels: tuple[str, str],
    explicit: bool,
    whole: bool = False,
) -> Paired | None:
    """``metric`` paired on ``common``; ``whole``: every common question must have it (the
    flip metric, as ``question_flips`` reads it)."""
    if metric in a and metric in b and a[metric][0] == common and b[metric][0] == common:
        xa = np.array(a[metric][1], dtype=np.float64)
        xb = np.array(b[metric][1], dtype=np.float64)
        if np.isfinite(xa).all() and np.isfinite(xb).all():
            return Paired(metric, common, xa, xb)
    # Questions differ, or a value is undefined: the per-question rule and its messages.
    qa, qb = _dicts(metric, a), _dicts(metric, b)
    if whole:
        a_values = _column(qa, labels[0], metric, common)
        return Paired(metric, common, a_values, _column(qb, labels[1], metric, common))
    return paired_column(qa, qb, metric, common, labels, explicit)


def _dicts(metric: str, side: dict[str, _Column]) -> dict[str, dict[str, float]]:
    """One metric of a run as ``compare_runs`` reads it: item id -> value (NaN: undefined)."""
    if metric not in side:
        return {}
    ids, values = side[metric]
    return {metric: {i: math.nan if v is None else v for i, v in zip(ids, values, strict=True)}}


def read_pairs(
    store: Store,
    run_a: RunInfo,
    run_b: RunInfo,
    names: tuple[Sequence[str], Sequence[str]],
    wanted: Sequence[str],
    *,
    flip_metric: str | None,
    labels: tuple[str, str],
    explicit: bool,
) -> StoredPairs:
    """Read the per-question metrics ``names`` (A's, B's) of two runs and pair ``wanted``
    on the questions both scored, as :func:`~ragmeter.compare.comparison.compare_runs` does
    from dicts; ``flip_metric``'s values on every common question too."""
    a, b = _read(store, run_a.id, names[0]), _read(store, run_b.id, names[1])
    ids_a, ids_b = _union(a), _union(b)
    if ids_a == ids_b:
        common: list[str] = ids_a
        only_a: list[str] = []
        only_b: list[str] = []
    else:
        set_a, set_b = set(ids_a), set(ids_b)
        common = sorted(set_a & set_b)
        only_a, only_b = sorted(set_a - set_b), sorted(set_b - set_a)
    # One ids list for the common questions, so the tag index is built once.
    for side in (a, b):
        for name, (ids, values) in side.items():
            if ids is not common and ids == common:
                side[name] = (common, values)
    if wanted and not common:
        raise InputError(
            f"runs {labels[0]} and {labels[1]} have no questions in common; "
            "were they evaluated on the same gold set?"
        )
    columns = [
        column
        for metric in wanted
        if (column := _pair(metric, a, b, common, labels, explicit)) is not None
    ]
    flips = None
    if flip_metric is not None:
        found = next((c for c in columns if c.metric == flip_metric and c.items is common), None)
        flips = found or _pair(flip_metric, a, b, common, labels, explicit, whole=True)
    return StoredPairs(common, only_a, only_b, columns, flips)


def first_ranks(
    store: Store, run: RunInfo, item_ids: Collection[str]
) -> dict[str, tuple[int | None, str | None]]:
    """``item id -> (first relevant rank, error)`` of some questions, from their stored
    summaries (a ranking is decoded only for a row stored without one); a question without
    a result is ``(None, "not evaluated")``, as a report's row says."""
    from ragmeter.evaluation.summary import first_relevant_rank

    stored = store.summaries_for(run.id, item_ids)
    out: dict[str, tuple[int | None, str | None]] = {}
    old = [item for item, (_, summary) in stored.items() if summary is None]
    decoded = store.results_for(run.id, old) if old else {}
    for item in item_ids:
        if item not in stored:
            out[item] = (None, "not evaluated")
            continue
        error, summary = stored[item]
        if summary is not None:
            out[item] = (summary["first"], error)
            continue
        result = decoded[item]
        grades: Any = list(result.extra.get("grades") or [])
        out[item] = (first_relevant_rank(result.hits, grades, run.level), error)
    return out
