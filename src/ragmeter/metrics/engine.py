"""The code that computes ranking metrics: numpy arrays in, numpy arrays out.

Two entry points, both exact with respect to trec_eval (see ``tests/metrics/test_metrics_agreement.py``):

* :func:`compute_from_matrix` takes a dense ``grades[n_queries, depth]`` matrix, where
  ``grades[i, r]`` is the judged grade of the item at rank ``r + 1`` of query ``i``
  (0 for non-relevant, unjudged or padding).
* :func:`compute_from_ranks` takes only what the metrics depend on: the rank and
  grade of each *relevant* item that was retrieved, in flat (CSR-like) arrays. Every
  supported metric is a function of these ranks, ``R`` and the ideal grades, so a
  ranking of 1,000 documents with one relevant one costs one entry, not 1,000.
  :func:`ragmeter.metrics.compute_metrics` builds this form straight from dicts.

Grades <= 0 are non-relevant and add no gain; "relevant" means grade >= ``rel``
(1 unless the metric says ``rel=``; trec_eval's ``-l``). A negative grade means
"in the pool but unjudged", as in trec_eval (it matters to ``judged@k`` and ``bpref``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from ragmeter.errors import MetricNameError
from ragmeter.metrics import _measures
from ragmeter.metrics._base import Metric, gain_map
from ragmeter.metrics._names import parse_metrics

__all__ = ["compute_from_matrix", "compute_from_ranks", "needs", "ranking_metrics"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

METRIC_CACHE_SIZE = 4096  # metrics whose parameters are remembered (a few bytes each)


def ranking_metrics(metrics: Iterable[str | Metric] | str | Metric) -> list[Metric]:
    """Parse metric names (list spellings expanded), drop repeats, refuse non-ranking ones.

    >>> [str(m) for m in ranking_metrics(["nDCG@10", "ndcg_cut_10", "RR"])]
    ['ndcg@10', 'mrr']
    """
    parsed = parse_metrics(metrics)
    for metric in parsed:
        if metric.kind != "ranking":
            raise MetricNameError(
                f"{metric} is computed by evaluate(), not from qrels and a run "
                f"(it is a {metric.kind} metric)"
            )
    return parsed


def needs(metrics: Iterable[Metric]) -> set[str]:
    """What beyond the relevant items' ranks the metrics need: ``judged``, ``retrieved``,
    ``pooled`` (the ranks of pooled but unjudged items, negative grades: infAP).

    >>> sorted(needs([Metric("bpref"), Metric("num_ret"), Metric("ndcg", 10)]))
    ['judged', 'retrieved']
    """
    out: set[str] = set()
    for metric in metrics:
        out.add(str(metric.family.needs))
        if _options(metric)[0]:
            out.add("judged")
    out.discard("relevant")
    if "pooled" in out:
        out.add("judged")  # infAP also counts the judged non-relevant items above
    if "judged" in out:
        out.add("retrieved")  # judged@k and bpref also read the ranking's length
    return out


@lru_cache(maxsize=METRIC_CACHE_SIZE)
def _options(metric: Metric) -> tuple[bool, int]:
    """(judged_only, relevance level) of a metric, looked up once per metric value."""
    judged_only = bool(metric.family.param("judged_only")) and (
        metric.param("judged_only") == "true"
    )
    level = int(metric.param("rel")) if metric.family.param("rel") else 1
    return judged_only, level


@lru_cache(maxsize=METRIC_CACHE_SIZE)
def _gain_options(metric: Metric) -> tuple[tuple[tuple[int, float], ...], bool]:
    """(custom gain per grade, exponential gain?) of a DCG metric, looked up once."""
    custom = metric.param("gains")
    table = tuple(gain_map(custom).items()) if custom else ()
    return table, metric.param("dcg") == "exp-log2"


def _cutoff(metric: Metric) -> int:
    """The cutoff of a family whose cutoff is required (Metric() enforces that)."""
    if metric.k is None:  # pragma: no cover - Metric.__post_init__ rejects this
        raise MetricNameError(f"metric {metric} needs a cutoff")
    return metric.k


def _segment_starts(query_index: IntArray, n_queries: int) -> IntArray:
    """Index of the first entry of each query in a query-sorted flat array."""
    counts = np.bincount(query_index, minlength=n_queries)
    starts = np.zeros(n_queries, dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    return starts


def _sum_by_query(
    query_index: IntArray, n_queries: int, weights: FloatArray | None = None
) -> FloatArray:
    """Per-query count (or sum of ``weights``) of flat entries, as float64."""
    return np.asarray(
        np.bincount(query_index, weights=weights, minlength=n_queries), dtype=np.float64
    )


def _safe_divide(numerator: FloatArray, denominator: npt.NDArray[Any]) -> FloatArray:
    """numerator / denominator, 0 where the denominator is 0 (never NaN)."""
    out = np.zeros(numerator.shape, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


class _Binary:
    """The relevant items at one relevance level: their ranks, cached counts and sums."""

    def __init__(self, n: int, qi: IntArray, rank: IntArray, n_rel: npt.NDArray[Any]) -> None:
        self.n, self.qi, self.rank, self.n_rel = n, qi, rank, n_rel
        self._cache: dict[object, FloatArray] = {}

    def count_at(self, k: int | None) -> FloatArray:
        key = ("count", k)
        if key not in self._cache:
            qi = self.qi if k is None else self.qi[self.rank <= k]
            self._cache[key] = _sum_by_query(qi, self.n)
        return self._cache[key]

    def first_rank(self) -> FloatArray:
        if "first" not in self._cache:
            # Entries are sorted by (query, rank): a query's first entry is its best rank.
            first = np.full(self.n, np.inf)
            if self.qi.size:
                head = np.ones(self.qi.size, dtype=bool)
                head[1:] = self.qi[1:] != self.qi[:-1]
                first[self.qi[head]] = self.rank[head]
            self._cache["first"] = first
        return self._cache["first"]

    def position(self) -> FloatArray:
        """Each entry's 1-based position among its query's relevant retrieved items."""
        if "position" not in self._cache:
            starts = _segment_starts(self.qi, self.n)
            self._cache["position"] = (np.arange(self.qi.size) - starts[self.qi] + 1).astype(
                np.float64
            )
        return self._cache["position"]

    def precision_sum(self, k: int | None) -> FloatArray:
        # precision at the rank of each relevant item = its position / its rank
        prec = self.position() / self.rank
        if k is None:
            return _sum_by_query(self.qi, self.n, prec)
        mask = self.rank <= k
        return _sum_by_query(self.qi[mask], self.n, prec[mask])


def _gain_of(metric: Metric, grades: FloatArray) -> FloatArray:
    """The gain of each (positive) grade under the metric's ``dcg``/``gains`` parameters."""
    table, exponential = _gain_options(metric)
    if table:
        out = grades.copy()
        for grade, gain in table:
            out[grades == grade] = gain
    else:
        out = grades.astype(np.float64, copy=True)
    if exponential:
        out = np.exp2(out) - 1.0
    return np.where(grades > 0, out, 0.0)


