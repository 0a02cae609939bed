"""``answer_in_context@k``: was the answer retrievable at all?

A label-free check computed by ``evaluate()`` from the retrieved text, not from
qrels and a run, so :func:`~ragmeter.metrics.compute_metrics` refuses it.
"""

from __future__ import annotations

from ragmeter.metrics._base import Family, register

ANSWER_IN_CONTEXT = register(
    Family(
        name="answer_in_context",
        kind="answer",
        cutoff="required",
        summary=(
            "1 if any top-k chunk contains one of the question's `answer_contains` "
            "strings (case-insensitive), else 0. Computed by evaluate()."
        ),
        formula="answer_in_context@k = 1 if any(s in chunk_r for r <= k, s in answer_contains)",
        citation="ragmeter (label-free retrievability check)",
    )
)
