"""The two pages where a person writes: calibration labels and candidate review.

Each decision is written at once through the library: a label to the store, a
review decision to the candidates file (``ragmeter.gold.review.decide``, which rewrites
the file atomically), so closing the browser loses nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragmeter.errors import InputError, LabelStoreMissing
from ragmeter.gold.review import decide, load_candidates, pending
from ragmeter.judging.corrected import label_set

__all__ = [
    "DecisionIn",
    "LabelIn",
    "known_docs",
    "label_queue",
    "review_queue",
    "save_decision",
    "save_label",
]

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
    metadata = item.metadata if isinstance(item.metadata, dict) else {}
    review = metadata.get("review")
    found = metadata.get("reasons")
    reasons: dict[str, Any] = found if isinstance(found, dict) else {}
    retrieved = [
        {"id": str(r.get("id")), "doc": str(r.get("doc") or r.get("id")), "text": r.get("text")}
        for r in metadata.get("retrieved") or []
        if isinstance(r, dict)
    ]
    relevant = [r.model_dump(exclude_none=True) for r in item.relevant]
    # Accept would be refused (an item without relevance can never be found): say why first.
    accept_reason = None
    if not any(r["grade"] > 0 for r in relevant):
        accept_reason = (
            "no relevant document yet: mark one of the retrieved chunks relevant, "
            "or edit the relevant documents"
        )
    return {
        "id": item.id,
        "question": item.question,
        "relevant": relevant,
        "answer_contains": list(item.answer_contains),
        "tags": list(item.tags),
        "source": item.source,
        "status": item.status or "candidate",
        "parent": item.parent,
        "review": review if isinstance(review, dict) else None,
        "comments": [str(c) for c in metadata.get("comments") or []],
        "thumbs_down": int(reasons.get("thumbs_down", 0) or 0),
        "asked": int(metadata.get("count", 0) or 0),
        "retrieved": retrieved,
        "can_accept": accept_reason is None,
        "accept_reason": accept_reason,
    }


def known_docs(item: Any, corpus: Collection[str] | None = None) -> set[str]:
    """Documents an edit of ``item`` may name: those it retrieved or names, and the corpus's.

    >>> from ragmeter.gold.goldset import GoldItem
    >>> item = GoldItem(id="c", question="?", relevant=["a.md"],
    ...                 metadata={"retrieved": [{"id": "b.md#0", "doc": "b.md"}]})
    >>> sorted(known_docs(item, ["z.md"]))
    ['a.md', 'b.md', 'z.md']
    """
    docs = {rel.doc_id for rel in item.relevant}
    for hit in (item.metadata or {}).get("retrieved") or []:
        if isinstance(hit, dict):
            docs.add(str(hit.get("doc") or hit.get("id")))
    return docs | set(corpus or ())


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


def save_decision(
    path: Path | None, decision: DecisionIn, corpus: Collection[str] | None = None
) -> dict[str, Any]:
    """Apply one decision to the candidates file; returns the updated item.

    A relevant document must be one the candidate retrieved or already names, or one of
    ``corpus`` (``ragmeter serve --corpus``): anything else is refused (400).
    """
    if path is None:
        raise _no_candidates()
    gold = load_candidates(path)
    known = known_docs(gold[decision.item_id], corpus) if decision.item_id in gold else None
    item = decide(
        path,
        decision.item_id,
        decision.decision,
        question=decision.question,
        relevant=decision.relevant,
        answer_contains=decision.answer_contains,
        reviewer=decision.reviewer,
        note=decision.note,
        known_docs=known,
    )
    return {"item": _item_dict(item)}


#: How many of the newest runs the label page looks through for answers.
LABEL_SCAN_RUNS = 20
_NO_LABEL_API = (
    "the store cannot keep calibration labels: it needs Store.save_labels(set_name, labels) "
    "and Store.labels(set_name)"
)


def _labels_of(store: Any, run_id: int) -> dict[str, dict[str, Any]]:
    reader = getattr(store, "labels", None)
    if reader is None:
        return {}
    stored: dict[str, str] = reader(label_set(run_id))
    return {
        item: {"supported": label == "supported", "label": label} for item, label in stored.items()
    }


#: Runs offered by the label page's run picker (the newest first).
LABEL_PICKER_RUNS = 50


def _generation_contexts(
    store: Any, run_id: int, item_ids: Sequence[str]
) -> dict[str, list[dict[str, Any]]]:
    """``item id -> the chunks the answer was generated from`` as the run stored them, for
    these questions (their ``extra`` only: no ranking is decoded)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for item_id, extra in store.result_extras(run_id, item_ids).items():
        context = extra.get("context") if isinstance(extra, dict) else None
        if isinstance(context, list):
            out[item_id] = [c for c in context if isinstance(c, dict)]
    return out


