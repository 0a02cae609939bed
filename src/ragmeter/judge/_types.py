"""The judge's values: requests, results, usage and price, batches, and the cache key.

>>> batch = to_batch(
...     [JudgeResult("q1", value={"grade": 2}), JudgeResult("q2", error="HTTP 400")],
...     Usage(requests=2), judge={"model": "m"}, parse=lambda value: value["grade"])
>>> batch.verdicts, batch.errors, batch.coverage
({'q1': 2}, {'q2': 'HTTP 400'}, 0.5)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from ragmeter.judge.stability import Stability, stability

__all__ = [
    "JudgeBatch",
    "JudgeCache",
    "JudgeRequest",
    "JudgeResult",
    "Price",
    "Usage",
    "cache_key",
    "combine_repeats",
    "request_key",
    "to_batch",
]

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Price:
    """Dollars per million tokens, prompt and completion.

    >>> Price(prompt=0.15, completion=0.60).cost(1_000_000, 500_000)
    0.45
    """

    prompt: float
    completion: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return round(
            (prompt_tokens * self.prompt + completion_tokens * self.completion) / 1_000_000, 10
        )


@dataclass
class Usage:
    """What a batch cost: requests sent, answers served from the cache, tokens, dollars.

    ``cost`` is ``None`` when the model has no entry in the price table (unknown,
    rather than a made-up zero).
    """

    requests: int = 0
    cached: int = 0
    retries: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None

    def add(self, other: Usage) -> None:
        """Count ``other`` in (its ``cost`` is not added: :meth:`JudgeClient` prices totals)."""
        self.requests += other.requests
        self.cached += other.cached
        self.retries += other.retries
        self.errors += other.errors
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "cached": self.cached,
            "retries": self.retries,
            "errors": self.errors,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": self.cost,
        }


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """One call: an id to report under, the chat messages, and the inputs that define it.

    ``inputs`` is what the cache key hashes (with the model and prompt version);
    two requests with equal inputs get the same answer from the cache.
    """

    id: str
    messages: Sequence[Mapping[str, str]]
    inputs: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class JudgeResult:
    """One call's outcome: the parsed JSON object, or an error message."""

    id: str
    value: dict[str, Any] | None = None
    error: str | None = None
    cached: bool = False
    # Every repeat's parsed value, in repeat order (issue 17.4); empty means ``(value,)``.
    values: tuple[dict[str, Any], ...] = ()


def combine_repeats(request_id: str, tries: Sequence[JudgeResult]) -> JudgeResult:
    """One request's result from its repeats' results, given in repeat order (issue 17.4).

    The one rule both executors follow: a single try is the result as it is; with more,
    the result holds every repeat's value in repeat order (``value`` is the first), and is
    ``cached`` only when every repeat came from the cache. If any repeat failed the request
    is an error: a majority of the survivors would be a smaller vote than the one configured.

    >>> ok, bad = JudgeResult("q", value={"v": 1}, cached=True), JudgeResult("q", error="HTTP 500")
    >>> combine_repeats("q", [ok, JudgeResult("q", value={"v": 2})]).values
    ({'v': 1}, {'v': 2})
    >>> combine_repeats("q", [ok, bad, ok]).error
    '1 of 3 repeats failed: HTTP 500'
    """
    if not tries:
        raise ValueError(f"request {request_id!r}: no repeat to combine")
    if len(tries) == 1:
        return tries[0]
    failed = [t for t in tries if t.value is None]
    if failed:
        first = failed[0].error or "no verdict"
        return JudgeResult(
            request_id, error=f"{len(failed)} of {len(tries)} repeats failed: {first}"
        )
    values = tuple(t.value for t in tries if t.value is not None)
    cached = all(t.cached for t in tries)
    return JudgeResult(request_id, value=values[0], cached=cached, values=values)


class JudgeCache(Protocol):
    """Where verdicts persist between runs (``Store`` implements it)."""

    def judge_cache_get(self, key: str) -> dict[str, Any] | None: ...

    def judge_cache_put(
        self, key: str, *, model: str, prompt_version: str, value: Mapping[str, Any]
    ) -> None: ...


def cache_key(model: str, prompt_version: str, inputs: Mapping[str, Any]) -> str:
    """The cache key of a call: sha256 over model, prompt version and inputs.

    >>> cache_key("m", "faithfulness/1", {"a": 1}) == cache_key("m", "faithfulness/1", {"a": 1})
    True
    >>> cache_key("m", "faithfulness/1", {"a": 1}) == cache_key("m", "faithfulness/2", {"a": 1})
    False
    """
    blob = json.dumps(
        {"model": model, "prompt_version": prompt_version, "inputs": inputs},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def request_key(
    model: str,
    prompt_version: str,
    inputs: Mapping[str, Any],
    *,
    temperature: float = 0.0,
    seed: int | None = None,
    repeat: int = 0,
) -> str:
    """The cache key of one repeat of a call (issue 17.4): :func:`cache_key` over the
    inputs plus the sampling parameters when they are not the defaults and the repeat
    index from the second repeat on, so the first repeat at temperature 0 keeps the key
    verdicts were always cached under.

    >>> request_key("m", "f/1", {"a": 1}) == cache_key("m", "f/1", {"a": 1})
    True
    >>> len({request_key("m", "f/1", {"a": 1}, repeat=r) for r in range(3)})
    3
    >>> request_key("m", "f/1", {"a": 1}, temperature=0.7) == cache_key("m", "f/1", {"a": 1})
    False
    """
    extra: dict[str, Any] = {}
    if temperature != 0.0 or seed is not None:
        extra["_sampling"] = {"temperature": temperature, "seed": seed}
    if repeat:
        extra["_repeat"] = repeat
    return cache_key(model, prompt_version, {**inputs, **extra} if extra else inputs)


@dataclass
class JudgeBatch(Generic[V]):
    """What a judge hands back: verdicts and errors by id, and what it cost."""

    verdicts: dict[str, V] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    judge: dict[str, Any] = field(default_factory=dict)
    # id -> the votes of its repeats, for requests sent more than once (issue 17.4)
    stability: dict[str, Stability] = field(default_factory=dict)

    @property
    def coverage(self) -> float:
        """Share of cases with a verdict (errors stay in the denominator)."""
        total = len(self.verdicts) + len(self.errors)
        return len(self.verdicts) / total if total else 0.0


def to_batch(
    results: Sequence[JudgeResult],
    usage: Usage,
    *,
    judge: Mapping[str, Any],
    parse: Callable[[dict[str, Any]], V],
    vote: Callable[[V], Hashable] | None = None,
) -> JudgeBatch[V]:
    """The one place judge results become a batch: a verdict per parsed value, an error
    per failed call (a result without a value and without a message still counts as an
    error, ``"no verdict"``, so coverage never overstates)."""
    batch: JudgeBatch[V] = JudgeBatch(usage=usage, judge=dict(judge))
    for result in results:
        if len(result.values) > 1 and vote is not None:
            # Repeats: the majority verdict (the first repeat that voted for it).
            parsed = [parse(value) for value in result.values]
            labels = [vote(verdict) for verdict in parsed]
            batch.stability[result.id] = stable = stability(labels)
            batch.verdicts[result.id] = parsed[labels.index(stable.label)]
        elif result.value is not None:
            batch.verdicts[result.id] = parse(result.value)
        else:
            batch.errors[result.id] = result.error or "no verdict"
    return batch
