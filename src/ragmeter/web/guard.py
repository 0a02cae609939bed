"""Request checks every ragmeter server runs first: the Host and Origin headers, JSON POSTs.

- **Host** (DNS rebinding): a page on ``attacker.example`` can point its name at
  127.0.0.1 and read a loopback server from the victim's browser; the request then
  carries ``Host: attacker.example``. ``HostGuard`` answers any Host outside the
  allowed set with 421 and serves nothing. Allowed: the bound host, the
  ``localhost`` / ``127.0.0.1`` / ``[::1]`` forms, and whatever ``--allowed-host``
  adds (``*`` turns the check off, for a server behind a proxy that checks it).
- **Origin** (cross-site requests): a request whose ``Origin`` names another host
  gets 403. Browsers send ``Origin`` on every cross-origin POST.
- **JSON only**: ``require_json`` refuses a POST body that is not
  ``Content-Type: application/json`` with 415, so a ``<form>`` on another site
  (``text/plain`` or urlencoded, which need no CORS preflight) cannot write.

>>> sorted(allowed_hosts("127.0.0.1", ["rag.internal"]))
['127.0.0.1', '::1', 'localhost', 'rag.internal']
>>> host_of("[::1]:8765"), host_of("LocalHost:80"), host_of("http://a.example:9/x")
('::1', 'localhost', 'a.example')
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ragmeter.errors import NotJSON

__all__ = [
    "ANY_HOST",
    "LOOPBACK_HOSTS",
    "HostGuard",
    "NotJSON",
    "allowed_hosts",
    "host_of",
    "is_json",
]

#: Names of this machine that are always allowed in a Host header.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
#: ``--allowed-host '*'``: accept any Host (only behind a proxy that checks it).
ANY_HOST = "*"
#: Bind addresses that are not a name a client would send in Host.
_WILDCARD_BINDS = ("", "0.0.0.0", "::", "0")


def host_of(value: str) -> str:
    """The lower-case host of a Host header or Origin URL, without port or brackets."""
    value = value.strip().lower()
    if "://" in value:
        return (urlsplit(value).hostname or "").lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value[1:]
    if value.count(":") == 1:
        return value.split(":", 1)[0]
    return value


def allowed_hosts(bound: str | None, extra: Iterable[str] = ()) -> frozenset[str]:
    """The Host values a server bound to ``bound`` answers: loopback forms + ``extra``."""
    hosts = set(LOOPBACK_HOSTS)
    if bound is not None and bound.strip("[]") not in _WILDCARD_BINDS:
        hosts.add(host_of(bound))
    hosts.update(ANY_HOST if h.strip() == ANY_HOST else host_of(h) for h in extra if h.strip())
    return frozenset(hosts)


def is_json(content_type: str | None) -> bool:
    """Whether a Content-Type header announces JSON (parameters such as charset allowed).

    >>> is_json("application/json; charset=utf-8"), is_json("text/plain"), is_json(None)
    (True, False, False)
    """
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media == "application/json"


def require_json(headers: Headers) -> None:
    """Raise ``NotJSON`` unless the request says its body is JSON."""
    if not is_json(headers.get("content-type")):
        given = headers.get("content-type") or "none"
        raise NotJSON(f"Content-Type must be application/json (got {given})")


def _refuse(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"status": status, "message": message}}, status_code=status)


class HostGuard:
    """ASGI middleware: refuse a foreign Host (421) or Origin (403) before anything runs.

    ``app.add_middleware(HostGuard, hosts=allowed_hosts("127.0.0.1"))``
    """

    def __init__(self, app: ASGIApp, hosts: Iterable[str]):
        self.app = app
        self.hosts = frozenset(hosts)

    def _allowed(self, host: str) -> bool:
        return ANY_HOST in self.hosts or host in self.hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = host_of(headers.get("host", ""))
        if not self._allowed(host):
            shown = host[:100] or "none"
            message = (
                f"Host {shown!r} is not served here (allowed: {', '.join(sorted(self.hosts))}); "
                "add it with --allowed-host if this is your server's name"
            )
            await _refuse(421, message)(scope, receive, send)
            return
        origin = headers.get("origin")
        if origin is not None and origin != "null" and not self._allowed(host_of(origin)):
            message = "cross-origin request refused: Origin is not this server"
            await _refuse(403, message)(scope, receive, send)
            return
        if origin == "null" and scope.get("method") not in ("GET", "HEAD", "OPTIONS"):
            # Sandboxed frames and file:// pages send Origin: null; they cannot write.
            await _refuse(403, "cross-origin request refused: Origin null")(scope, receive, send)
            return
        await self.app(scope, receive, send)
