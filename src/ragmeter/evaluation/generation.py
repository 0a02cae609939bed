"""Generators: turn a question and its retrieved chunks into an answer.

``--generator SPEC``:

- ``module:function`` — ``fn(question, chunks) -> str | {"answer": str, "context_ids": [...]}``
  where ``chunks`` are the retrieved :class:`~ragmeter.documents.Hit` values (with text);
  ``context_ids`` says which chunks the answer used (default: all of them);
- ``http://…`` / ``https://…`` — ``POST {"question": q, "chunks": [{"id", "doc", "text"}]}``,
  expects ``{"answer": "...", "context_ids": [...]}``;
- ``llm`` — an OpenAI-compatible model through :class:`~ragmeter.judge.JudgeClient`
  (configured separately from the judge: the judge should be the stronger model).

A generator failure is recorded on its question (``extra["generation_error"]``); the
retrieval result is kept and the run goes on.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ragmeter._http import (
    ACCEPT_ENCODING,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_RETRIES,
    BodyTooLarge,
    DeadlineExceeded,
    Retryable,
    RetryPolicy,
    parse_retry_after,
    read_body,
)
from ragmeter._redact import redact_url
from ragmeter.documents import Hit
from ragmeter.errors import ConfigError, GenerationError
from ragmeter.executors.pickling import Transient, new_lock, unset

if TYPE_CHECKING:
    import httpx

    from ragmeter.judge.client import JudgeClient, Usage

__all__ = [
    "GENERATOR_RETRIES",
    "GENERATOR_TIMEOUT",
    "CallableGenerator",
    "Generated",
    "GenerationError",
    "Generator",
    "HttpGenerator",
    "LLMGenerator",
    "coerce_generated",
    "resolve_generator",
]

#: Seconds one HTTP generation may take.
GENERATOR_TIMEOUT = 60.0
#: Retries of an HTTP generation after a 5xx, 429, timeout or connection error (shared policy).
GENERATOR_RETRIES = DEFAULT_RETRIES


@dataclass(frozen=True, slots=True)
class Generated:
    """An answer and the ids of the chunks it was built from (``None`` = all of them)."""

    answer: str
    context_ids: tuple[str, ...] | None = None


class Generator(Protocol):
    """What ``evaluate(generator=...)`` calls after each successful retrieval."""

    spec: str

    def generate(self, question: str, chunks: Sequence[Hit]) -> Generated: ...

    def close(self) -> None: ...


def coerce_generated(raw: object, *, source: str) -> Generated:
    """Accept a string or ``{"answer": str, "context_ids": [...]}``.

    >>> coerce_generated({"answer": "30 days", "context_ids": ["faq.md#2"]}, source="x")
    Generated(answer='30 days', context_ids=('faq.md#2',))
    >>> coerce_generated(42, source="mymod:gen")
    Traceback (most recent call last):
    ...
    ragmeter.errors.GenerationError: mymod:gen returned int 42; expected a string or {"answer": ..., "context_ids": [...]}
    """
    if isinstance(raw, str):
        return Generated(raw)
    if isinstance(raw, Mapping):
        answer = raw.get("answer")
        if not isinstance(answer, str):
            raise GenerationError(f'{source}: "answer" must be a string, got {answer!r:.60}')
        ids = raw.get("context_ids")
        if ids is None:
            return Generated(answer)
        if not isinstance(ids, list | tuple) or not all(isinstance(i, str | int) for i in ids):
            raise GenerationError(f'{source}: "context_ids" must be a list of chunk ids')
        return Generated(answer, tuple(str(i) for i in ids))
    raise GenerationError(
        f"{source} returned {type(raw).__name__} {raw!r:.60}; "
        'expected a string or {"answer": ..., "context_ids": [...]}'
    )


class CallableGenerator:
    """A Python function ``(question, chunks) -> str | dict`` as a generator.

    >>> gen = CallableGenerator(lambda q, chunks: f"{len(chunks)} chunks", spec="demo")
    >>> gen.generate("why?", [Hit(id="a", doc="a", text="x")]).answer
    '1 chunks'
    """

    def __init__(self, fn: Callable[[str, list[Hit]], Any], *, spec: str | None = None) -> None:
        if not callable(fn):
            raise ConfigError(f"generator {fn!r} is not callable")
        self.fn = fn
        self.spec: str = spec or str(getattr(fn, "__qualname__", type(fn).__name__))

    def generate(self, question: str, chunks: Sequence[Hit]) -> Generated:
        raw = self.fn(question, list(chunks))
        if asyncio.iscoroutine(raw):
            raw = asyncio.run(raw)
        return coerce_generated(raw, source=self.spec)

    def close(self) -> None:
        pass


class HttpGenerator(Transient):
    """A generator behind an HTTP endpoint (see the module docstring for the protocol).

    The client is opened on first use and is safe to share between threads. The
    generator pickles (the Ray executor ships it to workers); a copy opens its own client.
    Retries follow the shared policy of ``ragmeter._http`` (429, 5xx, timeouts,
    connection errors; ``Retry-After`` honoured); ``timeout`` bounds each attempt as a
    whole, body included, and a body over ``max_response_bytes`` (after decompression)
    fails the question at once. ``transport`` (an ``httpx.BaseTransport``) replaces the
    network and ``sleep`` is how backoff waits, as for ``JudgeClient``.

    >>> gen = HttpGenerator("http://127.0.0.1:8000/generate", timeout=5)
    >>> gen.spec, gen.timeout
    ('http://127.0.0.1:8000/generate', 5.0)
    """

    _TRANSIENT = {"_client": unset, "_client_lock": new_lock}

    def __init__(
        self,
        url: str,
        *,
        timeout: float = GENERATOR_TIMEOUT,
        retries: int = GENERATOR_RETRIES,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if timeout <= 0:
            raise ConfigError(f"generator timeout must be positive, got {timeout}")
        if max_response_bytes < 1:
            raise ConfigError(f"max response bytes must be positive, got {max_response_bytes}")
        # What runs, messages and reprs show: never a password in the URL.
        self.spec = redact_url(url)
        self.url = url
        self.timeout = float(timeout)
        self.max_response_bytes = int(max_response_bytes)
        self._policy = RetryPolicy(retries=retries)
        self._transport = transport
        self._sleep = sleep
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"HttpGenerator({self.spec!r})"

    def _http(self) -> httpx.Client:
        import httpx

        with self._client_lock:
            if self._client is None:
                self._client = httpx.Client(
                    timeout=self.timeout,
                    transport=self._transport,
                    headers={"Accept-Encoding": ACCEPT_ENCODING},
                )
            return self._client

    def generate(self, question: str, chunks: Sequence[Hit]) -> Generated:
        body = {
            "question": question,
            "chunks": [{"id": c.id, "doc": c.doc, "text": c.text or ""} for c in chunks],
        }
        for attempt in range(self._policy.retries + 1):
            try:
                return self._attempt(body)
            except Retryable as failure:
                if attempt == self._policy.retries:
                    raise GenerationError(f"{self.spec}: {failure.message}") from None
                self._sleep(self._policy.delay(attempt, failure.wait))
        raise AssertionError("unreachable")  # pragma: no cover

    def _attempt(self, body: Mapping[str, Any]) -> Generated:
        import httpx

        deadline = time.monotonic() + self.timeout
        try:
            with self._http().stream("POST", self.url, json=body) as response:
                status = response.status_code
                if status >= 400:
                    wait = parse_retry_after(response.headers)
                else:
                    content = read_body(
                        response, max_bytes=self.max_response_bytes, deadline=deadline
                    )
        except httpx.TimeoutException:
            raise Retryable(f"timed out after {self.timeout:g} s") from None
        except httpx.TransportError as error:
            raise Retryable(type(error).__name__) from None
        except DeadlineExceeded:
            raise Retryable(f"timed out after {self.timeout:g} s (body too slow)") from None
        except BodyTooLarge as error:
            raise GenerationError(f"{self.spec}: {error}") from None
        if status >= 400:
            if status >= 500 or status == 429:
                raise Retryable(f"HTTP {status}", wait=wait)
            raise GenerationError(f"{self.spec}: HTTP {status}")
        try:
            return coerce_generated(json.loads(content), source=self.spec)
        except ValueError:
            raise GenerationError(f"{self.spec}: the answer is not JSON") from None

    def close(self) -> None:
        with self._client_lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()


class LLMGenerator(Transient):
    """Answers with an OpenAI-compatible model, from the numbered chunks only.

    ``usage`` accumulates requests and tokens over every call (thread-safe). It
    pickles with its client's settings (key included: the worker needs it); a copy
    counts its own usage from the counts it was pickled with.
    """

    _TRANSIENT = {"_lock": new_lock}

    def __init__(self, client: JudgeClient) -> None:
        from ragmeter.judge.client import Usage

        self.client = client
        self.spec = f"llm:{client.model}"
        self.usage: Usage = Usage()
        self._lock = threading.Lock()

    def generate(self, question: str, chunks: Sequence[Hit]) -> Generated:
        from ragmeter.judge.client import JudgeCallError, Usage
        from ragmeter.judge.prompts import GENERATION, numbered

        messages = GENERATION.messages(
            context=numbered([c.text or "" for c in chunks]), question=question
        )
        usage = Usage()
        try:
            answer = asyncio.run(self.client.acomplete_text(messages, usage=usage))
        except JudgeCallError as error:
            raise GenerationError(f"{self.spec}: {error}") from None
        finally:
            self._add(usage)
        return Generated(answer.strip())

    def _add(self, usage: Usage) -> None:
        with self._lock:
            for name in ("requests", "retries", "prompt_tokens", "completion_tokens"):
                setattr(self.usage, name, getattr(self.usage, name) + getattr(usage, name))

    def close(self) -> None:
        pass


def resolve_generator(
    spec: str | Generator | Callable[[str, list[Hit]], Any],
    *,
    timeout: float = GENERATOR_TIMEOUT,
    llm_client: JudgeClient | None = None,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
) -> Generator:
    """A generator from a spec string, a function or a generator object.

    >>> resolve_generator(lambda q, chunks: "42").generate("q", []).answer
    '42'
    >>> resolve_generator("llm")
    Traceback (most recent call last):
    ...
    ragmeter.errors.ConfigError: generator "llm" needs a model: pass --generator-model and --generator-base-url (or RAGMETER_GENERATOR_MODEL / RAGMETER_GENERATOR_BASE_URL)
    """
    if not isinstance(spec, str):
        if hasattr(spec, "generate"):
            return spec  # type: ignore[return-value]
        return CallableGenerator(spec)
    if spec in ("llm", "openai"):
        if llm_client is None:
            raise ConfigError(
                f'generator "{spec}" needs a model: pass --generator-model and '
                "--generator-base-url (or RAGMETER_GENERATOR_MODEL / RAGMETER_GENERATOR_BASE_URL)"
            )
        return LLMGenerator(llm_client)
    if spec.startswith(("http://", "https://")):
        return HttpGenerator(spec, timeout=timeout, max_response_bytes=max_response_bytes)
    module_part, _, attr_path = spec.rpartition(":")
    if not module_part or not attr_path:
        raise ConfigError(f"generator {spec!r} must be module:function, http(s)://… or llm")
    # The retriever resolver's importer: same rules (cwd on sys.path, files by path).
    from ragmeter.retrievers.resolve import _import

    target: Any = _import(module_part)
    for name in attr_path.split("."):
        if not hasattr(target, name):
            raise ConfigError(f"generator {spec}: {module_part} has no attribute {name!r}")
        target = getattr(target, name)
    if hasattr(target, "generate") and not isinstance(target, type):
        return target  # type: ignore[no-any-return]
    return CallableGenerator(target, spec=spec)
