"""HTTP search services as they are: request templates, a path to the hits, presets.

An :class:`HttpShape` says how to ask (method, a JSON body or query-string template with
``{question}`` and ``{k}``) and where the hits are in the answer (``hits_path``). Presets
cover the shapes people run:

- ``elasticsearch`` / ``opensearch``: ``POST …/_search`` with a ``multi_match`` query and
  ``size``; the answer's ``hits.hits[]`` (``_id``, ``_score``, ``_source``) are the hits.
- ``openai-vector-store``: ``POST …/vector_stores/ID/search`` with ``query`` and
  ``max_num_results``; the page's ``data[]`` (``file_id``, ``filename``, ``score``,
  ``content[].text``) are the hits, ``filename`` their document.
- ``langserve``: ``POST …/invoke`` with ``{"input": question}``; ``output`` holds
  serialised LangChain documents (``page_content``, ``metadata.source``); cut to ``k``.

>>> shape = HttpShape.of(body='{"query": "{question}", "top_k": {k}}')
>>> shape.request("say \\"hi\\"", 5)["json"]
{'query': 'say "hi"', 'top_k': 5}
>>> HttpShape.of(method="GET", body="q={question}&size={k}").request("a b", 3)["params"]
{'q': 'a b', 'size': '3'}
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from ragmeter._redact import redact_template, remember_secret, secret_name, template_secrets
from ragmeter.errors import ConfigError, RetrieverError
from ragmeter.retrievers.ids import resolve_field

__all__ = ["DEFAULT_BODY", "PRESETS", "HttpShape", "check_header_value", "resolve_header_values"]

#: What ragmeter's own protocol sends when no template is given.
DEFAULT_BODY = '{"question": "{question}", "k": {k}}'
#: The default query string of ``GET`` requests.
DEFAULT_QUERY = "question={question}&k={k}"
_METHODS = ("GET", "POST")
# A question used to check a template renders to JSON (quotes and a backslash included).
_PROBE = 'a "quoted" \\ question'


def check_header_value(name: str, value: str, source: str = "") -> None:
    """Refuse a header value HTTP cannot carry, before any request is made (issue 27.3).

    A line break, a control character, a non-ASCII character or whitespace at either end
    (a token file's trailing newline read with ``env:``) would make the HTTP library fail
    with an error that quotes the whole value, a credential. The message names the header
    and the position, never the value.

    >>> check_header_value("Authorization", "Bearer tok\\n", "env:TOKEN")
    Traceback (most recent call last):
    ...
    ragmeter.errors.ConfigError: header Authorization (from env:TOKEN): its value has a line break (character 11 of 11); it is not shown here: remove it
    """
    where = f"header {name}" + (f" (from {source})" if source else "")
    for position, char in enumerate(value, start=1):
        if char == "\t" or " " <= char <= "~":
            continue
        kind = "a line break" if char in "\r\n" else "a control or non-ASCII character"
        raise ConfigError(
            f"{where}: its value has {kind} (character {position} of {len(value)}); "
            "it is not shown here: remove it"
        )
    if value != value.strip(" \t"):
        end = "start" if value[:1] in " \t" else "end"
        position = 1 if end == "start" else len(value)
        raise ConfigError(
            f"{where}: its value has whitespace at its {end} "
            f"(character {position} of {len(value)}); it is not shown here: remove it"
        )


def resolve_header_values(headers: Mapping[str, str], env: Mapping[str, str]) -> dict[str, str]:
    """Replace ``env:NAME`` header values with the variable's value from ``env``.

    The value never appears in a message: a missing variable is named, not shown.

    >>> resolve_header_values({"Authorization": "env:TOKEN"}, {"TOKEN": "Bearer s3"})
    {'Authorization': 'Bearer s3'}
    >>> resolve_header_values({"X": "env:NOPE"}, {})
    Traceback (most recent call last):
    ...
    ragmeter.errors.ConfigError: header X reads the environment variable NOPE, which is not set
    """
    out: dict[str, str] = {}
    for name, value in headers.items():
        if value.startswith("env:"):
            variable = value[len("env:") :].strip()
            if variable not in env:
                raise ConfigError(
                    f"header {name} reads the environment variable {variable}, which is not set"
                )
            value = env[variable]
            check_header_value(name, value, f"env:{variable}")
            remember_secret(value)  # masked in every message and stored text from now on
        elif secret_name(name):
            remember_secret(value)
        out[name] = value
    return out


def _render(template: str, question: str, k: int) -> str:
    # The question goes in JSON-escaped, so it may hold quotes and newlines.
    escaped = json.dumps(question, ensure_ascii=False)[1:-1]
    return template.replace("{question}", escaped).replace("{k}", str(k))


def _openai_page_hit(item: object) -> object:
    if not isinstance(item, Mapping) or "file_id" not in item:
        return item
    parts = item.get("content") or []
    text = "\n".join(
        str(part.get("text", "")) for part in parts if isinstance(part, Mapping)
    ).strip()
    return {
        "id": item["file_id"],
        "doc": item.get("filename") or item["file_id"],
        "score": item.get("score"),
        "text": text or None,
        "metadata": dict(item.get("attributes") or {}),
    }


def _langserve_hit(item: object) -> object:
    # LangServe serialises a LangChain Document as {"page_content", "metadata", "type", "id"}.
    if not isinstance(item, Mapping) or "page_content" not in item:
        return item
    metadata = dict(item.get("metadata") or {})
    return {
        "id": item.get("id") or None,
        "doc": metadata.get("source") or item.get("id"),
        "text": item["page_content"],
        "metadata": metadata,
    }


@dataclass(frozen=True)
class HttpShape:
    """How to ask a search service and where its hits are.

    ``body`` is a JSON template for ``POST`` (``{question}`` inside a string, ``{k}`` bare)
    or a query-string template for ``GET``; ``hits_path`` a dotted path to the list of hits
    (``results``, ``data``, ``output``); ``takes_k`` False when the service cannot be told
    ``k`` (the hits are then cut to ``k``).
    """

    method: str = "POST"
    body: str = DEFAULT_BODY
    hits_path: str | None = None
    preset: str | None = None
    takes_k: bool = True
    hit: Callable[[object], object] | None = None

    @classmethod
    def of(
        cls,
        *,
        method: str | None = None,
        body: str | None = None,
        hits_path: str | None = None,
        preset: str | None = None,
    ) -> HttpShape:
        """The shape of a preset (if named) with the given fields overriding it; checked."""
        if preset and preset not in PRESETS:
            raise ConfigError(f"unknown HTTP preset {preset!r}; use one of: {', '.join(PRESETS)}")
        base = PRESETS[preset] if preset else cls()
        verb = (method or base.method).upper()
        if verb not in _METHODS:
            raise ConfigError(f"HTTP method must be GET or POST, got {method!r}")
        if body is None:
            body = base.body if verb == base.method else DEFAULT_QUERY
        shape = cls(
            method=verb,
            body=body,
            hits_path=hits_path or base.hits_path,
            preset=preset,
            takes_k=base.takes_k and "{k}" in body,
            hit=base.hit,
        )
        shape.request(_PROBE, 10)  # a broken template fails now, not on every question
        for secret in template_secrets(body):
            remember_secret(secret)  # an api_key written into the template (issue 27.5)
        return shape

    @property
    def is_default(self) -> bool:
        """True for ragmeter's own protocol (nothing to record)."""
        return self == HttpShape()

    def request(self, question: str, k: int) -> dict[str, Any]:
        """Keyword arguments for ``httpx.Client.request`` (``method``, ``json``/``params``)."""
        if self.method == "GET":
            # Filled in after parsing, so a question holding "&" or "=" stays one value.
            pairs = parse_qsl(self.body, keep_blank_values=True)
            return {
                "method": "GET",
                "params": {
                    key: value.replace("{question}", question).replace("{k}", str(k))
                    for key, value in pairs
                },
            }
        rendered = _render(self.body, question, k)
        try:
            payload = json.loads(rendered)
        except ValueError as exc:
            raise ConfigError(
                f"--http-body is not JSON once {{question}} and {{k}} are filled in: {exc}; "
                'write {question} inside quotes and {k} bare, e.g. {"q": "{question}", "n": {k}}'
            ) from None
        return {"method": "POST", "json": payload}

    def hits_of(self, data: object, source: str) -> object:
        """The part of a decoded answer that holds the hits (and any ``answer``)."""
        if self.hits_path:
            found = resolve_field(data, self.hits_path)
            if found is None:
                keys = list(data)[:8] if isinstance(data, Mapping) else type(data).__name__
                raise RetrieverError(
                    f"no hits at --hits-path {self.hits_path} in the answer from {source} "
                    f"(it has: {keys})"
                )
            data = found
        if self.hit is not None and isinstance(data, list):
            data = [self.hit(item) for item in data]
        return data

    def config(self) -> dict[str, Any]:
        """What a run stores about the shape: credential-named template values hidden."""
        out: dict[str, Any] = {"method": self.method, "body": redact_template(self.body)}
        if self.preset:
            out["preset"] = self.preset
        if self.hits_path:
            out["hits_path"] = self.hits_path
        return out


_SEARCH = HttpShape(body='{"query": {"multi_match": {"query": "{question}"}}, "size": {k}}')

#: Named shapes of services people run (``--http-preset NAME``).
PRESETS: dict[str, HttpShape] = {
    "elasticsearch": HttpShape(body=_SEARCH.body, preset="elasticsearch"),
    "opensearch": HttpShape(body=_SEARCH.body, preset="opensearch"),
    "openai-vector-store": HttpShape(
        body='{"query": "{question}", "max_num_results": {k}}',
        hits_path="data",
        preset="openai-vector-store",
        hit=_openai_page_hit,
    ),
    "langserve": HttpShape(
        body='{"input": "{question}"}',
        hits_path="output",
        preset="langserve",
        takes_k=False,
        hit=_langserve_hit,
    ),
}
