"""The dashboard's HTML pages, rendered on the server from the same data as the API."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from ragmeter.web import compare, runs, views, work

__all__ = ["router"]

#: Question rows per page of the run page's table (filters apply to all questions).
QUESTIONS_PAGE_SIZE = 100
#: Missed questions listed at most under "Misses" (the table shows them all: misses only).
MISSES_SHOWN = 50
#: Questions of a run whose table the page's script filters itself; a bigger run's table
#: comes a page at a time from the server (the filters in the URL), so the page stays small.
ROWS_IN_PAGE = 2_000

router = APIRouter(default_response_class=HTMLResponse, include_in_schema=False)


def _page(
    request: Request,
    template: str,
    title: str,
    data: dict[str, Any],
    script_data: dict[str, Any] | None = None,
) -> HTMLResponse:
    """Render ``template``; the page's script gets ``script_data`` (default: all of ``data``)."""
    context = {"title": title, "data": data, "path": request.url.path}
    if script_data is not None:
        context["script_data"] = script_data
    return HTMLResponse(request.app.state.renderer.render(template, context))


@router.get("/")
def runs_page(
    request: Request, page: Annotated[int, Query(ge=1)] = 1, baseline: str = ""
) -> HTMLResponse:
    data = runs.runs_view(request.app.state.store, request.app.state.thresholds, baseline)
    shown = runs.runs_page(data, page)
    # The chart needs ids and metrics only; the table is already HTML.
    chart = {"runs": [{"id": r["id"], "metrics": r["metrics"]} for r in shown["runs"]]}
    return _page(request, "runs.html", "Runs", shown, chart)


@router.get("/runs/{ref}")
def run_page(
    request: Request,
    ref: str,
    tag: str = "",
    q: str = "",
    misses: bool = False,
    sort: str = "",
    page: Annotated[int, Query(ge=1)] = 1,
) -> HTMLResponse:
    state = request.app.state
    run = state.run_views.data(state.store, ref, state.thresholds)
    data = {**run.summary, **run.fresh(state.store)}
    title = f"Run {data['run']['id']} · {data['run']['name']}"
    # The script gets one small row per question; an expanded row fetches its details
    # from /api/runs/ID/questions/QID, so a 2,000-question page stays well under 1 MB.
    # A bigger run gets one page of rows, picked here by the URL's filters (issue 29.1).
    script = {
        "run": {"id": data["run"]["id"], "k": data["run"]["k"]},
        "hit_curve": data["hit_curve"],
        "latency_histogram": data["latency_histogram"],
        "page_size": QUESTIONS_PAGE_SIZE,
        "misses_shown": MISSES_SHOWN,
    }
    if len(run.rows) <= ROWS_IN_PAGE:
        script["questions"] = run.rows
    else:
        script["server"] = table_page(run.rows, tag=tag, q=q, misses=misses, sort=sort, page=page)
    return _page(request, "run.html", title, data, script)


def table_page(
    rows: Sequence[Mapping[str, Any]],
    *,
    tag: str = "",
    q: str = "",
    misses: bool = False,
    sort: str = "",
    page: int = 1,
    size: int = QUESTIONS_PAGE_SIZE,
) -> dict[str, Any]:
    """One page of a big run's question table for these filters (``views.shown_questions``,
    the rules the page's script applies to a small run), with the misses list.

    >>> rows = [{"id": f"q{i}", "question": "?", "tags": ["t"] if i % 2 else [],
    ...          "expected": ["d"], "got": [], "hit": i % 3 == 0, "error": None,
    ...          "first_relevant_rank": None, "latency_ms": 1.0} for i in range(7)]
    >>> page = table_page(rows, tag="t", page=2, size=2)
    >>> [r["id"] for r in page["questions"]], page["shown"], page["pages"], page["n_missed"]
    (['q5'], 3, 2, 4)
    >>> [m["id"] for m in page["misses"]], page["n_misses"]
    (['q1', 'q5'], 2)
    """
    shown = views.shown_questions(rows, tag=tag, q=q, misses=misses, sort=sort)
    pages = max(1, math.ceil(len(shown) / size))
    page = min(page, pages)
    missed = [row for row in rows if not row["hit"] and not row["error"]]
    tagged = [row for row in missed if not tag or tag in row["tags"]]
    return {
        "questions": shown[(page - 1) * size : page * size],
        "shown": len(shown),
        "total": len(rows),
        "page": page,
        "pages": pages,
        "misses": tagged[:MISSES_SHOWN],
        "n_misses": len(tagged),
        "n_missed": len(missed),
    }


@router.get("/diff")
def diff_page(
    request: Request,
    a: Annotated[str, Query()],
    b: Annotated[str, Query()],
    metric: Annotated[list[str] | None, Query()] = None,
) -> HTMLResponse:
    store, thresholds = request.app.state.store, request.app.state.thresholds
    data = runs.diff_view(store, a, b, thresholds, metric or None)
    title = f"Diff {data['a']['id']} → {data['b']['id']}"
    return _page(request, "diff.html", title, data)


@router.get("/compare")
def compare_page(
    request: Request,
    a: Annotated[str, Query()],
    b: Annotated[str, Query()],
    changed: bool = False,
    tag: str = "",
    page: Annotated[int, Query(ge=1)] = 1,
) -> HTMLResponse:
    state = request.app.state
    data = compare.compare_view(state.run_views, state.store, a, b, state.thresholds,
                                changed=changed, tag=tag, page=page)  # fmt: skip
    title = f"Side by side {data['a']['id']} → {data['b']['id']}"
    return _page(request, "compare.html", title, data, {})


@router.get("/question")
def question_page(request: Request, id: str, runs: str) -> HTMLResponse:  # noqa: A002
    state = request.app.state
    refs = compare.parse_runs(runs)
    data = compare.question_across(state.run_views, state.store, refs, id, state.thresholds)
    return _page(
        request, "across.html", f"Question {id} across runs", {**data, "kind": "question"}, {}
    )


@router.get("/tag")
def tag_page(request: Request, tag: str, runs: str) -> HTMLResponse:
    state = request.app.state
    refs = compare.parse_runs(runs)
    data = compare.tag_across(state.run_views, state.store, refs, tag, state.thresholds)
    return _page(request, "across.html", f"Tag {tag} across runs", {**data, "kind": "tag"}, {})


@router.get("/label")
def label_page(
    request: Request,
    run: Annotated[str | None, Query()] = None,
    unlabelled: Annotated[bool, Query()] = False,
) -> HTMLResponse:
    data = work.label_queue(request.app.state.store, run or None, unlabelled=unlabelled)
    return _page(request, "label.html", "Label answers", data)


@router.get("/review")
def review_page(request: Request) -> HTMLResponse:
    data = work.review_queue(request.app.state.candidates)
    return _page(request, "review.html", "Review candidates", data)
