"""The dashboard application: ``create_app(store_url) -> FastAPI``.

Pages (``pages.py``) and the JSON API (``api.py``) read and write only through
the library. Two pieces of plumbing live here:

- one error shape: every error of the API, whatever raised it (a missing run, a
  bad query parameter, a missing token, a bug), is
  ``{"error": {"status": 404, "message": "..."}}`` with that HTTP status; pages
  show the same message in HTML;
- the token: with ``token`` set, every request (pages, API, static files) needs
  ``Authorization: Bearer TOKEN`` or the ``ragmeter_token`` cookie (HttpOnly,
  SameSite=Strict). ``?token=`` is accepted only to open a page (GET, not under
  ``/api``): it sets the cookie and redirects to the same path without it, so a
  browser needs the token once and it stays out of logs afterwards.
"""

from __future__ import annotations

import gc
import hashlib
import hmac
import logging
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.gzip import GZipMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragmeter.compare.health import HealthThresholds
from ragmeter.errors import InputError, RagmeterError, RunNotFoundError
from ragmeter.store import Store
from ragmeter.web.cache import RunViewCache
from ragmeter.web.guard import HostGuard, allowed_hosts
from ragmeter.web.render import Renderer

__all__ = ["COOKIE", "create_app", "error_body"]

COOKIE = "ragmeter_token"
#: Responses at least this big are gzipped when the client accepts it.
GZIP_MIN_BYTES = 1_000
#: How long a browser keeps a static asset (its URL changes with its content).
STATIC_MAX_AGE_S = 365 * 24 * 3600
_HERE = Path(__file__).resolve().parent
_log = logging.getLogger("ragmeter.web")


def error_body(status: int, message: str) -> dict[str, Any]:
    """The one error shape of the API.

    >>> error_body(404, "no run 9")
    {'error': {'status': 404, 'message': 'no run 9'}}
    """
    return {"error": {"status": status, "message": message}}


def _is_api(path: str) -> bool:
    return path == "/api" or path.startswith("/api/")


def _error_response(request: Request, status: int, message: str) -> Response:
    if _is_api(request.url.path):
        return JSONResponse(error_body(status, message), status_code=status)
    renderer: Renderer = request.app.state.renderer
    html = renderer.render("error.html", {"status": status, "message": message})
    return HTMLResponse(html, status_code=status)


def _status_of(error: RagmeterError) -> int:
    declared = getattr(error, "http_status", None)
    if isinstance(declared, int):
        return declared
    if isinstance(error, RunNotFoundError):
        return 404
    if isinstance(error, InputError):
        return 400
    if isinstance(error, LookupError):
        return 404
    return 500


def _validation_message(error: RequestValidationError) -> str:
    parts = []
    for problem in error.errors():
        where = ".".join(str(p) for p in problem.get("loc", ()) if p != "body")
        parts.append(f"{where}: {problem.get('msg', 'invalid')}" if where else problem["msg"])
    return "; ".join(parts) or "invalid request"


