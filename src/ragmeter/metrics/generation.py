"""Generation-side metrics: ``answer_ok`` and ``faithful``.

They judge the answer, not the ranking, and are computed by ``evaluate()`` (``answer_ok``,
kind ``generation``) and the judge (``faithful``, kind ``judge``), not from qrels and a run.
"""

from __future__ import annotations

from ragmeter.metrics._base import Family, register

ANSWER_OK = register(
    Family(
        name="answer_ok",
        kind="generation",
        cutoff="none",
        summary="1 if the answer passes every `answer_contains` check of its question.",
        formula="answer_ok = 1 if all(s in answer for s in answer_contains) (case-insensitive)",
        citation="ragmeter",
    )
)

FAITHFUL = register(
    Family(
        name="faithful",
        kind="judge",
        cutoff="none",
        summary="1 if the judge finds every claim of the answer supported by the context.",
        formula="faithful = 1 if judge.unsupported_claims == []",
        citation="ragmeter judge (faithfulness prompt)",
    )
)