def compute_from_ranks(
    n_queries: int,
    query_index: npt.ArrayLike,
    ranks: npt.ArrayLike,
    gains: npt.ArrayLike,
    n_relevant: npt.ArrayLike,
    ideal_query_index: npt.ArrayLike,
    ideal_gains: npt.ArrayLike,
    metrics: Iterable[str | Metric],
    *,
    n_retrieved: npt.ArrayLike | None = None,
    n_judged: npt.ArrayLike | None = None,
    pooled_query_index: npt.ArrayLike | None = None,
    pooled_ranks: npt.ArrayLike | None = None,
) -> dict[str, FloatArray]:
    """Compute ranking metrics from the ranks of the retrieved judged items.

    * ``query_index[j]``, ``ranks[j]`` (1-based), ``gains[j]``: one entry per relevant
      item (grade >= 1) that was retrieved, sorted by query index, then by rank. When
      ``n_judged`` is given the entries also hold every retrieved item judged with grade
      0 (``judged@k``, ``bpref`` need them).
    * ``n_relevant[i]``: R, the number of relevant items (grade >= 1) judged for query i.
    * ``ideal_query_index``, ``ideal_gains``: the positive grades judged for each query,
      sorted by query index, then grade descending (they build the ideal DCG and R at
      other relevance levels).
    * ``n_retrieved[i]``: the ranking's length (``num_ret``, ``judged@k``, ``bpref``).
    * ``n_judged[i]``: the number of items judged with grade >= 0 (``judged@k``, ``bpref``).
    * ``pooled_query_index``, ``pooled_ranks``: each retrieved item whose qrels grade is
      negative (in the pool, not judged), sorted like the entries (``infap``).

    Returns ``{canonical metric name: float64 array of n_queries values}``.

    >>> out = compute_from_ranks(2, [0], [2], [1], [1, 1], [0, 1], [1, 1], ["mrr", "hit@1"])
    >>> out["mrr"].tolist(), out["hit@1"].tolist()
    ([0.5, 0.0], [0.0, 0.0])
    """
    wanted = ranking_metrics(metrics)
    qi = np.asarray(query_index, dtype=np.int64)
    rank = np.asarray(ranks, dtype=np.int64)
    grade = np.asarray(gains, dtype=np.float64)
    n_rel = np.asarray(n_relevant, dtype=np.int64)
    iqi = np.asarray(ideal_query_index, dtype=np.int64)
    ideal = np.asarray(ideal_gains, dtype=np.float64)
    n = int(n_queries)
    if not (qi.shape == rank.shape == grade.shape) or n_rel.shape != (n,):
        raise ValueError("query_index, ranks and gains must match; n_relevant needs n_queries")
    wants = needs(wanted)
    pooled = None
    if pooled_query_index is not None and pooled_ranks is not None:
        pooled = (
            np.asarray(pooled_query_index, dtype=np.int64),
            np.asarray(pooled_ranks, dtype=np.int64),
        )
    if "pooled" in wants and pooled is None:
        raise ValueError("infap needs the ranks of pooled unjudged items (negative grades)")
    retrieved = None if n_retrieved is None else np.asarray(n_retrieved, dtype=np.float64)
    judged = None if n_judged is None else np.asarray(n_judged, dtype=np.float64)
    if "retrieved" in wants and (retrieved is None or retrieved.shape != (n,)):
        raise ValueError("num_ret, judged@k and bpref need n_retrieved (one per query)")
    if "judged" in wants and (judged is None or judged.shape != (n,)):
        raise ValueError("judged@k and bpref need n_judged and the ranks of grade-0 items")
    views: dict[int, _Binary] = {}

    def binary(level: int) -> _Binary:
        if level not in views:
            if level == 1 and (judged is None or not np.any(grade < 1)):
                views[level] = _Binary(n, qi, rank, n_rel)
            else:
                mask = grade >= level
                r_at = np.bincount(iqi[ideal >= level], minlength=n).astype(np.int64)
                views[level] = _Binary(n, qi[mask], rank[mask], r_at)
        return views[level]

    def dcg(metric: Metric) -> FloatArray:
        k = metric.k
        mask = grade > 0 if k is None else (grade > 0) & (rank <= k)
        weights = _gain_of(metric, grade[mask]) / np.log2(rank[mask] + 1.0)
        return _sum_by_query(qi[mask], n, weights)

    def ideal_dcg(metric: Metric) -> FloatArray:
        gain = _gain_of(metric, ideal)
        order = np.lexsort((-gain, iqi))  # best gain first within each query
        sorted_q, sorted_gain = iqi[order], gain[order]
        position = (np.arange(sorted_q.size) - _segment_starts(sorted_q, n)[sorted_q]).astype(
            np.float64
        )
        weights = sorted_gain / np.log2(position + 2.0)
        if metric.k is None:
            return _sum_by_query(sorted_q, n, weights)
        keep = position < metric.k
        return _sum_by_query(sorted_q[keep], n, weights[keep])

    results: dict[str, FloatArray] = {}
    for metric in wanted:
        judged_only, level = _options(metric)
        if judged_only:
            results[str(metric)] = _judged_only(
                metric, n, qi, rank, grade, n_rel, iqi, ideal, np.asarray(judged)
            )
            continue
        k = metric.k
        name = metric.name
        view = binary(level)
        if name == "hit":
            value = (view.count_at(_cutoff(metric)) > 0).astype(np.float64)
        elif name == "precision":
            value = view.count_at(_cutoff(metric)) / _cutoff(metric)
        elif name == "recall":
            value = _safe_divide(view.count_at(_cutoff(metric)), view.n_rel)
        elif name == "f1":
            hits = view.count_at(_cutoff(metric))
            value = _safe_divide(2.0 * hits, _cutoff(metric) + view.n_rel.astype(np.float64))
        elif name == "rprec":
            mask = view.rank <= view.n_rel[view.qi]
            value = _safe_divide(_sum_by_query(view.qi[mask], n), view.n_rel)
        elif name == "mrr":
            best = view.first_rank()
            value = np.where(best <= (np.inf if k is None else k), 1.0 / best, 0.0)
        elif name == "map":
            value = _safe_divide(view.precision_sum(k), view.n_rel)
        elif name == "ndcg":
            value = _safe_divide(dcg(metric), ideal_dcg(metric))
        elif name == "dcg":
            value = dcg(metric)
        elif name == "rbp":
            p = float(metric.param("p"))
            discount = np.power(p, view.rank - 1.0, dtype=np.float64)
            if metric.param("gain") == "grade":
                discount = discount * grade[grade >= level]
            value = (1.0 - p) * _sum_by_query(view.qi, n, discount)
        elif name == "num_rel":
            value = view.n_rel.astype(np.float64)
        elif name == "num_rel_ret":
            value = view.count_at(k)
        elif name == "num_ret":
            value = np.asarray(retrieved, dtype=np.float64)
        elif name == "judged":
            cut = _cutoff(metric)
            value = _sum_by_query(qi[rank <= cut], n) / cut
        elif name == "bpref":
            value = _bpref(n, qi, rank, grade, level, view.n_rel, np.asarray(judged))
        else:  # families added after the core engine (err, rbp_resid, infap): _measures.py
            value = _measures.compute(
                metric,
                _measures.RankInputs(n, qi, rank, grade, iqi, ideal, retrieved, judged, pooled),
            )
        results[str(metric)] = value.astype(np.float64, copy=False)
    return results


