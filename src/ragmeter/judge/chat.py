"""A minimal OpenAI-compatible chat call for the LLM re-ranker and query expansion.

Temporary: the judge issue builds the shared client (``ragmeter.judge.client``) with
caching, retries and structured-output fallbacks; switch these callers to it once it
lands. Until then this talks to the ``openai`` package directly, with everything passed
explicitly (base URL, model, key, timeout) and no model ever chosen by default.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ragmeter.errors import ConfigError, RetrieverError

__all__ = ["DEFAULT_LLM_TIMEOUT", "LLM_MAX_RETRIES", "LLMSettings", "chat", "remake_client"]

#: Seconds one chat call may take.
DEFAULT_LLM_TIMEOUT = 60.0
#: Retries on rate limits, 5xx and connection errors (the openai client backs off).
LLM_MAX_RETRIES = 2


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
        """The settings without the key, for run configs."""
        return {"base_url": self.base_url, "model": self.model, "timeout": self.timeout}


def make_client(settings: LLMSettings) -> Any:
    """An ``openai.OpenAI`` client for ``settings``; ConfigError when openai is missing."""
    try:
        import openai
    except ImportError:
        raise ConfigError(
            "LLM re-ranking and query expansion need the openai package: pip install openai"
        ) from None
    return openai.OpenAI(
        base_url=settings.base_url,
        api_key=settings.api_key,
        timeout=settings.timeout,
        max_retries=LLM_MAX_RETRIES,
    )


def remake_client(owner: Any) -> Any:
    """A new client from ``owner.settings``: how an unpickled LLM stage gets its own
    (an ``openai`` client holds a connection pool and a lock, which stay behind)."""
    return make_client(owner.settings)


def chat(client: Any, settings: LLMSettings, prompt: str, *, json_mode: bool = False) -> str:
    """One user message in, the assistant's text out; failures are RetrieverError
    (evaluation records them as that question's error row)."""
    import openai

    kwargs: dict[str, Any] = {"temperature": 0.0, "max_tokens": 512}
    if json_mode:
        kwargs["response_format"] = {"type": "json_object"}
    try:
        response = client.chat.completions.create(
            model=settings.model, messages=[{"role": "user", "content": prompt}], **kwargs
        )
    except openai.OpenAIError as exc:
        raise RetrieverError(f"LLM call to {settings.base_url} failed: {exc}") from None
    content = response.choices[0].message.content if response.choices else None
    if not content:
        raise RetrieverError(f"LLM at {settings.base_url} returned an empty answer")
    return str(content)


def parse_json_object(text: str, source: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (models wrap JSON in prose or code fences).

    >>> parse_json_object('Sure: {"scores": [1, 2]}', "llm")
    {'scores': [1, 2]}
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
