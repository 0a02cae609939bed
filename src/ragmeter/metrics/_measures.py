"""The computation of the families added after the core engine: ``err``, ``rbp_resid``, ``infap``.

The engine (:mod:`ragmeter.metrics.engine`) hands the sparse rank arrays it already
holds to :func:`compute` for any family it has no code for; each function here reads
them and returns one float64 value per query. Definitions (formula, citation,
parameters) live in the family modules (``err.py``, ``rbp.py``, ``infap.py``), as for
every family.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ragmeter.errors import InputError, MetricNameError
from ragmeter.metrics._base import Metric

__all__ = ["INFAP_EPSILON", "RankInputs", "compute", "handles"]

INFAP_EPSILON = 1e-5  # Yilmaz & Aslam's smoothing of the judged-relevant share (as trec_eval)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class RankInputs:
    """What the engine knows, per entry and per query (see ``engine.compute_from_ranks``).

    * ``query_index``, ``ranks``, ``grades``: one entry per retrieved relevant item (and,
      when ``n_judged`` is given, per retrieved item judged 0), sorted by query, then rank;
    * ``ideal_query_index``, ``ideal_grades``: every positive judged grade per query;
    * ``n_retrieved``, ``n_judged``: per query, when the metrics' ``needs`` asked for them;
    * ``pooled``: (query index, rank) of each retrieved item in the pool but not judged
      (a negative qrels grade), when a metric needs ``pooled``.
    """

    n: int
    query_index: IntArray
    ranks: IntArray
    grades: FloatArray
    ideal_query_index: IntArray
    ideal_grades: FloatArray
    n_retrieved: FloatArray | None
    n_judged: FloatArray | None
    pooled: tuple[IntArray, IntArray] | None = None


def _segment_starts(query_index: IntArray, n: int) -> IntArray:
    counts = np.bincount(query_index, minlength=n)
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    return starts


def _err(metric: Metric, x: RankInputs) -> FloatArray:
    """Chapelle et al.'s cascade, vectorised: the running product is a per-query sum of logs."""
    top = int(metric.param("max_grade"))
    worst = max(float(x.ideal_grades.max(initial=0.0)), float(x.grades.max(initial=0.0)))
    if worst > top:
        raise InputError(
            f"{metric}: a judged grade is {worst:g}, above max_grade={top}; set max_grade to "
            "the top grade of the relevance scale (grades are never clipped)"
        )
    keep = x.grades > 0 if metric.k is None else (x.grades > 0) & (x.ranks <= metric.k)
    qi, rank, grade = x.query_index[keep], x.ranks[keep], x.grades[keep]
    satisfied = (np.exp2(grade) - 1.0) / 2.0**top
    # prod_{i<r} (1 - R_i) within the query: exclusive running sum of log(1 - R) (R < 1).
    log_stay = np.log1p(-satisfied)
    running = np.cumsum(log_stay) - log_stay
    starts = _segment_starts(qi, x.n)
    if qi.size:
        base = np.concatenate(([0.0], np.cumsum(log_stay)))[starts[qi]]
        running = running - base
    terms = satisfied * np.exp(running) / rank
    return np.asarray(np.bincount(qi, weights=terms, minlength=x.n), dtype=np.float64)


def _rbp_resid(metric: Metric, x: RankInputs) -> FloatArray:
    """1 - (1 - p) * sum over the judged retrieved items of p^(rank - 1) (Moffat & Zobel)."""
    p = float(metric.param("p"))
    judged = x.grades >= 0  # entries are the retrieved items judged with a grade >= 0
    weights = np.power(p, x.ranks[judged] - 1.0, dtype=np.float64)
    mass = np.bincount(x.query_index[judged], weights=weights, minlength=x.n)
    return np.asarray(1.0 - (1.0 - p) * mass, dtype=np.float64)


def _exclusive_count(flags: npt.NDArray[np.bool_], starts_of_entry: IntArray) -> IntArray:
    """For each entry, how many flagged entries come before it within its query."""
    running = np.cumsum(flags, dtype=np.int64)
    before = np.concatenate(([0], running))
    return np.asarray(running - flags - before[starts_of_entry], dtype=np.int64)


def _infap(metric: Metric, x: RankInputs) -> FloatArray:
    """Yilmaz & Aslam's inferred AP, with the pool read from the qrels as trec_eval reads it.

    For a relevant item at rank k with, above it, ``rel`` judged relevant, ``non`` judged
    non-relevant and ``d100`` pooled items (judged or not): E[prec@k] = 1/k + (d100 / k) *
    (rel + eps) / (rel + non + 2 eps); items outside the pool above k count as non-relevant.
    """
    if x.pooled is None:  # pragma: no cover - the engine refuses this first
        raise MetricNameError(f"{metric} needs the ranks of pooled unjudged items")
    level = int(metric.param("rel"))
    judged = x.grades >= 0
    pqi, prank = x.pooled
    qi = np.concatenate([x.query_index[judged], pqi])
    rank = np.concatenate([x.ranks[judged], prank])
    grade = np.concatenate([x.grades[judged], np.full(prank.size, -1.0)])
    order = np.lexsort((rank, qi))
    qi, rank, grade = qi[order], rank[order], grade[order]
    starts = _segment_starts(qi, x.n)[qi]
    relevant = grade >= level
    rel = _exclusive_count(relevant, starts).astype(np.float64)
    non = _exclusive_count((grade >= 0) & ~relevant, starts).astype(np.float64)
    pool = (np.arange(qi.size) - starts).astype(np.float64)  # every entry is in the pool
    k = rank.astype(np.float64)
    share = (rel + INFAP_EPSILON) / (rel + non + 2.0 * INFAP_EPSILON)
    expected = 1.0 / k + (pool / k) * share
    total = np.bincount(qi[relevant], weights=expected[relevant], minlength=x.n)
    n_rel = np.bincount(x.ideal_query_index[x.ideal_grades >= level], minlength=x.n)
    out = np.zeros(x.n, dtype=np.float64)
    np.divide(total, n_rel, out=out, where=n_rel > 0)
    return out


def _needs_subtopics(metric: Metric, x: RankInputs) -> FloatArray:
    """alpha_ndcg cannot come from ordinary qrels: one grade per document has no subtopics."""
    raise InputError(
        f"{metric} needs subtopic qrels (qid subtopic docid grade, the TREC Web track "
        "diversity format), not ordinary qrels: use ragmeter.metrics.compute_diversity "
        "or ragmeter metrics --subtopic-qrels"
    )


_COMPUTE: dict[str, Callable[[Metric, RankInputs], FloatArray]] = {
    "err": _err,
    "rbp_resid": _rbp_resid,
    "infap": _infap,
    "alpha_ndcg": _needs_subtopics,
}


def handles(name: str) -> bool:
    """Whether this module computes the family ``name``.

    >>> handles("err"), handles("rbp_resid"), handles("ndcg")
    (True, True, False)
    """
    return name in _COMPUTE


def compute(metric: Metric, inputs: RankInputs) -> FloatArray:
    """One value per query of ``metric``, a family this module computes.

    >>> from ragmeter.metrics._base import metric
    >>> x = RankInputs(1, np.array([0]), np.array([2]), np.array([1.0]), np.array([0]),
    ...                np.array([1.0]), None, None)
    >>> compute(metric("err", 10, max_grade=1), x).tolist()  # R = 1/2 at rank 2
    [0.25]
    """
    found = _COMPUTE.get(metric.name)
    if found is None:
        raise MetricNameError(f"no engine code for metric {metric}")
    return found(metric, inputs)
