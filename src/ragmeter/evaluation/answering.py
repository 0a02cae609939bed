"""A retrieval followed by the user's generator, each timed apart (used by ``evaluate()``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragmeter.gold.goldset import GoldItem

__all__ = ["Answered", "answer_context", "with_generator"]


@dataclass(frozen=True, slots=True)
class Answered:
    """A retrieval plus the generator's answer (or its error), timed apart."""

    hits: list[Any]
    answer: str | None
    retrieval_ms: float
    context: list[dict[str, Any]]
    generation_ms: float | None = None
    generation_error: str | None = None
    stages: Mapping[str, float] | None = None


def answer_context(hits: Sequence[Any], ids: Sequence[str] | None) -> list[dict[str, Any]]:
    wanted = set(ids) if ids is not None else None
    chosen = [h for h in hits if wanted is None or h.id in wanted]
    return [{"id": h.id, "doc": h.doc, "text": h.text or ""} for h in chosen]


def _generate(generator: Any, item: GoldItem, output: Any, retrieval_ms: float) -> Answered:
    hits = list(output.hits)
    start = time.perf_counter()
    try:
        generated = generator.generate(item.question, hits)
    except Exception as error:  # noqa: BLE001 - a generator failure is recorded on its question
        message = str(error) if type(error).__module__.startswith("ragmeter") else repr(error)
        return Answered(
            hits, None, retrieval_ms, answer_context(hits, None), None, message, output.stages
        )
    elapsed = (time.perf_counter() - start) * 1000.0
    context = answer_context(hits, generated.context_ids)
    return Answered(hits, generated.answer, retrieval_ms, context, elapsed, None, output.stages)


def with_generator(
    work: Callable[[GoldItem], Any], is_async: bool, generator: Any
) -> Callable[[GoldItem], Any]:
    """Wrap the retrieval call so each successful retrieval is followed by generation."""
    if is_async:

        async def answer_async(item: GoldItem) -> Answered:
            start = time.perf_counter()
            output = await work(item)
            elapsed = (time.perf_counter() - start) * 1000.0
            # Generators are sync; keep the event loop free for other questions.
            return await asyncio.to_thread(_generate, generator, item, output, elapsed)

        return answer_async

    def answer(item: GoldItem) -> Answered:
        start = time.perf_counter()
        output = work(item)
        return _generate(generator, item, output, (time.perf_counter() - start) * 1000.0)

    return answer
