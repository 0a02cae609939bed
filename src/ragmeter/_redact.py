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

Patterns miss a secret that travels alone: a header value read with ``env:``, a service
echoing the ``Authorization`` header in an error body, an ``api_key`` inside a request
template (issue 27.3-5). So the places that *receive* a secret tell this module its value
(:func:`remember_secret`: ``env:`` header values and credential-named headers, credential
parameters of request templates, URL passwords and credential query parameters of a
retriever URL), and :func:`redact` then also masks every known value, wherever it appears
in a string, for the rest of the process. Values shorter than :data:`MIN_KNOWN_CHARS` are not
masked by value (masking ``"abc"`` in every chunk text would change the texts the metrics
read); they are still hidden where a pattern or a credential-named key finds them.

>>> redact("http://user:pass@127.0.0.1:8000/ok?api_key=KEY&k=10")
'http://user:***@127.0.0.1:8000/ok?api_key=***&k=10'
>>> redact({"url": "https://h/s?token=abc", "headers": {"Authorization": "Bearer x"}, "k": 5})
{'url': 'https://h/s?token=***', 'headers': {'Authorization': '***'}, 'k': 5}
>>> is_redacted("http://user:***@h/x"), is_redacted("bm25")
(True, False)
>>> remember_secret("Bearer sk-doctest-0123456789")
>>> redact("401: bad token sk-doctest-0123456789 for Bearer sk-doctest-0123456789")
'401: bad token *** for ***'
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "MASK",
    "MIN_KNOWN_CHARS",
    "forget_secrets",
    "is_redacted",
    "mask_known",
    "redact",
    "redact_template",
    "redact_url",
    "remember_secret",
    "remember_url_secrets",
    "secret_name",
    "template_secrets",
    "unchanged_by_redact",
]

#: What a hidden value is replaced with.
MASK = "***"
#: Shortest value masked wherever it appears once it is known to be a secret.
MIN_KNOWN_CHARS = 8
#: Shortest start of a known secret masked at the end of a text cut short (a snippet).
_MIN_TAIL_CHARS = 4

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

# A JSON pair inside a request template: "name": "value" (the value a plain string).
_JSON_PAIR = re.compile(r'"(?P<name>[^"\\]{1,200})"(?P<sep>\s*:\s*)"(?P<value>(?:[^"\\]|\\.)*)"')
_PLACEHOLDERS = ("{question}", "{k}")
# What h11 said of a header value it refused, quoting the value (stores written before
# issue 27.3 hold it in results.error): the quoted value is hidden.
_ILLEGAL_HEADER = re.compile(r"(Illegal header value )b?(['\"])(?:\\.|(?!\2).)*\2")

T = TypeVar("T")

# Secrets this process was given, longest first (so "Bearer X" goes before "X").
_known: tuple[str, ...] = ()
_known_lock = threading.Lock()


def remember_secret(value: str) -> None:
    """Mask ``value`` wherever :func:`redact` meets it from now on, in this process.

    A value made of words (``"Bearer sk-..."``) also has each long enough word remembered,
    so the token alone is masked too. Values shorter than :data:`MIN_KNOWN_CHARS` are ignored.
    """
    global _known
    candidates = {value, value.strip(), *value.split()}
    new = {c for c in candidates if len(c) >= MIN_KNOWN_CHARS and c != MASK}
    with _known_lock:
        if new - set(_known):
            _known = tuple(sorted(set(_known) | new, key=lambda c: (-len(c), c)))


def forget_secrets() -> None:
    """Forget every remembered value (tests start each case from none)."""
    global _known
    with _known_lock:
        _known = ()


def remember_url_secrets(url: str) -> None:
    """Remember a URL's password and the values of its credential-like query parameters.

    >>> remember_url_secrets("http://bob:pw-doctest-42@h/x?api_key=key-doctest-42&k=3")
    >>> redact("echo: pw-doctest-42 key-doctest-42")
    'echo: *** ***'
    """
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return
    if password:
        remember_secret(password)
    for piece in (parts.query, parts.fragment):
        for match in _PARAM.finditer(piece):
            if secret_name(match.group("name")) and match.group("value"):
                remember_secret(match.group("value"))


def mask_known(text: str, extra: Iterable[str] = (), *, cut: bool = False) -> str:
    """``text`` with every known secret (and each of ``extra``) replaced by :data:`MASK`.

    ``cut`` says ``text`` was cut short: an ending that is the start of a secret
    (at least a few characters of it) is masked too, so half a token does not leak.

    >>> mask_known("got Bearer tok-123456789", ["Bearer tok-123456789"])
    'got ***'
    >>> mask_known("echo: Bearer tok-12", ["Bearer tok-123456789"], cut=True)
    'echo: ***'
    """
    local = [v for v in extra if len(v) >= MIN_KNOWN_CHARS]
    secrets = sorted({*_known, *local}, key=len, reverse=True) if local else _known
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    if cut:
        for secret in secrets:
            for size in range(min(len(secret) - 1, len(text)), _MIN_TAIL_CHARS - 1, -1):
                if text.endswith(secret[:size]):
                    return text[:-size] + MASK
    return text


