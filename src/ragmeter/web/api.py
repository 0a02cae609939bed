"""The dashboard's JSON API: the data of every page under ``/api/…``.

Every endpoint returns exactly the dict its page renders (see ``views.py``); errors
have one shape, ``{"error": {"status": ..., "message": ...}}`` (see ``app.py``).
The endpoints are documented in ``docs/dashboard.md``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response

from ragmeter.evaluation.hit_text import run_highlighted
from ragmeter.formats.spreadsheet import csv_text
from ragmeter.read.pages import QUESTIONS_PER_PAGE
from ragmeter.web import compare, edits, views, work
from ragmeter.web import runs as runs_views
from ragmeter.web.guard import require_json

__all__ = ["router"]

router = APIRouter(prefix="/api")

#: Questions at most per page of ``/api/runs/N`` (``limit``): page through a bigger run.
MAX_PAGE = 10_000


def _json_only(request: Request) -> None:
    # Every POST: a body without Content-Type application/json is refused with 415 before it
    # is parsed (a cross-site form or a no-Content-Type fetch needs no CORS preflight).
    require_json(request.headers)


def _store(request: Request) -> Any:
    return request.app.state.store


@router.get("/runs")
def runs(
    request: Request,
    baseline: Annotated[str, Query(description="deltas against this run (default: previous)")] = "",
) -> dict[str, Any]:
    """Every run, oldest first, with level, gold set, metrics, deltas and health; a run at
    another level or on another gold set than its reference has no delta (``not_compared``)."""
    return runs_views.runs_view(_store(request), request.app.state.thresholds, baseline)


@router.get("/runs/{ref}")
def run(
    request: Request,
    ref: str,
    tag: Annotated[str | None, Query(description="keep only questions with this tag")] = None,
    misses_only: Annotated[bool, Query(description="keep only missed questions")] = False,
    texts: Annotated[bool, Query(description="each chunk's stored text too (large)")] = False,
    page: Annotated[int, Query(ge=1, description="page of the kept questions")] = 1,
    limit: Annotated[
        int, Query(ge=1, le=MAX_PAGE, description="questions per page")
    ] = QUESTIONS_PER_PAGE,
) -> dict[str, Any]:
    """One run (id, name or ``latest``): metrics, health, charts, misses, failed answers,
    judge metrics, questions: ``RunView.to_dict()``, as ``ragmeter show RUN --json``.

    ``questions`` holds one page of the kept questions (``page``, ``limit``; only that
    page's rankings are read) and ``questions_page`` says which: ``total`` questions kept,
    ``pages``, ``offset``, ``shown`` (issue 29.1). Totals, tags, misses and charts are the
    whole run's. Chunks come without their text unless ``texts=1``; one question's are at
    ``/api/runs/N/questions/QID`` (issue 15.5)."""
    store = _store(request)
    data = request.app.state.run_views.data(store, ref, request.app.state.thresholds)
    questions, where = data.page(page=page, limit=limit, tag=tag, misses_only=misses_only)
    misses = [m for m in data.summary["misses"] if tag is None or tag in m["tags"]]
    if texts:
        questions = views.with_texts(store, data.id, questions)
        misses = views.with_texts(store, data.id, misses)
    return {**data.summary, **data.fresh(store), "misses": misses, "questions": questions,
            "questions_page": where.to_dict()}  # fmt: skip


@router.get("/runs/{ref}/questions.{fmt}", response_model=None)
def export_questions(
    request: Request,
    ref: str,
    fmt: Literal["csv", "json"],
    tag: Annotated[str, Query(description="keep questions with this tag")] = "",
    q: Annotated[str, Query(description="search id, question and documents")] = "",
    misses: Annotated[bool, Query(description="keep only missed questions")] = False,
    sort: Annotated[str, Query(description="id, rank or latency; -key descending")] = "",
) -> Response | dict[str, Any]:
    """The run page's question table exactly as shown for these parameters, as CSV or JSON."""
    data = request.app.state.run_views.data(_store(request), ref, request.app.state.thresholds)
    shown = views.shown_questions(data.rows, tag=tag, q=q, misses=misses, sort=sort)
    records = views.export_rows(shown)
    name = f"run-{data.id}-questions.{fmt}"
    disposition = {"content-disposition": f'attachment; filename="{name}"'}
    if fmt == "json":
        return JSONResponse({"run": data.id, "questions": records}, headers=disposition)
    text = csv_text(views.EXPORT_COLUMNS, records)
    return Response(text, media_type="text/csv; charset=utf-8", headers=disposition)


@router.get("/runs/{ref}/questions/{item_id:path}")
def question(request: Request, ref: str, item_id: str) -> dict[str, Any]:
    """One question of a run with everything its expanded row shows: gold entries, chunks
    with the text stored with the run (gold quotes marked in ``segments``), rank, score and
    relevance mark, answer, answer check, judge verdict, blame, per-question metrics."""
    store = _store(request)
    data = request.app.state.run_views.data(store, ref, request.app.state.thresholds)
    found = data.question(item_id)
    if found is None:
        raise HTTPException(404, f"run {data.id} has no question {item_id!r}")
    return run_highlighted(views.with_texts(store, data.id, [found])[0], data.read.run.config)


@router.get("/diff")
def diff(
    request: Request,
    a: Annotated[str, Query(description="run A (baseline): id, name or latest")],
    b: Annotated[str, Query(description="run B (candidate): id, name or latest")],
    metric: Annotated[list[str] | None, Query(description="metrics to compare")] = None,
) -> dict[str, Any]:
    """Run B against run A: deltas, intervals, p-values, flagged clusters, flips."""
    return runs_views.diff_view(_store(request), a, b, request.app.state.thresholds,
                                metric or None)  # fmt: skip


@router.get("/compare")
def compare_runs(
    request: Request,
    a: Annotated[str, Query(description="run A: id, name or latest")],
    b: Annotated[str, Query(description="run B: id, name or latest")],
    changed: Annotated[bool, Query(description="only questions whose first rank moved")] = False,
    tag: Annotated[str, Query(description="only questions with this tag")] = "",
    page: Annotated[int, Query(ge=1, description="page of the shown questions")] = 1,
) -> dict[str, Any]:
    """Run A and run B question by question: both rankings, first relevant ranks, changes."""
    state = request.app.state
    return compare.compare_view(state.run_views, state.store, a, b, state.thresholds,
                                changed=changed, tag=tag, page=page)  # fmt: skip


@router.get("/compare/questions.{fmt}", response_model=None)
def export_compare(
    request: Request,
    fmt: Literal["csv", "json"],
    a: Annotated[str, Query(description="run A")],
    b: Annotated[str, Query(description="run B")],
    changed: Annotated[bool, Query(description="only changed questions")] = False,
    tag: Annotated[str, Query(description="only questions with this tag")] = "",
) -> Response:
    """The side-by-side view's questions for these filters (every page), as CSV or JSON."""
    state = request.app.state
    data = compare.compare_view(state.run_views, state.store, a, b, state.thresholds, size=1)
    rows = compare.compare_rows(state.run_views, state.store, a, b, state.thresholds,
                                changed=changed, tag=tag)  # fmt: skip
    name = f"compare-{data['a']['id']}-{data['b']['id']}.{fmt}"
    disposition = {"content-disposition": f'attachment; filename="{name}"'}
    if fmt == "json":
        body = {"a": data["a"]["id"], "b": data["b"]["id"], "not_compared": data["not_compared"],
                "filters": {"changed": changed, "tag": tag}, "questions": rows}  # fmt: skip
        return JSONResponse(views.clean(body), headers=disposition)
    text = csv_text(compare.EXPORT_COLUMNS, compare.export_records(rows))
    return Response(text, media_type="text/csv; charset=utf-8", headers=disposition)


@router.get("/question")
def question_across(
    request: Request,
    id: Annotated[str, Query(description="the question's gold id")],  # noqa: A002
    runs: Annotated[str, Query(description="up to 5 runs, comma-separated")],
) -> dict[str, Any]:
    """One question in up to 5 runs: each run's chunks, first relevant rank and metrics."""
    state = request.app.state
    refs = compare.parse_runs(runs)
    return compare.question_across(state.run_views, state.store, refs, id, state.thresholds)


@router.get("/tag")
def tag_across(
    request: Request,
    tag: Annotated[str, Query(description="the tag (cluster)")],
    runs: Annotated[str, Query(description="up to 5 runs, comma-separated")],
) -> dict[str, Any]:
    """One tag in up to 5 runs: question count, misses and metric means over the tag."""
    state = request.app.state
    refs = compare.parse_runs(runs)
    return compare.tag_across(state.run_views, state.store, refs, tag, state.thresholds)


@router.get("/labels")
def labels(
    request: Request,
    run: Annotated[str | None, Query(description="run whose answers to label")] = None,
    unlabelled: Annotated[bool, Query(description="only answers without a label")] = False,
) -> dict[str, Any]:
    """Answers to label for judge calibration, with the labels already made."""
    return work.label_queue(_store(request), run, unlabelled=unlabelled)


@router.post("/labels", status_code=201, dependencies=[Depends(_json_only)])
def add_label(request: Request, label: work.LabelIn) -> dict[str, Any]:
    """Record a person's verdict: is every claim of the answer supported by the context?"""
    return work.save_label(_store(request), label)


@router.get("/review")
def review(request: Request) -> dict[str, Any]:
    """The synthetic candidates waiting for review, with their decisions so far."""
    return work.review_queue(request.app.state.candidates)


@router.post("/review", dependencies=[Depends(_json_only)])
def decide(request: Request, decision: work.DecisionIn) -> dict[str, Any]:
    """Accept, edit or reject one candidate; written to the candidates file at once."""
    state = request.app.state
    return work.save_decision(state.candidates, decision, state.corpus_docs)


@router.get("/gold-edits")
def gold_edits(
    request: Request,
    run: Annotated[str | None, Query(description="only this run's edits")] = None,
    item: Annotated[str | None, Query(description="only this question's edits")] = None,
) -> dict[str, Any]:
    """The gold edits people made from missed questions, oldest first."""
    return edits.list_gold_edits(_store(request), run, item)


@router.post("/gold-edits", status_code=201, dependencies=[Depends(_json_only)])
def add_gold_edit(request: Request, edit: edits.GoldEditIn) -> dict[str, Any]:
    """Mark a retrieved chunk relevant (grade 0-3, optional quote) or an expected doc wrong."""
    state = request.app.state
    return edits.save_gold_edit(state.store, state.run_views, edit, state.user, state.thresholds)
