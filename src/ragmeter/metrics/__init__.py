"""Retrieval metrics: names (``parse_metric``), definitions, and an exact, fast engine.

>>> from ragmeter.metrics import compute_metrics, parse_metric
>>> str(parse_metric("nDCG@10"))
'ndcg@10'
>>> compute_metrics({"q1": {"d1": 1}}, {"q1": {"d1": 0.3, "d2": 0.9}}, ["mrr"]).means
{'mrr': 0.5}

Importing this package imports numpy and nothing else heavy.
"""

from __future__ import annotations

# Each family module registers its definition on import (families() fixes the order).
from ragmeter.metrics import (  # noqa: F401
    alpha_ndcg,
    answer,
    ap,
    bpref,
    claims,
    counts,
    dcg,
    err,
    f1,
    generation,
    hit,
    infap,
    judged,
    latency,
    ndcg,
    precision,
    rbp,
    recall,
    rprec,
    rr,
)
from ragmeter.metrics._base import Family, Metric, Param, families, metric, register
from ragmeter.metrics._names import TREC_CUTOFFS, lower_is_better, parse_metric, parse_metrics
from ragmeter.metrics.compute import MetricsResult, compute_metrics
from ragmeter.metrics.diversity import compute_diversity
from ragmeter.metrics.engine import compute_from_matrix, compute_from_ranks, ranking_metrics

__all__ = [
    "TREC_CUTOFFS",
    "Family",
    "Metric",
    "MetricsResult",
    "Param",
    "compute_from_matrix",
    "compute_diversity",
    "compute_from_ranks",
    "compute_metrics",
    "families",
    "lower_is_better",
    "metric",
    "parse_metric",
    "parse_metrics",
    "ranking_metrics",
    "register",
]
