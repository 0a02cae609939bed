"""Latency percentiles of retrieval over a run, in milliseconds.

Computed by ``evaluate()`` from measured timings, not from qrels and a run.
"""

from __future__ import annotations

from ragmeter.metrics._base import Family, register

LATENCY_P50 = register(
    Family(
        name="latency_p50_ms",
        kind="latency",
        cutoff="none",
        summary="Median retrieval latency over the questions of a run, in milliseconds.",
        formula="latency_p50_ms = percentile(latencies_ms, 50)",
        citation="ragmeter",
        percentile=50.0,
        lower_is_better=True,
    )
)

LATENCY_P95 = register(
    Family(
        name="latency_p95_ms",
        kind="latency",
        cutoff="none",
        summary="95th percentile retrieval latency over a run, in milliseconds.",
        formula="latency_p95_ms = percentile(latencies_ms, 95)",
        citation="ragmeter",
        percentile=95.0,
        lower_is_better=True,
    )
)
