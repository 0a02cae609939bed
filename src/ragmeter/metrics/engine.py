"""The code that computes ranking metrics: numpy arrays in, numpy arrays out.

Two entry points, both exact with respect to trec_eval (see ``tests/test_metrics_agreement.py``):

* :func:`compute_from_matrix` takes a dense ``grades[n_queries, depth]`` matrix, where
  ``grades[i, r]`` is the judged grade of the item at rank ``r + 1`` of query ``i``
  (0 for non-relevant, unjudged or padding).
* :func:`compute_from_ranks` takes only what the metrics depend on: the rank and
  grade of each *relevant* item that was retrieved, in flat (CSR-like) arrays. Every
  supported metric is a function of these ranks, ``R`` and the ideal grades, so a
  ranking of 1,000 documents with one relevant one costs one entry, not 1,000.
  :func:`ragmeter.metrics.compute_metrics` builds this form straight from dicts.

Grades <= 0 are non-relevant and add no gain; "relevant" means grade >= 1
(trec_eval's default relevance level).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ragmeter.errors import MetricNameError
from ragmeter.metrics._base import Metric, parse_metric

__all__ = ["compute_from_matrix", "compute_from_ranks", "ranking_metrics"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def ranking_metrics(metrics: Iterable[str | Metric]) -> list[Metric]:
    """Parse metric names, drop repeats, and refuse metrics that need more than a ranking.

    >>> [str(m) for m in ranking_metrics(["nDCG@10", "ndcg_cut_10", "RR"])]
    ['ndcg@10', 'mrr']
    """
    if isinstance(metrics, str | Metric):
        metrics = [metrics]
    parsed = list(dict.fromkeys(parse_metric(m) for m in metrics))
    for metric in parsed:
        if metric.kind != "ranking":
            raise MetricNameError(
                f"{metric} is computed by evaluate(), not from qrels and a run "
                f"(it is a {metric.kind} metric)"
            )
    return parsed


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


def compute_from_ranks(
    n_queries: int,
    query_index: npt.ArrayLike,
    ranks: npt.ArrayLike,
    gains: npt.ArrayLike,
    n_relevant: npt.ArrayLike,
    ideal_query_index: npt.ArrayLike,
    ideal_gains: npt.ArrayLike,
    metrics: Iterable[str | Metric],
) -> dict[str, FloatArray]:
    """Compute ranking metrics from the ranks of the retrieved relevant items.

    * ``query_index[j]``, ``ranks[j]`` (1-based), ``gains[j]`` (> 0): one entry per
      relevant item that was retrieved, sorted by query index, then by rank.
    * ``n_relevant[i]``: R, the number of relevant items (grade >= 1) judged for query i.
    * ``ideal_query_index``, ``ideal_gains``: the positive grades judged for each query,
      sorted by query index, then grade descending (they build the ideal DCG).

    Returns ``{canonical metric name: float64 array of n_queries values}``.

    >>> out = compute_from_ranks(2, [0], [2], [1], [1, 1], [0, 1], [1, 1], ["mrr", "hit@1"])
    >>> out["mrr"].tolist(), out["hit@1"].tolist()
    ([0.5, 0.0], [0.0, 0.0])
    """
    wanted = ranking_metrics(metrics)
    qi = np.asarray(query_index, dtype=np.int64)
    rank = np.asarray(ranks, dtype=np.int64)
    gain = np.asarray(gains, dtype=np.float64)
    n_rel = np.asarray(n_relevant, dtype=np.int64)
    n = int(n_queries)
    if not (qi.shape == rank.shape == gain.shape) or n_rel.shape != (n,):
        raise ValueError("query_index, ranks and gains must match; n_relevant needs n_queries")
    cache: dict[str, FloatArray] = {}

    def count_at(k: int) -> FloatArray:
        key = f"count@{k}"
        if key not in cache:
            cache[key] = _sum_by_query(qi[rank <= k], n)
        return cache[key]

    def first_rank() -> FloatArray:
        if "first" not in cache:
            # Entries are sorted by (query, rank): a query's first entry is its best rank.
            first = np.full(n, np.inf)
            if qi.size:
                head = np.ones(qi.size, dtype=bool)
                head[1:] = qi[1:] != qi[:-1]
                first[qi[head]] = rank[head]
            cache["first"] = first
        return cache["first"]

    def precision_sum(k: int | None) -> FloatArray:
        # precision at the rank of each relevant item = (its position among the
        # query's retrieved relevant items) / rank
        if "position" not in cache:
            starts = _segment_starts(qi, n)
            cache["position"] = (np.arange(qi.size) - starts[qi] + 1).astype(np.float64)
        prec = cache["position"] / rank
        if k is None:
            return _sum_by_query(qi, n, prec)
        mask = rank <= k
        return _sum_by_query(qi[mask], n, prec[mask])

    def ideal_dcg(k: int | None) -> FloatArray:
        iqi = np.asarray(ideal_query_index, dtype=np.int64)
        ig = np.asarray(ideal_gains, dtype=np.float64)
        if "ideal_position" not in cache:
            starts = _segment_starts(iqi, n)
            cache["ideal_position"] = (np.arange(iqi.size) - starts[iqi]).astype(np.float64)
        pos = cache["ideal_position"]
        weights = ig / np.log2(pos + 2.0)
        if k is None:
            return _sum_by_query(iqi, n, weights)
        mask = pos < k
        return _sum_by_query(iqi[mask], n, weights[mask])

    results: dict[str, FloatArray] = {}
    for metric in wanted:
        k = metric.k
        name = metric.name
        if name == "hit":
            value = (count_at(_cutoff(metric)) > 0).astype(np.float64)
        elif name == "precision":
            value = count_at(_cutoff(metric)) / _cutoff(metric)
        elif name == "recall":
            value = _safe_divide(count_at(_cutoff(metric)), n_rel)
        elif name == "rprec":
            mask = rank <= n_rel[qi]
            value = _safe_divide(_sum_by_query(qi[mask], n), n_rel)
        elif name == "mrr":
            best = first_rank()
            value = np.where(best <= (np.inf if k is None else k), 1.0 / best, 0.0)
        elif name == "map":
            value = _safe_divide(precision_sum(k), n_rel)
        elif name == "ndcg":
            weights = gain / np.log2(rank + 1.0)
            if k is None:
                dcg = _sum_by_query(qi, n, weights)
            else:
                mask = rank <= k
                dcg = _sum_by_query(qi[mask], n, weights[mask])
            value = _safe_divide(dcg, ideal_dcg(k))
        else:  # pragma: no cover - every ranking family is handled above
            raise MetricNameError(f"no engine code for metric {metric}")
        results[str(metric)] = value.astype(np.float64, copy=False)
    return results


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