def _judged_only(
    metric: Metric,
    n: int,
    qi: IntArray,
    rank: IntArray,
    grade: FloatArray,
    n_rel: npt.NDArray[Any],
    iqi: IntArray,
    ideal: FloatArray,
    n_judged: FloatArray,
) -> FloatArray:
    """``metric`` on rankings without their unjudged items (trec_eval -J).

    The entries hold every retrieved judged item, so an item's rank among judged items
    is its position among its query's entries, and the ranking's length their count.
    """
    position = np.arange(qi.size, dtype=np.int64) - _segment_starts(qi, n)[qi] + 1
    plain = Metric(metric.name, metric.k, tuple(p for p in metric.params if p[0] != "judged_only"))
    values = compute_from_ranks(
        n,
        qi,
        position,
        grade,
        n_rel,
        iqi,
        ideal,
        [plain],
        n_retrieved=np.bincount(qi, minlength=n).astype(np.float64),
        n_judged=n_judged,
    )
    return values[str(plain)]


def _bpref(
    n: int,
    qi: IntArray,
    rank: IntArray,
    grade: FloatArray,
    level: int,
    n_rel: npt.NDArray[Any],
    n_judged: FloatArray,
) -> FloatArray:
    """trec_eval's bpref (m_bpref.c) from the ranks of every retrieved judged item."""
    relevant = grade >= level
    # judged non-relevant items above each entry: a running count within its query
    nonrel = (~relevant).astype(np.int64)
    running = np.cumsum(nonrel)
    starts = _segment_starts(qi, n)
    before = running - nonrel - np.where(starts[qi] > 0, running[starts[qi] - 1], 0)
    r = n_rel[qi[relevant]].astype(np.float64)
    n_nonrel = (n_judged - n_rel)[qi[relevant]]
    above = before[relevant].astype(np.float64)
    term = np.ones(above.shape)
    some = above > 0
    term[some] = 1.0 - np.minimum(above[some], r[some]) / np.minimum(n_nonrel[some], r[some])
    return _safe_divide(_sum_by_query(qi[relevant], n, term), n_rel)


