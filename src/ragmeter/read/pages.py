"""A run's questions a page at a time: the rows a surface shows, only their rankings decoded
(issue 29.1).

``show --json``, ``/api/runs/N``, the dashboard and the static report read a run briefly
(:func:`~ragmeter.read.view.read_run` with ``rankings="shown"``: totals, groups and charts
from each question's stored summary) and decode the rankings of the rows they print here:
:func:`questions_page` gives one page of whole questions (the dict ``show --json`` has), and
:func:`with_rankings` a view whose chosen rows spell out every hit (the static report's
misses and failed answers). A row built here is the row a full read builds
(:func:`~ragmeter.evaluation.report.build_report`), hit for hit.

>>> import ragmeter
>>> store = ragmeter.Store.memory()
>>> gold = ragmeter.GoldSet.from_records([{"id": f"q{i}", "question": "refunds?",
...     "relevant": [{"doc": "refunds.md"}]} for i in range(3)])
>>> _ = ragmeter.evaluate(gold, lambda q, k: [{"doc": "refunds.md"}], store=store, name="a",
...                       commit="")
>>> view = ragmeter.read_run(store, "a", rankings="shown")
>>> questions, page = questions_page(store, view, page=2, limit=2)
>>> [q["id"] for q in questions], page.to_dict()
(['q2'], {'page': 2, 'limit': 2, 'pages': 2, 'total': 3, 'offset': 2, 'shown': 1})
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ragmeter.evaluation.report import QuestionRow, retrieved_entries
from ragmeter.read.questions import question_dict

if TYPE_CHECKING:
    from ragmeter.read.view import RunView
    from ragmeter.store import Store

__all__ = [
    "QUESTIONS_PER_PAGE",
    "Page",
    "decoded_rows",
    "page_json",
    "questions_page",
    "with_rankings",
]

#: Questions per page of ``show --json`` and ``/api/runs/N`` unless asked otherwise: a run
#: this big or smaller prints every question, as before paging.
QUESTIONS_PER_PAGE = 1_000


@dataclass(frozen=True)
class Page:
    """Which questions a page holds: page ``page`` (from 1) of ``limit`` questions out of
    ``total`` (the questions the filters kept).

    >>> Page(3, 10, 25).to_dict()
    {'page': 3, 'limit': 10, 'pages': 3, 'total': 25, 'offset': 20, 'shown': 5}
    """

    page: int
    limit: int
    total: int

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.limit

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.limit))

    @property
    def shown(self) -> int:
        return max(0, min(self.limit, self.total - self.offset))

    def to_dict(self) -> dict[str, int]:
        return {"page": self.page, "limit": self.limit, "pages": self.pages,
                "total": self.total, "offset": self.offset, "shown": self.shown}  # fmt: skip


def decoded_rows(store: Store, view: RunView, rows: Sequence[QuestionRow]) -> list[QuestionRow]:
    """``rows`` of ``view`` with every hit spelled out, as a full read has them: the rankings
    of these rows only are read (none for rows the view decoded already)."""
    known = view.report.results
    wanted = [row.id for row in rows if row.id not in known]
    found = store.results_for(view.run.id, wanted) if wanted else {}
    out = []
    for row in rows:
        result = found.get(row.id)
        out.append(row if result is None else replace(row, retrieved=retrieved_entries(result)))
    return out


def questions_page(
    store: Store,
    view: RunView,
    *,
    page: int = 1,
    limit: int | None = QUESTIONS_PER_PAGE,
    rows: Sequence[QuestionRow] | None = None,
    texts: bool = False,
) -> tuple[list[dict[str, Any]], Page]:
    """Page ``page`` of ``limit`` questions (None: every one) of ``rows`` (default: the
    run's, in the gold set's order) as the JSON has them, and where the page is.

    Decodes only the page's rankings and reads only its metric values; a page past the last
    is empty."""
    if page < 1 or (limit is not None and limit < 1):
        raise ValueError(f"page and limit start at 1, got page={page} limit={limit}")
    chosen = view.rows if rows is None else rows
    where = Page(page, limit or max(1, len(chosen)), len(chosen))
    shown = decoded_rows(store, view, chosen[where.offset : where.offset + where.limit])
    per_query = view.report.per_query
    if view.brief:  # a brief read keeps no per-question values: this page's only
        per_query = store.question_metrics(view.run.id, item_ids=[row.id for row in shown])
    answers, grades = view.answers, view.grades
    questions = [
        question_dict(row, answers.get(row.id), per_query, grades, texts=texts) for row in shown
    ]
    return questions, where


def with_rankings(store: Store, view: RunView, item_ids: Collection[str]) -> RunView:
    """``view`` whose rows ``item_ids`` spell out every hit (their rankings decoded): what a
    brief view needs before a renderer lays those rows out whole (the static report)."""
    wanted = set(item_ids)
    chosen = [row for row in view.rows if row.id in wanted]
    whole = {row.id: row for row in decoded_rows(store, view, chosen)}
    rows = [whole.get(row.id, row) for row in view.rows]
    return replace(view, report=replace(view.report, rows=rows), _questions={}, _by_id={})


def page_json(
    store: Store,
    view: RunView,
    *,
    page: int = 1,
    limit: int | None = QUESTIONS_PER_PAGE,
    texts: bool = False,
) -> dict[str, Any]:
    """:meth:`RunView.to_dict <ragmeter.read.view.RunView.to_dict>` with one page of its
    ``questions`` (``limit`` None: every one) and ``questions_page`` (:class:`Page`): what
    ``show --json`` prints. A run of at most ``limit`` questions has them all."""
    questions, where = questions_page(store, view, page=page, limit=limit, texts=texts)
    return {**view.summary(texts=texts), "questions": questions, "questions_page": where.to_dict()}
