"""The two pages where a person writes: calibration labels and candidate review.

Each decision is written at once through the library: a label to the store, a
review decision to the candidates file (``ragmeter.gold.review.decide``, which rewrites
the file atomically), so closing the browser loses nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragmeter.errors import InputError, LabelStoreMissing
from ragmeter.gold.review import decide, load_candidates, pending

__all__ = ["DecisionIn", "LabelIn", "label_queue", "review_queue", "save_decision", "save_label"]

MAX_TEXT = 20_000


class DecisionIn(BaseModel):
    """A review decision as the page (or a script) posts it."""

    model_config = ConfigDict(extra="forbid")

    item_id: str = Field(min_length=1)
    decision: Literal["accept", "edit", "reject", "skip"]
    question: str | None = Field(default=None, max_length=MAX_TEXT)
    relevant: list[str] | None = None
    answer_contains: list[str] | None = None
    reviewer: str | None = None
    note: str | None = Field(default=None, max_length=MAX_TEXT)


class LabelIn(BaseModel):
    """A person's verdict on one answer: is every claim supported by the context?"""

    model_config = ConfigDict(extra="forbid")

    run: str = Field(min_length=1)
    item_id: str = Field(min_length=1)
    supported: bool


def _no_candidates() -> InputError:
    return InputError(
        "no candidates file: start the dashboard with --candidates FILE "
        "(a file written by ragmeter generate or flywheel export)"
    )


def _item_dict(item: Any) -> dict[str, Any]:
    review = item.metadata.get("review") if isinstance(item.metadata, dict) else None
    return {
        "id": item.id,
        "question": item.question,
        "relevant": [r.model_dump(exclude_none=True) for r in item.relevant],
        "answer_contains": list(item.answer_contains),
        "tags": list(item.tags),
        "source": item.source,
        "status": item.status or "candidate",
        "parent": item.parent,
        "review": review if isinstance(review, dict) else None,
    }


def review_queue(path: Path | None) -> dict[str, Any]:
    """The candidates file's items: pending ones first, then those already decided.

    >>> review_queue(None)["file"] is None
    True
    """
    if path is None:
        return {"file": None, "pending": [], "decided": [], "counts": {}}
    gold = load_candidates(path)
    todo = pending(gold, include_skipped=True)
    todo_ids = {item.id for item in todo}
    decided = [item for item in gold if item.id not in todo_ids]
    counts: dict[str, int] = {}
    for item in gold:
        status = item.status or "candidate"
        counts[status] = counts.get(status, 0) + 1
    return {
        "file": str(path),
        "pending": [_item_dict(item) for item in todo],
        "decided": [_item_dict(item) for item in decided],
        "counts": counts,
    }


def save_decision(path: Path | None, decision: DecisionIn) -> dict[str, Any]:
    """Apply one decision to the candidates file; returns the updated item."""
    if path is None:
        raise _no_candidates()
    item = decide(
        path,
        decision.item_id,
        decision.decision,
        question=decision.question,
        relevant=decision.relevant,
        answer_contains=decision.answer_contains,
        reviewer=decision.reviewer,
        note=decision.note,
    )
    return {"item": _item_dict(item)}


#: How many of the newest runs the label page looks through for answers.
LABEL_SCAN_RUNS = 20
#: Labels of a run's answers form one calibration set in the store, named after the run.
LABEL_SET = "run-{id}"
_NO_LABEL_API = (
    "the store cannot keep calibration labels: it needs Store.save_labels(set_name, labels) "
    "and Store.labels(set_name)"
)


def label_set(run_id: int) -> str:
    """The calibration-set name under which a run's answer labels are stored.

    >>> label_set(7)
    'run-7'
    """
    return LABEL_SET.format(id=run_id)


def _labels_of(store: Any, run_id: int) -> dict[str, dict[str, Any]]:
    reader = getattr(store, "labels", None)
    if reader is None:
        return {}
    stored: dict[str, str] = reader(label_set(run_id))
    return {
        item: {"supported": label == "supported", "label": label} for item, label in stored.items()
    }


def label_queue(store: Any, run: str | None) -> dict[str, Any]:
    """Answers of a run to label — question, retrieved context, answer — and the labels so far.

    Without ``run``, the newest run that has answers. The context is what the store
    keeps of each retrieved chunk (its id and the first words of the top hits).
    """
    from ragmeter.web.views import run_view

    if run is not None:
        candidates = [store.get_run(run)]
    else:
        candidates = list(reversed(store.list_runs()))[:LABEL_SCAN_RUNS]
    chosen: dict[str, Any] | None = None
    for info in candidates:
        view = run_view(store, info.id)
        if any(q["answer"] is not None for q in view["questions"]) or run is not None:
            chosen = view
            break
    if chosen is None:
        return {"run": None, "items": [], "can_write": hasattr(store, "save_labels")}
    run_id = chosen["run"]["id"]
    labels = _labels_of(store, run_id)
    items = [
        {
            "item_id": q["id"],
            "question": q["question"],
            "answer": q["answer"],
            "context": [
                {"id": h["id"], "doc": h["doc"], "text": h["text"], "mark": h["mark"]}
                for h in q["retrieved"]
            ],
            "verdict": q["verdict"],
            "label": labels.get(q["id"]),
        }
        for q in chosen["questions"]
        if q["answer"] is not None
    ]
    return {"run": chosen["run"], "items": items, "can_write": hasattr(store, "save_labels")}


def save_label(store: Any, label: LabelIn) -> dict[str, Any]:
    """Write one label to the store at once; returns it as stored."""
    writer = getattr(store, "save_labels", None)
    if writer is None:
        raise LabelStoreMissing(_NO_LABEL_API)
    run = store.get_run(label.run)
    known = {row.item_id for row in store.results(run.id)}
    if label.item_id not in known:
        raise InputError(f"run {run.id} {run.name} has no question {label.item_id!r}")
    # The calibration vocabulary (ragmeter.judge.calibration.LABELS).
    writer(label_set(run.id), {label.item_id: "supported" if label.supported else "unsupported"})
    return {
        "run": run.id,
        "item_id": label.item_id,
        "label": _labels_of(store, run.id).get(label.item_id),
    }
