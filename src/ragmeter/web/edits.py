"""Gold edits from the run page: a person marks a retrieved chunk relevant or an expected
document wrong on a missed question (issue 15.3).

The dashboard only checks the request against the run and stores it
(``ragmeter.gold.edits`` validates, ``Store.add_gold_edit`` keeps it); the gold file
changes later, by ``ragmeter gold apply-edits``, after a person looked at the list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragmeter.errors import GoldEditError
from ragmeter.evaluation.hit_text import CUT_MARK
from ragmeter.gold.edits import GoldEdit, check_edit
from ragmeter.gold.goldset import GoldSet
from ragmeter.store import Store
from ragmeter.web.cache import RunViewCache
from ragmeter.web.views import with_texts

__all__ = ["GoldEditIn", "chunk_texts", "list_gold_edits", "save_gold_edit"]

#: Longest field the API accepts (a quote is checked against MAX_QUOTE_CHARS later).
MAX_FIELD = 20_000
#: What the report appends to a snippet cut short.
_ELLIPSIS = " …"


class GoldEditIn(BaseModel):
    """A gold edit as the run page (or a script) posts it."""

    model_config = ConfigDict(extra="forbid")

    run: str = Field(min_length=1, max_length=200)
    item_id: str = Field(min_length=1, max_length=MAX_FIELD)
    action: Literal["relevant", "wrong"]
    doc: str = Field(min_length=1, max_length=MAX_FIELD)
    chunk: str | None = Field(default=None, max_length=MAX_FIELD)
    grade: int | None = None
    quote: str | None = Field(default=None, max_length=MAX_FIELD)


def chunk_texts(
    retrieved: list[Mapping[str, Any]], context: list[Mapping[str, Any]]
) -> dict[str, list[str]]:
    """Every text the run kept of each chunk: the hit's text and the generation context's,
    without the marks the run added: a snippet's "…" and a cut text's "… (cut)", so a quote
    reaching over a mark is not in the chunk and is refused (issue 27.9).

    >>> chunk_texts([{"id": "a#0", "text": "Within 30 days …"}], [{"id": "a#0", "text": "x"}])
    {'a#0': ['Within 30 days', 'x']}
    >>> chunk_texts([{"id": "a#0", "text": "Within 30 … (cut)"}], [])
    {'a#0': ['Within 30']}
    """
    texts: dict[str, list[str]] = {}
    for source in (retrieved, context):
        for entry in source:
            text = str(entry.get("text") or "")
            for mark in (CUT_MARK, _ELLIPSIS):
                if text.endswith(mark):
                    text = text[: -len(mark)]
                    break
            if text:
                texts.setdefault(str(entry.get("id")), []).append(text)
    return texts


def _context(store: Store, run_id: int, item_id: str) -> list[Mapping[str, Any]]:
    extra = store.result_extras(run_id, [item_id]).get(item_id, {})
    return list(extra.get("context") or [])


def save_gold_edit(
    store: Store, views: RunViewCache, body: GoldEditIn, user: str | None, thresholds: Any = None
) -> dict[str, Any]:
    """Check ``body`` against its run and store it; returns ``{"edit": {...}}``.

    Raises ``GoldEditError`` (HTTP 400) when the question is not in the run, the chunk was
    not retrieved for it, the grade is not 0-3, the quote is not in the chunk's text, or
    the wrong document was not expected; ``RunNotFoundError`` (404) for an unknown run.
    """
    run = store.get_run(body.run)
    question = views.data(store, run.id, thresholds).question(body.item_id)
    if question is None:
        raise GoldEditError(f"run {run.id} {run.name} has no question {body.item_id!r}")
    gold = GoldSet.from_records(store.load_gold_records(run.gold_hash))
    edit = GoldEdit.new(
        run_id=run.id,
        item_id=body.item_id,
        action=body.action,
        doc=body.doc,
        grade=body.grade,
        quote=body.quote,
        chunk=body.chunk if body.action == "relevant" else None,
        user=user,
        gold_hash=run.gold_hash,
    )
    texts: dict[str, list[str]] = {}
    if edit.quote is not None:
        question = with_texts(store, run.id, [question])[0]  # the view keeps no chunk text
        texts = chunk_texts(question["retrieved"], _context(store, run.id, body.item_id))
    check_edit(edit, gold, question["retrieved"], texts)
    return {"edit": store.add_gold_edit(edit).to_dict()}


def list_gold_edits(store: Store, run: str | None, item_id: str | None) -> dict[str, Any]:
    """``{"edits": [...]}``: the stored edits, of one run and one question when given."""
    run_id = store.get_run(run).id if run is not None else None
    edits = store.gold_edits(run_id)
    if item_id is not None:
        edits = [e for e in edits if e.item_id == item_id]
    return {"run": run_id, "edits": [e.to_dict() for e in edits]}
