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
    level: Literal["doc", "passage", "chunk"]
    status: RunStatus
    note: str = ""
    commit: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    metrics: Mapping[str, float] = field(default_factory=dict)
    n_questions: int = 0
    n_errors: int = 0

    @property
    def warnings(self) -> list[str]:
        """What the run had to warn about, stored with it (``config["warnings"]``).

        >>> RunInfo(1, "a", "", "h", "bm25", 10, "doc", "complete",
        ...         config={"warnings": ["2 document(s) … not in the corpus"]}).warnings
        ['2 document(s) … not in the corpus']
        """
        return [str(w) for w in self.config.get("warnings") or ()]

    def to_dict(self, *, metrics: bool = False) -> dict[str, Any]:
        """The run's record as a JSON-able dict (``config`` left out; ``metrics`` on request).

        ``warnings`` lists what the run warned about (empty when nothing).

        >>> RunInfo(1, "base", "2026-01-01T00:00:00Z", "ab12", "bm25", 10, "doc", "complete").to_dict()["name"]
        'base'
        """
        out: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "note": self.note,
            "created": self.created,
            "commit": self.commit,
            "retriever": self.retriever,
            "k": self.k,
            "level": self.level,
            "status": self.status,
            "gold_hash": self.gold_hash,
            "n_questions": self.n_questions,
            "n_errors": self.n_errors,
            "warnings": self.warnings,
        }
        if metrics:
            out["metrics"] = dict(self.metrics)
        return out
