"""The one redaction function: what may be stored or printed of a spec or a config.

Every writer of specs and configs into the store, and every printer of them, passes
them through :func:`redact`; so do the store's writers of results (chunk texts,
contexts, errors) and of the query log (meta, hits), and ``store redact``/``store copy``
through ``store._scrub`` (issue 19.2). It hides

- the password of a URL's userinfo (``http://user:***@host/``);
- the values of query parameters whose names look like credentials (``api_key``,
  ``token``, ``key``, ``secret``, ``password``, ``auth``, ``signature``…);
- in mappings, the values of keys that look like credentials or ``Authorization``-like
  headers (``Authorization``, ``X-Api-Key``, ``Cookie``…).

URLs are found anywhere inside a string, so ``"hybrid over http://u:p@h/x"`` is covered.

>>> redact("http://user:pass@127.0.0.1:8000/ok?api_key=KEY&k=10")
'http://user:***@127.0.0.1:8000/ok?api_key=***&k=10'
>>> redact({"url": "https://h/s?token=abc", "headers": {"Authorization": "Bearer x"}, "k": 5})
{'url': 'https://h/s?token=***', 'headers': {'Authorization': '***'}, 'k': 5}
>>> is_redacted("http://user:***@h/x"), is_redacted("bm25")
(True, False)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

__all__ = ["MASK", "is_redacted", "redact", "redact_url", "secret_name"]

#: What a hidden value is replaced with.
MASK = "***"

# A name looks like a credential when one of its words (split on anything but
# letters and digits) is one of these, or starts with one of _SECRET_PREFIXES.
_SECRET_WORDS = frozenset(
    {
        "key",
        "apikey",
        "token",
        "secret",
        "password",
        "passwd",
        "pwd",
        "pass",
        "auth",
        "authorization",
        "credential",
        "credentials",
        "signature",
        "sig",
        "cookie",
        "session",
        "sessionid",
        "jwt",
        "bearer",
    }
)
_SECRET_PREFIXES = ("passw", "authoriz", "authent", "authn", "authz", "apikey")
# ... unless its last word says the value only names or points at the secret
# (``api_key_env: OPENAI_API_KEY``, ``token_file: ~/.token``).
_POINTER_WORDS = frozenset({"env", "var", "file", "path", "name", "names", "header", "headers"})
_WORD = re.compile(r"[a-z0-9]+")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
# A query parameter: name, "=", value (up to the next & or ; or #).
_PARAM = re.compile(r"(?P<name>[^&;=#]+)=(?P<value>[^&;#]*)")

T = TypeVar("T")


def secret_name(name: str) -> bool:
    """Whether a parameter, header or config key name looks like a credential.

    >>> [secret_name(n) for n in ("api_key", "X-Api-Key", "access_token", "k", "monkey", "author")]
    [True, True, True, False, False, False]
    >>> secret_name("api_key_env")  # names the variable that holds the key
    False
    """
    lowered = name.lower()
    words = _WORD.findall(lowered)
    if words and words[-1] in _POINTER_WORDS:
        return False
    return any(w in _SECRET_WORDS or w.startswith(_SECRET_PREFIXES) for w in words) or (
        lowered.replace("-", "").replace("_", "") in _SECRET_WORDS
    )


def redact_url(url: str) -> str:
    """Hide a URL's password and its credential-like query parameters.

    >>> redact_url("https://bob:s3cret@search.example/api")
    'https://bob:***@search.example/api'
    >>> redact_url("http://h/x?q=cats&access_token=t0k")
    'http://h/x?q=cats&access_token=***'
    """
    try:
        parts = urlsplit(url)
        password = parts.password
        port = parts.port
    except ValueError:  # not a URL we can take apart: hide everything after the scheme
        scheme, sep, _ = url.partition("://")
        return f"{scheme}{sep}{MASK}" if sep else url
    netloc = parts.netloc
    if password is not None:
        host = parts.hostname or ""
        if ":" in host:  # an IPv6 literal
            host = f"[{host}]"
        if port is not None:
            host = f"{host}:{port}"
        netloc = f"{parts.username}:{MASK}@{host}"
    query = _PARAM.sub(_mask_param, parts.query)
    fragment = _PARAM.sub(_mask_param, parts.fragment)
    if (netloc, query, fragment) == (parts.netloc, parts.query, parts.fragment):
        return url
    return urlunsplit(parts._replace(netloc=netloc, query=query, fragment=fragment))


def _mask_param(match: re.Match[str]) -> str:
    name = match.group("name")
    if secret_name(name) and match.group("value"):
        return f"{name}={MASK}"
    return match.group(0)


def _redact_match(match: re.Match[str]) -> str:
    url = match.group(0)
    # Only userinfo ("@") or a parameter ("=") can hold a secret: most links in chunk texts
    # have neither and need no parsing (results are redacted as they are written).
    return redact_url(url) if "@" in url or "=" in url else url


def _redact_text(text: str) -> str:
    if "://" not in text:
        return text
    return _URL.sub(_redact_match, text)


def redact(value: T) -> T:
    """``value`` with every secret hidden (strings, and mappings/lists at any depth).

    Returns a new value; the argument is not changed. Keys of mappings that look like
    credentials keep their name and lose their value (unless it is empty, a number or
    a boolean, which carry no secret: ``{"max_tokens": 512}`` stays).

    >>> redact(["run:x.trec", {"api_key": "sk-1", "retries": 3}])
    ['run:x.trec', {'api_key': '***', 'retries': 3}]
    """
    return _redact(value)  # type: ignore[no-any-return]


def _redact(value: Any) -> Any:
    if isinstance(value, str):
        return _redact_text(value)
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if isinstance(key, str) and secret_name(key) and _holds_secret(item):
                out[key] = MASK
            else:
                out[key] = _redact(item)
        return out
    if isinstance(value, list | tuple):
        return type(value)(_redact(item) for item in value)
    return value


def _holds_secret(item: Any) -> bool:
    if item is None or isinstance(item, bool | int | float):
        return False
    return not (isinstance(item, str | list | tuple | Mapping) and not item)


def is_redacted(text: str) -> bool:
    """Whether ``text`` lost something to :func:`redact` (so it cannot be used as is).

    >>> is_redacted("http://h/x?token=***"), is_redacted(redact("http://h/x?q=1"))
    (True, False)
    """
    return MASK in text
