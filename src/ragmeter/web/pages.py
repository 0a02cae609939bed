"""The dashboard's HTML pages, rendered on the server from the same data as the API."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from ragmeter.web import views, work

__all__ = ["router"]

router = APIRouter(default_response_class=HTMLResponse, include_in_schema=False)


def _page(request: Request, template: str, title: str, data: dict[str, Any]) -> HTMLResponse:
    html = request.app.state.renderer.render(
        template, {"title": title, "data": data, "path": request.url.path}
    )
    return HTMLResponse(html)


@router.get("/")
def runs_page(request: Request) -> HTMLResponse:
    data = views.runs_view(request.app.state.store, request.app.state.thresholds)
    return _page(request, "runs.html", "Runs", data)


@router.get("/runs/{ref}")
def run_page(request: Request, ref: str) -> HTMLResponse:
    data = request.app.state.run_views.get(
        request.app.state.store, ref, request.app.state.thresholds
    )
    title = f"Run {data['run']['id']} · {data['run']['name']}"
    return _page(request, "run.html", title, data)


@router.get("/diff")
def diff_page(
    request: Request,
    a: Annotated[str, Query()],
    b: Annotated[str, Query()],
    metric: Annotated[list[str] | None, Query()] = None,
) -> HTMLResponse:
    store, thresholds = request.app.state.store, request.app.state.thresholds
    data = views.diff_view(store, a, b, thresholds, metric or None)
    title = f"Diff {data['a']['id']} → {data['b']['id']}"
    return _page(request, "diff.html", title, data)


@router.get("/label")
def label_page(request: Request, run: Annotated[str | None, Query()] = None) -> HTMLResponse:
    data = work.label_queue(request.app.state.store, run)
    return _page(request, "label.html", "Label answers", data)


@router.get("/review")
def review_page(request: Request) -> HTMLResponse:
    data = work.review_queue(request.app.state.candidates)
    return _page(request, "review.html", "Review candidates", data)
