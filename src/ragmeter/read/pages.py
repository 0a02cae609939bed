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
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ragmeter.evaluation.lazy_rows import LazyRows
from ragmeter.evaluation.report import QuestionRow, retrieved_entries
from ragmeter.gold.stored import StoredGold
from ragmeter.read.questions import finite, question_dict

if TYPE_CHECKING:
    from ragmeter.read.view import RunView
    from ragmeter.store import Store

__all__ = [
    "QUESTIONS_PER_PAGE",
    "Page",
    "decoded_rows",
    "drop_texts",
    "light_rows",
    "page_json",
    "questions_page",
    "rows_at",
    "table_rows",
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


def table_rows(view: RunView) -> list[dict[str, Any]]:
    """The run page's question table: one small row per question (id, question, tags,
    expected, hit, error, first relevant rank, latency, blame, and for a question without a
    hit the documents of its top hits, ``got``).

    From a brief view's light records where they say enough: only a question without a hit
    has its row built (its top hits read, a page of them at a time), as the misses list
    builds it anyway (issue 29.1)."""
    rows = view.rows
    if not isinstance(rows, LazyRows):
        return [_table_row(row, row.question, row.retrieved) for row in rows]
    records = rows.records
    missed = [p for p, record in enumerate(records) if record.error is None and not record.hit]
    built: dict[int, QuestionRow] = dict(zip(missed, rows.at(missed), strict=True))
    questions = _questions(view.gold_source)
    out = []
    for position, record in enumerate(records):
        row = built.get(position, record)
        if isinstance(row, QuestionRow):
            out.append(_table_row(row, row.question, row.retrieved))
        else:
            out.append(_table_row(row, questions[row.id], []))
    return out


def _questions(gold: Any) -> dict[str, str]:
    """Question text by id, from a gold set or its stored snapshot."""
    if isinstance(gold, StoredGold):
        return gold.questions()
    return {item.id: item.question for item in gold}


def _table_row(row: Any, question: str, retrieved: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    missed = not row.hit and row.error is None  # what came back: misses only (size)
    return {
        "id": row.id,
        "question": question,
        "tags": list(row.tags),
        "expected": list(row.expected),
        "hit": row.hit,
        "error": row.error,
        "first_relevant_rank": row.first_relevant_rank,
        "latency_ms": finite(row.latency_ms),
        "blame": row.blame,
        "got": list(dict.fromkeys(h["doc"] for h in retrieved)) if missed else [],
    }


def drop_texts(view: RunView) -> None:
    """Drop the chunk texts of the rows ``view`` has built (a view kept by the dashboard
    holds none: they are read for what is shown); builds no row."""
    rows = view.rows
    if isinstance(rows, LazyRows):
        records = rows.records
        shown = [p for p, record in enumerate(records) if record.error is None and not record.hit]
        rows = [*(r for r in records if isinstance(r, QuestionRow)), *rows.at(shown)]
    for row in rows:
        for hit in row.retrieved:
            hit.pop("text", None)


def light_rows(view: RunView) -> Sequence[Any]:
    """What each row of ``view`` says without building it (a brief view's light records:
    id, tags, expected, first relevant rank, hit, latency, error, answer, blame)."""
    rows = view.rows
    return rows.records if isinstance(rows, LazyRows) else rows


def rows_at(view: RunView, positions: Sequence[int]) -> list[QuestionRow]:
    """The rows of ``view`` at these positions, built (a brief view builds them together)."""
    rows = view.rows
    return list(rows.at(positions)) if isinstance(rows, LazyRows) else [rows[p] for p in positions]