def _label_context(
    question: dict[str, Any], stored: list[dict[str, Any]] | None
) -> tuple[str, list[dict[str, Any]]]:
    """("generation", the exact generation context) or ("retrieved", the ranking's texts)."""
    marks = {str(h["id"]): h["mark"] for h in question["retrieved"]}
    if stored:
        chunks = [
            {"id": str(c.get("id")), "doc": str(c.get("doc")), "text": str(c.get("text") or ""),
             "mark": marks.get(str(c.get("id")), "none")}
            for c in stored
        ]  # fmt: skip
        return "generation", chunks
    chunks = [
        {"id": h["id"], "doc": h["doc"], "text": h["text"], "mark": h["mark"]}
        for h in question["retrieved"]
    ]
    return "retrieved", chunks


def label_queue(store: Any, run: str | None, *, unlabelled: bool = False) -> dict[str, Any]:
    """Answers of a run to label — question, the exact generation context, answer — and the
    labels so far.

    Without ``run``, the newest run that has answers. The context is the chunks the
    generator was given, in its order, as the run stored them (``"context_source":
    "generation"``); a run that kept none shows its retrieved chunks (``"retrieved"``).
    ``unlabelled`` keeps only the answers without a label. ``runs`` lists the newest runs
    for the page's run picker.
    """
    from ragmeter.read import read_run
    from ragmeter.read.pages import questions_page
    from ragmeter.web.views import with_texts

    runs = [
        {"id": info.id, "name": info.name}
        for info in list(reversed(store.list_runs()))[:LABEL_PICKER_RUNS]
    ]
    if run is not None:
        found = store.get_run(run)
    else:  # the newest run with answers, found without reading any run (issue 29.1)
        scanned = list(reversed(store.list_runs()))[:LABEL_SCAN_RUNS]
        found = next((info for info in scanned if store.has_answers(info.id)), None)
    base = {"runs": runs, "unlabelled": unlabelled, "can_write": hasattr(store, "save_labels")}
    if found is None:
        return base | {"run": None, "items": [], "counts": {"answers": 0, "labelled": 0}}
    # Read briefly; only the answered questions' rankings and contexts are read.
    view = read_run(store, found.id, rankings="shown")
    run_id = view.run.id
    rows = [row for row in view.rows if row.answer is not None or row.id in view.answers]
    answered, _ = questions_page(store, view, rows=rows, limit=None)
    labels = _labels_of(store, run_id)
    contexts = _generation_contexts(store, run_id, [q["id"] for q in answered])
    items = []
    for q in with_texts(store, run_id, answered):  # the view keeps no chunk text
        source, context = _label_context(q, contexts.get(q["id"]))
        items.append(
            {
                "item_id": q["id"],
                "question": q["question"],
                "answer": q["answer"],
                "context": context,
                "context_source": source,
                "verdict": q["verdict"],
                "label": labels.get(q["id"]),
            }
        )
    counts = {"answers": len(items), "labelled": sum(1 for i in items if i["label"])}
    if unlabelled:
        items = [i for i in items if not i["label"]]
    return base | {"run": view.summary()["run"], "items": items, "counts": counts}


def save_label(store: Any, label: LabelIn) -> dict[str, Any]:
    """Write one label to the store at once; returns it as stored."""
    writer = getattr(store, "save_labels", None)
    if writer is None:
        raise LabelStoreMissing(_NO_LABEL_API)
    run = store.get_run(label.run)
    if label.item_id not in store.completed_items(run.id):  # ids only: no ranking read (29.1)
        raise InputError(f"run {run.id} {run.name} has no question {label.item_id!r}")
    # The calibration vocabulary (ragmeter.judging.calibration.LABELS).
    writer(label_set(run.id), {label.item_id: "supported" if label.supported else "unsupported"})
    return {
        "run": run.id,
        "item_id": label.item_id,
        "label": _labels_of(store, run.id).get(label.item_id),
    }
