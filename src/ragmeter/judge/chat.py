"""One user prompt in, the model's text out: the judge API for pipeline stages.

The LLM re-ranker (``pipelines/rerank.py``) and LLM query expansion
(``pipelines/rewrite.py``) call a model once per question. They describe where with
:class:`LLMSettings` (from a pipeline file's ``llm`` section), get a
:class:`~ragmeter.judge.client.JudgeClient` from :func:`make_client`, and call
:func:`chat`. So they share the judge client's retries (the one policy of
``ragmeter._http``), its timeouts and its error handling; a failed call is a
:class:`~ragmeter.errors.RetrieverError`, which evaluation records as that question's
error row. No model is ever chosen by default.

>>> settings = LLMSettings(base_url="http://127.0.0.1:8011/v1", model="judge")
>>> make_client(settings)
JudgeClient(model='judge', base_url='http://127.0.0.1:8011/v1')
>>> parse_json_object('Sure: {"scores": [1, 2]}', "llm")
{'scores': [1, 2]}
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass, field
from typing import Any

from ragmeter._redact import redact_url
from ragmeter.errors import ConfigError, RetrieverError
from ragmeter.judge.client import DEFAULT_MAX_RETRIES, JudgeCallError, JudgeClient

__all__ = [
    "DEFAULT_LLM_TIMEOUT",
    "LLM_MAX_RETRIES",
    "LLMSettings",
    "chat",
    "make_client",
    "parse_json_object",
    "remake_client",
]

#: Seconds one chat call may take.
DEFAULT_LLM_TIMEOUT = 60.0
#: Retries on rate limits, 5xx, timeouts and connection errors (the shared policy).
LLM_MAX_RETRIES = DEFAULT_MAX_RETRIES
#: Completion budget of one pipeline-stage answer.
LLM_MAX_TOKENS = 512


@dataclass(frozen=True)
class LLMSettings:
    """Where and what to call. ``api_key`` is never stored in a run config.

    >>> LLMSettings(base_url="http://127.0.0.1:8011/v1", model="judge").public()["model"]
    'judge'
    """

    base_url: str
    model: str
    api_key: str = field(default="not-needed", repr=False)
    timeout: float = DEFAULT_LLM_TIMEOUT

    def public(self) -> dict[str, Any]:
        """The settings without the key (nor a URL password), for run configs."""
        return {"base_url": redact_url(self.base_url), "model": self.model, "timeout": self.timeout}


def make_client(settings: LLMSettings) -> JudgeClient:
    """The judge client for ``settings``; ConfigError when ``openai`` is not installed."""
    if importlib.util.find_spec("openai") is None:
        raise ConfigError(
            "LLM re-ranking and query expansion need the openai package: pip install openai"
        )
    return JudgeClient(
        model=settings.model,
        base_url=settings.base_url,
        api_key=settings.api_key,
        timeout=settings.timeout,
        max_retries=LLM_MAX_RETRIES,
        max_tokens=LLM_MAX_TOKENS,
    )


def remake_client(owner: Any) -> JudgeClient:
    """A new client from ``owner.settings``: how an unpickled LLM stage gets its own."""
    return make_client(owner.settings)


def chat(
    client: JudgeClient, settings: LLMSettings, prompt: str, *, json_mode: bool = False
) -> str:
    """One user message in, the assistant's text out (blocking).

    ``json_mode`` asks for a JSON object (``response_format``); parse the text with
    :func:`parse_json_object`. Failures after the client's retries, and empty
    answers, are :class:`~ragmeter.errors.RetrieverError`.
    """
    where = redact_url(settings.base_url)
    try:
        content = client.complete_text([{"role": "user", "content": prompt}], json_object=json_mode)
    except JudgeCallError as exc:
        raise RetrieverError(f"LLM call to {where} failed: {exc}") from None
    if not content:
        raise RetrieverError(f"LLM at {where} returned an empty answer")
    return content


def parse_json_object(text: str, source: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (models wrap JSON in prose or code fences).

    >>> parse_json_object("no json here", "llm")
    Traceback (most recent call last):
    ...
    ragmeter.errors.RetrieverError: llm: expected a JSON object, got 'no json here'
    """
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise RetrieverError(f"{source}: expected a JSON object, got {text[:80]!r}")
    try:
        value = json.loads(text[start : end + 1], strict=False)
    except json.JSONDecodeError as exc:
        raise RetrieverError(f"{source}: answer is not valid JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise RetrieverError(f"{source}: expected a JSON object")
    return value
