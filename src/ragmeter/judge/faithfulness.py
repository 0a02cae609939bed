"""The faithfulness judge: is every claim in the answer supported by the context?

One narrow question, asked of a model the user configured (it should be stronger
than the pipeline's generator). The verdict is ``{"supported", "unsupported_claims",
"reason"}``; the run metric is ``faithful``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragmeter.judge.client import JudgeBatch, JudgeClient, JudgeRequest, JudgeResult, to_batch
from ragmeter.judge.prompts import FAITHFULNESS, numbered

__all__ = ["FaithfulnessCase", "FaithfulnessVerdict", "judge_faithfulness"]


@dataclass(frozen=True, slots=True)
class FaithfulnessCase:
    """What the judge sees: a question, the context passages and the answer."""

    id: str
    question: str
    context: tuple[str, ...]
    answer: str


@dataclass(frozen=True, slots=True)
class FaithfulnessVerdict:
    """The judge's answer to the one narrow question.

    >>> FaithfulnessVerdict.from_dict({"supported": False, "unsupported_claims": ["x"],
    ...                                "reason": "not in context"}).supported
    False
    """

    supported: bool
    unsupported_claims: tuple[str, ...] = ()
    reason: str = ""

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> FaithfulnessVerdict:
        claims = tuple(str(c) for c in value.get("unsupported_claims") or ())
        # A model that lists unsupported claims has not found the answer supported,
        # whatever its boolean says.
        supported = bool(value.get("supported")) and not claims
        return cls(supported, claims, str(value.get("reason") or ""))

    def to_dict(self) -> dict[str, Any]:
        return {
            "supported": self.supported,
            "unsupported_claims": list(self.unsupported_claims),
            "reason": self.reason,
        }


def _request(case: FaithfulnessCase) -> JudgeRequest:
    return JudgeRequest(
        id=case.id,
        messages=FAITHFULNESS.messages(
            context=numbered(case.context), question=case.question, answer=case.answer
        ),
        inputs={"question": case.question, "context": list(case.context), "answer": case.answer},
    )


def judge_faithfulness(
    client: JudgeClient,
    cases: Sequence[FaithfulnessCase],
    *,
    on_result: Callable[[JudgeResult], None] | None = None,
) -> JudgeBatch[FaithfulnessVerdict]:
    """Judge every case; failures are recorded per case, never raised.

    >>> from ragmeter.judge import JudgeClient
    >>> client = JudgeClient(model="judge", base_url="http://127.0.0.1:8011/v1")
    >>> batch = judge_faithfulness(client, [])  # doctest: +SKIP
    """
    results, usage = client.judge_many(
        [_request(case) for case in cases],
        schema=FAITHFULNESS.schema,
        prompt_version=FAITHFULNESS.version,
        on_result=on_result,
    )
    return to_batch(
        results,
        usage,
        judge={
            **client.describe(),
            "prompt_version": FAITHFULNESS.version,
            "prompt_hash": FAITHFULNESS.digest,
            "repeats": client.repeats,
        },
        parse=FaithfulnessVerdict.from_dict,
        vote=lambda verdict: verdict.supported,
    )