def compute_from_matrix(
    grades: npt.ArrayLike,
    n_relevant: npt.ArrayLike,
    ideal_gains: npt.ArrayLike,
    metrics: Sequence[str | Metric],
) -> dict[str, FloatArray]:
    """Compute ranking metrics from a dense matrix of grades in rank order.

    * ``grades[i, r]``: judged grade of the item at rank ``r + 1`` of query ``i``; 0 for a
      non-relevant or unjudged item or for padding when fewer items were retrieved.
    * ``n_relevant[i]``: R, the number of relevant items judged for query ``i``.
    * ``ideal_gains[i, :]``: the query's judged grades sorted descending (0-padded); the
      ideal DCG is built from these, so relevant items that were not retrieved count.

    Returns ``{canonical metric name: float64 array of n_queries values}``.

    >>> import numpy as np
    >>> out = compute_from_matrix(np.array([[0, 2, 1]]), [2], np.array([[2, 1]]), ["map", "P@2"])
    >>> round(float(out["map"][0]), 4), float(out["precision@2"][0])
    (0.5833, 0.5)
    """
    matrix = np.asarray(grades)
    # Sorting is cheap (few judged items per query) and makes an unsorted row safe.
    ideal = -np.sort(-np.asarray(ideal_gains), axis=1)
    if matrix.ndim != 2 or ideal.ndim != 2 or matrix.shape[0] != ideal.shape[0]:
        raise ValueError("grades and ideal_gains must be 2-D with one row per query")
    # np.nonzero walks row-major, so entries come out sorted by (query, rank).
    rows, cols = np.nonzero(matrix > 0)
    irows, icols = np.nonzero(ideal > 0)
    return compute_from_ranks(
        matrix.shape[0],
        rows,
        cols + 1,
        matrix[rows, cols],
        n_relevant,
        irows,
        ideal[irows, icols],
        metrics,
    )
