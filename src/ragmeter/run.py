"""What a run is made of: its record and one row per question.

These plain values travel between ``evaluate()``, the store and the reports;
they carry no behaviour of their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ragmeter.documents import Hit

__all__ = ["QuestionResult", "RunInfo", "RunStatus"]

RunStatus = Literal["running", "interrupted", "complete", "failed"]


@dataclass(frozen=True, slots=True)
class QuestionResult:
    """One question's outcome in a run.

    ``hits`` is the ranking exactly as the retriever returned it (chunks, in
    rank order); ``error`` is set, and ``hits`` empty, when retrieval failed.
    ``latency_ms`` is measured around the retriever call only.
    """

    item_id: str
    hits: tuple[Hit, ...] = ()
    latency_ms: float | None = None
    error: str | None = None
    answer: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RunInfo:
    """The record of one run, as the store keeps it."""

    id: int
    name: str
    created: str  # ISO 8601, UTC
    gold_hash: str
    retriever: str
    k: int
    level: Literal["doc", "chunk"]
    status: RunStatus
    note: str = ""
    commit: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    metrics: Mapping[str, float] = field(default_factory=dict)
    n_questions: int = 0
    n_errors: int = 0