def _install_error_handlers(app: FastAPI) -> None:
    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":
            message = f"nothing at {request.url.path}"
        return _error_response(request, exc.status_code, message)

    async def on_validation(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return _error_response(request, 422, _validation_message(exc))

    async def on_ragmeter(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RagmeterError)
        return _error_response(request, _status_of(exc), str(exc))

    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(RagmeterError, on_ragmeter)


class _CatchAll:
    """Turn an unexpected exception into a 500 in the error shape (logged, not re-raised).

    Starlette's own 500 handler re-raises after answering; this middleware sits
    inside it so a bug in one page answers ``{"error": {"status": 500, ...}}``.
    """

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            _log.exception("error while serving %s", scope.get("path"))
            if started:
                raise
            request = Request(scope)
            message = f"internal error: {type(exc).__name__}: {exc}"
            await _error_response(request, 500, message)(scope, receive, send)


#: Kept as they are in a redirect target; everything else is percent-encoded.
_PATH_SAFE = "/:@!$&'()*+,;=-._~"


def _local_path(path: str) -> str:
    r"""``path`` (decoded) as a same-origin redirect target, percent-encoded.

    A Location starting with ``//`` or ``/\\`` is another site to a browser, and browsers
    drop tabs and newlines anywhere in a URL, so ``/\t/evil.example`` is ``//evil.example``
    too (issue 27.13). Dropping the leading slashes and backslashes, then encoding every
    control character, space and backslash left, leaves only a path of this origin.

    >>> _local_path("//evil.example/x"), _local_path("/\\evil.example"), _local_path("/runs/1")
    ('/evil.example/x', '/evil.example', '/runs/1')
    >>> _local_path("/\t/evil.test:9911/landing")
    '/%09/evil.test:9911/landing'
    """
    return "/" + quote(path.lstrip("/\\"), safe=_PATH_SAFE)


class _TokenGuard:
    """Require the token on every request when one is set (see the module docstring)."""

    def __init__(self, app: ASGIApp, token: str):
        self.app = app
        self._token = token.encode()

    def _ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self._token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        header = request.headers.get("authorization", "")
        bearer = header[7:].strip() if header.lower().startswith("bearer ") else None
        if self._ok(bearer) or self._ok(request.cookies.get(COOKIE)):
            await self.app(scope, receive, send)
            return
        page_load = request.method in ("GET", "HEAD") and not _is_api(request.url.path)
        # ?token= only opens a page: on the API and on writes it would end up in proxy logs.
        if page_load and self._ok(request.query_params.get("token")):
            # Keep the token out of the address bar: set the cookie and come back.
            query = urlencode([(k, v) for k, v in parse_qsl(request.url.query) if k != "token"])
            target = _local_path(scope["path"]) + (f"?{query}" if query else "")
            response: Response = Response(status_code=303, headers={"location": target})
            cookie: SimpleCookie = SimpleCookie()
            cookie[COOKIE] = self._token.decode()
            cookie[COOKIE]["httponly"] = True
            cookie[COOKIE]["samesite"] = "Strict"
            cookie[COOKIE]["path"] = "/"
            response.headers["set-cookie"] = cookie[COOKIE].OutputString()
            await response(scope, receive, send)
            return
        message = (
            "this dashboard needs its token: Authorization: Bearer TOKEN "
            "(or ?token=TOKEN once, to open a page in a browser)"
        )
        response = _error_response(request, 401, message)
        response.headers["www-authenticate"] = "Bearer"
        await response(scope, receive, send)


class _CachedStatic(StaticFiles):
    """Static files with a long ``Cache-Control``: pages link them as ``?v=HASH`` of their
    content, so a new version is a new URL (``private``: a token may guard them)."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers["cache-control"] = f"private, max-age={STATIC_MAX_AGE_S}, immutable"
        return response


def _asset_version() -> str:
    """A short hash of the static files, appended to their URLs (``/static/app.js?v=…``)."""
    digest = hashlib.sha256()
    for path in sorted((_HERE / "static").iterdir()):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def create_app(
    store_url: str,
    token: str | None = None,
    *,
    thresholds: HealthThresholds | None = None,
    candidates: str | Path | None = None,
    store: Store | None = None,
    hosts: Iterable[str] | None = None,
    user: str | None = None,
    corpus_docs: Iterable[str] | None = None,
) -> FastAPI:
    """The dashboard over the store at ``store_url`` (a path or SQLAlchemy URL).

    ``token`` protects every page and API call; ``thresholds`` shade the health
    columns (``load_config().health``); ``candidates`` is the synthetic-question
    file the review page works on. ``store`` passes an open store instead of a URL
    (tests; the caller closes it). ``hosts`` are the Host names answered (default:
    the loopback forms; see ``guard.py``); any other Host gets 421. ``user`` names who
    makes the gold edits of this dashboard (default ``"local"``); ``corpus_docs`` are the
    document ids a review edit may name besides those a candidate retrieved. While the app
    runs (its lifespan), the objects alive at its start are frozen out of the garbage
    collector's full passes (``gc.freeze``), which cost a third of a big run page.

    >>> from fastapi.testclient import TestClient  # doctest: +SKIP
    >>> TestClient(create_app("runs.db")).get("/api/runs").json()["runs"]  # doctest: +SKIP
    []
    """
    owned = store is None
    opened = store if store is not None else Store.open(store_url)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        _freeze_startup_heap()
        try:
            yield
        finally:
            gc.unfreeze()
        logger = getattr(app.state, "query_logger", None)
        if logger is not None:
            logger.close()
        if owned:
            opened.close()

    app = FastAPI(
        title="ragmeter dashboard",
        docs_url=None,  # Swagger UI would load scripts from a CDN: docs/dashboard.md instead.
        redoc_url=None,
        openapi_url="/api/openapi.json",
        lifespan=lifespan,
    )
    app.state.store = opened
    app.state.thresholds = thresholds or HealthThresholds()
    app.state.candidates = Path(candidates) if candidates is not None else None
    app.state.user = user
    app.state.corpus_docs = frozenset(corpus_docs) if corpus_docs is not None else None
    app.state.renderer = Renderer(_HERE / "templates", asset_version=_asset_version())
    app.state.run_views = RunViewCache()
    _install_error_handlers(app)

    from ragmeter.web import api, pages

    app.include_router(api.router)
    _mount_ingest(app, opened)
    app.include_router(pages.router)
    app.mount("/static", _CachedStatic(directory=_HERE / "static"), name="static")
    app.add_middleware(_CatchAll)
    app.add_middleware(GZipMiddleware, minimum_size=GZIP_MIN_BYTES)
    if token:
        # Added last, so it runs first: nothing is served without the token.
        app.add_middleware(_TokenGuard, token=token)
    # Outermost: a foreign Host (DNS rebinding) is refused before the token or a page runs.
    app.add_middleware(HostGuard, hosts=allowed_hosts(None) if hosts is None else hosts)
    return app


def _freeze_startup_heap() -> None:
    """Leave the objects alive when the dashboard starts (modules, classes: FastAPI, pydantic,
    SQLAlchemy, numpy) out of the garbage collector's full passes while it serves.

    Reading a 2,000-question run allocates enough to trigger full passes, and each one walked
    that whole startup heap: a third of the run page's cold server time (issue 15.5). The
    frozen objects are long-lived anyway; ``gc.unfreeze()`` gives them back at shutdown, so
    garbage frozen with them is collected then.
    """
    gc.freeze()


def _mount_ingest(app: FastAPI, store: Store) -> None:
    """Mount the query-log ingest API (POST /api/log, /api/feedback) when it exists."""
    try:
        from ragmeter.web.ingest import ingest_router  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return
    from ragmeter.feedback.querylog import QueryLogger

    logger = QueryLogger(store)
    app.state.query_logger = logger
    app.include_router(ingest_router(logger))
