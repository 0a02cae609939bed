"""The chunk relevance judge: grade 0–3, with a one-line reason.

It fills gaps, never overrides: only retrieved chunks that the gold set does not
label are sent, and metrics use judge grades only when asked to
(``--fill-with-judge``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragmeter.judge.client import JudgeBatch, JudgeClient, JudgeRequest, JudgeResult, to_batch
from ragmeter.judge.prompts import RELEVANCE

__all__ = ["RelevanceCase", "RelevanceVerdict", "judge_relevance"]


@dataclass(frozen=True, slots=True)
class RelevanceCase:
    """One (question, chunk) pair. ``id`` is unique in a batch, e.g. ``item|chunk``."""

    id: str
    question: str
    chunk: str


@dataclass(frozen=True, slots=True)
class RelevanceVerdict:
    """A grade 0–3 and why.

    >>> RelevanceVerdict.from_dict({"grade": 2, "reason": "partial"}).grade
    2
    """

    grade: int
    reason: str = ""

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> RelevanceVerdict:
        return cls(int(value["grade"]), str(value.get("reason") or ""))

    def to_dict(self) -> dict[str, Any]:
        return {"grade": self.grade, "reason": self.reason}


def judge_relevance(
    client: JudgeClient,
    cases: Sequence[RelevanceCase],
    *,
    on_result: Callable[[JudgeResult], None] | None = None,
) -> JudgeBatch[RelevanceVerdict]:
    """Grade every (question, chunk) pair; failures are recorded per pair.

    >>> from ragmeter.judge import JudgeClient
    >>> client = JudgeClient(model="judge", base_url="http://127.0.0.1:8011/v1")
    >>> judge_relevance(client, [RelevanceCase("q1|c1", "q?", "text")])  # doctest: +SKIP
    """
    requests = [
        JudgeRequest(
            id=case.id,
            messages=RELEVANCE.messages(question=case.question, chunk=case.chunk),
            inputs={"question": case.question, "chunk": case.chunk},
        )
        for case in cases
    ]
    results, usage = client.judge_many(
        requests,
        schema=RELEVANCE.schema,
        prompt_version=RELEVANCE.version,
        on_result=on_result,
    )
    return to_batch(
        results,
        usage,
        judge={
            **client.describe(),
            "prompt_version": RELEVANCE.version,
            "prompt_hash": RELEVANCE.digest,
            "repeats": client.repeats,
        },
        parse=RelevanceVerdict.from_dict,
        vote=lambda verdict: verdict.grade,
    )
