"""Request checks every ragmeter server runs first: the Host and Origin headers, JSON POSTs.

- **Host** (DNS rebinding): a page on ``attacker.example`` can point its name at
  127.0.0.1 and read a loopback server from the victim's browser; the request then
  carries ``Host: attacker.example``. ``HostGuard`` answers any Host outside the
  allowed set with 421 and serves nothing. Allowed: the bound host, the
  ``localhost`` / ``127.0.0.1`` / ``[::1]`` forms, and whatever ``--allowed-host``
  adds (``*`` turns the check off, for a server behind a proxy that checks it).
- **Origin** (cross-site requests): a request whose ``Origin`` names another host
  gets 403. A write (any method but GET, HEAD, OPTIONS) that carries an ``Origin`` must
  come from this very origin, scheme, host *and port* (:func:`same_origin`): a page on
  another port of the same host is another site to the browser's CORS but not to its
  ``SameSite`` cookies, so a host-only check let it post into a token-protected dashboard
  (issue 27.6). ``--allowed-host '*'`` widens the Host check only, never this one. Browsers
  send ``Origin`` on every POST; a client without one (curl, a script) is no browser victim.
- **JSON only**: ``require_json`` refuses a POST body that is not
  ``Content-Type: application/json`` with 415, so a ``<form>`` on another site
  (``text/plain`` or urlencoded, which need no CORS preflight) cannot write.

>>> sorted(allowed_hosts("127.0.0.1", ["rag.internal"]))
['127.0.0.1', '::1', 'localhost', 'rag.internal']
>>> host_of("[::1]:8765"), host_of("LocalHost:80"), host_of("http://a.example:9/x")
('::1', 'localhost', 'a.example')
>>> same_origin("http://127.0.0.1:8765", "http", "127.0.0.1:8765")
True
>>> same_origin("http://127.0.0.1:9911", "http", "127.0.0.1:8765")
False
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
    "same_origin",
]

#: Names of this machine that are always allowed in a Host header.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
#: ``--allowed-host '*'``: accept any Host (only behind a proxy that checks it).
ANY_HOST = "*"
#: Bind addresses that are not a name a client would send in Host.
_WILDCARD_BINDS = ("", "0.0.0.0", "::", "0")
#: Methods that only read: the Origin check for them is the Host allow-list.
_READS = ("GET", "HEAD", "OPTIONS")
_DEFAULT_PORTS = {"http": 80, "https": 443}


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


def _origin_key(scheme: str, netloc: str) -> tuple[str, str, int | None] | None:
    try:
        parts = urlsplit(f"{scheme}://{netloc}")
        port = parts.port
    except ValueError:
        return None
    if parts.hostname is None or parts.path or parts.query or parts.username is not None:
        return None
    scheme = scheme.lower()
    return scheme, parts.hostname.lower(), port or _DEFAULT_PORTS.get(scheme)


def same_origin(origin: str, scheme: str, host: str) -> bool:
    """Whether an ``Origin`` header names the origin a request was sent to: the same scheme,
    host and port (a missing port is the scheme's default).

    >>> same_origin("https://rag.example", "https", "rag.example:443")
    True
    >>> same_origin("http://rag.example", "https", "rag.example")
    False
    """
    given_scheme, sep, netloc = origin.strip().partition("://")
    if not sep:
        return False
    mine = _origin_key({"ws": "http", "wss": "https"}.get(scheme, scheme), host)
    return mine is not None and _origin_key(given_scheme, netloc) == mine


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
        writes = scope.get("method") not in _READS
        if (
            writes
            and origin is not None
            and origin != "null"
            and not same_origin(origin, scope.get("scheme", "http"), headers.get("host", ""))
        ):
            message = (
                "cross-origin write refused: Origin is not this server's scheme, host and port"
            )
            await _refuse(403, message)(scope, receive, send)
            return
        if origin is not None and origin != "null" and not self._allowed(host_of(origin)):
            message = "cross-origin request refused: Origin is not this server"
            await _refuse(403, message)(scope, receive, send)
            return
        if origin == "null" and writes:
            # Sandboxed frames and file:// pages send Origin: null; they cannot write.
            await _refuse(403, "cross-origin request refused: Origin null")(scope, receive, send)
            return
        await self.app(scope, receive, send)