def template_secrets(template: str) -> list[str]:
    """The values of credential-named parameters written into a request template: the
    ``name=value`` pairs of a query string and the ``"name": "value"`` pairs of JSON, without
    the ``{question}``/``{k}`` placeholders.

    >>> template_secrets('q={question}&api_key=K1&size={k}')
    ['K1']
    >>> template_secrets('{"query": "{question}", "auth": {"token": "T1"}}')
    ['T1']
    """
    pattern = _JSON_PAIR if _is_json(template) else _PARAM
    return [m.group("value") for m in pattern.finditer(template) if _template_secret(m)]


def redact_template(template: str) -> str:
    """A request template with the values of its credential-named parameters hidden.

    >>> redact_template('q={question}&api_key=K1&size={k}')
    'q={question}&api_key=***&size={k}'
    >>> redact_template('{"query": "{question}", "token": "T1", "n": {k}}')
    '{"query": "{question}", "token": "***", "n": {k}}'
    """

    def json_pair(match: re.Match[str]) -> str:
        if not _template_secret(match):
            return match.group(0)
        return f'"{match.group("name")}"{match.group("sep")}"{MASK}"'

    def form_pair(match: re.Match[str]) -> str:
        return f"{match.group('name')}={MASK}" if _template_secret(match) else match.group(0)

    if _is_json(template):
        return _JSON_PAIR.sub(json_pair, template)
    return _PARAM.sub(form_pair, template)


def _is_json(template: str) -> bool:
    # A POST template is JSON; a GET template is a query string.
    return template.lstrip().startswith(("{", "["))


def _template_secret(match: re.Match[str]) -> bool:
    name = match.group("name").strip()
    value = match.group("value")
    return (
        bool(value)
        and value != MASK
        and secret_name(name)
        and not any(p in value for p in _PLACEHOLDERS)
    )


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


# Result rows repeat a handful of keys (grades, texts, covers…): each is judged once.
_secret_key = functools.lru_cache(maxsize=4096)(secret_name)


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
    if "://" in text:
        text = _URL.sub(_redact_match, text)
    if "Illegal header value" in text:
        text = _ILLEGAL_HEADER.sub(rf"\g<1>{MASK}", text)
    return mask_known(text) if _known else text


def redact(value: T) -> T:
    """``value`` with every secret hidden (strings, and mappings/lists at any depth).

    Returns a new value; the argument is not changed. Keys of mappings that look like
    credentials keep their name and lose their value (unless it is empty, a number or
    a boolean, which carry no secret: ``{"max_tokens": 512}`` stays).

    >>> redact(["run:x.trec", {"api_key": "sk-1", "retries": 3}])
    ['run:x.trec', {'api_key': '***', 'retries': 3}]
    """
    return _redact(value)  # type: ignore[no-any-return]


# Values that hold no text, so nothing to hide: a list of only these is copied as it is.
_PLAIN = frozenset({type(None), bool, int, float})


def _redact(value: Any) -> Any:
    if isinstance(value, str):
        return _redact_text(value)
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if isinstance(key, str) and _secret_key(key) and _holds_secret(item):
                out[key] = MASK
            elif key == "body" and isinstance(item, str):
                # A request template (runs' config.retriever.request.body), issue 27.5.
                out[key] = _redact_text(redact_template(item))
            else:
                out[key] = _redact(item)
        return out
    if isinstance(value, list | tuple):
        if _PLAIN.issuperset(map(type, value)):  # grades, ranks, empty texts (issue 29.2)
            return type(value)(value)
        return type(value)(_redact(item) for item in value)
    return value


def unchanged_by_redact(mapping: Mapping[Any, Any]) -> bool:
    """Whether :func:`redact` would give ``mapping`` back as it is: every value is a number,
    a boolean or None, or a list of those under a key that does not look like a credential
    (a result's grades and empty texts, its summary). Writing such a row skips the copy
    (issue 29.2).

    >>> unchanged_by_redact({"grades": [1, 0], "texts": [None, None], "first": 1})
    True
    >>> unchanged_by_redact({"token_ids": [1, 2]}), unchanged_by_redact({"gen": "error"})
    (False, False)
    """
    for key, value in mapping.items():
        kind = type(value)
        if kind in _PLAIN:
            continue  # a credential-named key keeps a number (_holds_secret)
        if (kind is not list and kind is not tuple) or type(key) is not str or _secret_key(key):
            return False
        # A list of only None (a result's texts) is the common case: counted in C.
        if value.count(None) != len(value) and not _PLAIN.issuperset(map(type, value)):
            return False
    return True


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
