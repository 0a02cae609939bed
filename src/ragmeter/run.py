"""What a run is made of: its record and one row per question.

These plain values travel between ``evaluate()``, the store and the reports;
they carry no behaviour of their own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ragmeter.documents import Hit

__all__ = ["QuestionResult", "QuestionValues", "RunInfo", "RunStatus"]

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


class QuestionValues(Mapping[str, dict[str, float]]):
    """Per-question metric values, metric -> item id -> value, as a run's scoring gives
    them (``Scores.per_query``, ``RunReport.per_query``).

    Metrics scored together are kept as columns: their item ids (one list, shared) and each
    metric's values (a float64 array); a metric's dict is built when it is first read. The
    store writes a column as it is, so ``evaluate()`` of 100,000 questions builds no dict
    per metric that nobody reads (issue 29.2).

    >>> values = QuestionValues()
    >>> values.add_columns(["q1", "q2"], {"mrr": [1.0, 0.5]})
    >>> values.add("faithful", {"q1": 1.0})
    >>> values["mrr"], list(values), values.column("mrr"), values.column("faithful")
    ({'q1': 1.0, 'q2': 0.5}, ['mrr', 'faithful'], None, None)
    """

    def __init__(self) -> None:
        # metric -> its dict, or (item ids, values: anything with tolist()) until read
        self._entries: dict[str, Any] = {}

    def add_columns(self, ids: list[str], columns: Mapping[str, Any]) -> None:
        """Add metrics whose values are aligned with ``ids`` (arrays or lists)."""
        for metric, values in columns.items():
            self._entries[metric] = (ids, values)

    def add(self, metric: str, values: dict[str, float]) -> None:
        """Add (or replace) one metric's values as a dict."""
        self._entries[metric] = values

    def merge(self, other: Mapping[str, dict[str, float]]) -> None:
        """Add every metric of ``other``, columns left unbuilt."""
        if isinstance(other, QuestionValues):
            self._entries.update(other._entries)
        else:
            self._entries.update(other)

    def only(self, metrics: Iterable[str]) -> QuestionValues:
        """These values of ``metrics`` (those it has), in that order, columns left unbuilt."""
        out = QuestionValues()
        entries = self._entries
        out._entries = {m: entries[m] for m in metrics if m in entries}
        return out

    def column(self, metric: str) -> tuple[list[str], Any] | None:
        """``(item ids, values)`` of a metric not read as a dict yet, else None."""
        entry = self._entries[metric]
        return entry if type(entry) is tuple else None

    def __getitem__(self, metric: str) -> dict[str, float]:
        entry = self._entries[metric]
        if type(entry) is tuple:
            ids, values = entry
            listed = values if type(values) is list else values.tolist()
            entry = self._entries[metric] = dict(zip(ids, listed, strict=True))
        return entry  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, metric: object) -> bool:
        return metric in self._entries

    def __repr__(self) -> str:
        return repr(dict(self.items()))
