"""A stored run as rows: one JSON-able dict per question, and the same row flattened.

The one place a report becomes rows, shared by ``ragmeter export`` and
:meth:`RunReport.to_pandas <ragmeter.evaluation.report.RunReport.to_pandas>`, so every
output shows the same columns.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

__all__ = ["BASE_COLUMNS", "export_rows", "finite", "flat_row", "metric_columns"]

#: The columns every flat export starts with, in this order; metric columns follow.
BASE_COLUMNS = (
    "id",
    "question",
    "tags",
    "expected_docs",
    "first_relevant_rank",
    "hit",
    "latency_ms",
    "error",
    "answer",
    "answer_ok",
    "faithful",
    "unsupported_claims",
    "blame",
    "retrieved_ids",
    "retrieved_docs",
    "retrieved_scores",
    "retrieved_grades",
)


class _Row(Protocol):
    """What a row of a report holds (``report.QuestionRow``); a protocol, so ``report`` can
    call this module without an import circle."""

    @property
    def id(self) -> str: ...
    @property
    def question(self) -> str: ...
    @property
    def tags(self) -> list[str]: ...
    @property
    def expected(self) -> list[str]: ...
    @property
    def retrieved(self) -> list[dict[str, Any]]: ...
    @property
    def first_relevant_rank(self) -> int | None: ...
    @property
    def hit(self) -> bool: ...
    @property
    def latency_ms(self) -> float | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def answer(self) -> str | None: ...
    @property
    def answer_ok(self) -> bool | None: ...
    @property
    def faithful(self) -> bool | None: ...
    @property
    def blame(self) -> str | None: ...
    @property
    def generation_error(self) -> str | None: ...
    @property
    def judge(self) -> dict[str, Any] | None: ...


class _Report(Protocol):
    """What :func:`export_rows` reads of a ``report.RunReport``."""

    @property
    def rows(self) -> Sequence[_Row]: ...
    def question_metrics(self, item_id: str) -> dict[str, float]: ...


def finite(value: float | None) -> float | None:
    """``value`` when it is a finite number, else None (JSON has no NaN)."""
    return value if value is not None and math.isfinite(value) else None


def export_rows(report: _Report) -> list[dict[str, Any]]:
    """One JSON-able dict per question: metrics, ranking with text, answer, verdict, blame.

    The per-question metric values are those stored with the run (``show`` prints the same).
    """
    rows: list[dict[str, Any]] = []
    for row in report.rows:
        verdict = row.judge or {}
        ranking = [
            {
                "rank": hit["rank"],
                "id": hit["id"],
                "doc": hit["doc"],
                "score": finite(hit["score"]),
                "grade": hit["grade"],
                # The text stored with the run, cut at HIT_TEXT_MAX_CHARS (issue 15.1).
                "text": hit.get("text") or "",
                "text_cut": bool(hit.get("text_cut")),
            }
            for hit in row.retrieved
        ]
        rows.append(
            {
                "id": row.id,
                "question": row.question,
                "tags": list(row.tags),
                "expected_docs": list(row.expected),
                "metrics": report.question_metrics(row.id),
                "first_relevant_rank": row.first_relevant_rank,
                "hit": row.hit,
                "latency_ms": row.latency_ms,
                "error": row.error,
                "ranking": ranking,
                "answer": row.answer,
                "answer_ok": row.answer_ok,
                "faithful": row.faithful,
                "unsupported_claims": list(verdict.get("unsupported_claims") or []),
                "judge_reason": verdict.get("reason"),
                "blame": row.blame,
                "generation_error": row.generation_error,
            }
        )
    return rows


def metric_columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every metric name that appears in ``rows``, in first-seen order."""
    return list(dict.fromkeys(name for row in rows for name in row["metrics"]))


def flat_row(row: Mapping[str, Any], metric_columns: Sequence[str]) -> dict[str, Any]:
    """One row of :func:`export_rows` as flat columns (lists stay lists)."""
    ranking = row["ranking"]
    out: dict[str, Any] = {
        "id": row["id"],
        "question": row["question"],
        "tags": list(row["tags"]),
        "expected_docs": list(row["expected_docs"]),
        "first_relevant_rank": row["first_relevant_rank"],
        "hit": row["hit"],
        "latency_ms": row["latency_ms"],
        "error": row["error"],
        "answer": row["answer"],
        "answer_ok": row["answer_ok"],
        "faithful": row["faithful"],
        "unsupported_claims": list(row["unsupported_claims"]),
        "blame": row["blame"],
        "retrieved_ids": [h["id"] for h in ranking],
        "retrieved_docs": [h["doc"] for h in ranking],
        "retrieved_scores": [h["score"] for h in ranking],
        "retrieved_grades": [h["grade"] for h in ranking],
    }
    for name in metric_columns:
        out[name] = row["metrics"].get(name)
    return out
