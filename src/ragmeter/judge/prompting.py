"""Versioned prompts and the one seam through which gold generation calls an LLM.

``synth`` and ``variants`` never talk to a model: they take a ``Complete``
function, ``await complete(prompt, fields) -> parsed JSON``. ``from_client``
builds one from the judge's ``JudgeClient`` (``ragmeter.judge.client``), which owns
the connection, retries, structured output and the cache keyed by the prompt's
``key`` and inputs. Tests may pass any async function.

>>> p = Prompt("demo", 1, "Be brief.", "Say {word}.", {"type": "object"})
>>> p.key, p.messages({"word": "hi"})[1]["content"]
('demo@v1', 'Say hi.')
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Complete", "Prompt", "from_client"]


@dataclass(frozen=True)
class Prompt:
    """A prompt with a name and version: change the text, bump the version (caches key on it)."""

    name: str
    version: int
    system: str
    user: str  # str.format template
    schema: dict[str, Any] = field(default_factory=dict)
    max_tokens: int = 600

    @property
    def key(self) -> str:
        return f"{self.name}@v{self.version}"

    def messages(self, fields: Mapping[str, Any]) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.user.format(**fields)},
        ]


#: ``await complete(prompt, fields)`` -> the model's JSON reply, parsed.
Complete = Callable[[Prompt, Mapping[str, Any]], Awaitable[Mapping[str, Any]]]


def from_client(client: Any) -> Complete:
    """Wrap the judge's ``JudgeClient`` as a ``Complete``.

    Each call is one ``JudgeRequest`` keyed by the prompt's ``key`` and ``fields``,
    so the client's cache (the store) answers a repeated call without the model.
    A call that still fails after the client's retries raises
    :class:`~ragmeter.judge.client.JudgeCallError`.
    """
    from ragmeter.judge.client import JudgeCallError, JudgeRequest

    async def complete(prompt: Prompt, fields: Mapping[str, Any]) -> Mapping[str, Any]:
        request = JudgeRequest(id=prompt.key, messages=prompt.messages(fields), inputs=dict(fields))
        results, _ = await client.ajudge_many(
            [request], schema=prompt.schema, prompt_version=prompt.key
        )
        result = results[0]
        if result.value is None:
            raise JudgeCallError(f"{prompt.key}: {result.error or 'the model gave no answer'}")
        return dict(result.value)

    return complete
