"""Issue 6: generation, faithfulness and relevance through a REAL llama.cpp server.

SmolLM2-135M is far too weak to judge: these tests check the plumbing — a real
server, real tokens, schema-valid output, the json_schema fallback, concurrency,
the cache (zero requests on a re-run, counted at the server) and timeouts — never
the quality of a verdict.
"""

from __future__ import annotations

from typing import Any

import pytest

import ragmeter
from _llm_server import MODEL_ALIAS, LLMServer, llm_server  # noqa: F401 - the fixture
from ragmeter.evaluation.generation import LLMGenerator
from ragmeter.gold.goldset import GoldSet
from ragmeter.judge import JudgeClient, RelevanceCase, judge_relevance
from ragmeter.judge.client import http_module
from ragmeter.judging.judge_runs import judge_run_faithfulness
from ragmeter.store import Store

pytestmark = pytest.mark.slow

httpx = http_module()

DOCS = {
    "refunds.md": "Refunds are accepted within 30 days of delivery.",
    "shipping.md": "Orders ship in 2 business days.",
}


class CountingTransport(httpx.AsyncBaseTransport):  # type: ignore[misc, name-defined]
    """Counts the requests the client sends; a real transport (fresh per request) sends them."""

    def __init__(self) -> None:
        self.count = 0

    async def handle_async_request(self, request: Any) -> Any:
        self.count += 1
        inner = httpx.AsyncHTTPTransport()
        try:
            response = await inner.handle_async_request(request)
            content = await response.aread()
        finally:
            await inner.aclose()
        return httpx.Response(response.status_code, headers=response.headers, content=content)


def search(question: str, k: int) -> list[dict[str, Any]]:
    doc = "refunds.md" if "refund" in question else "shipping.md"
    return [{"id": f"{doc}#0", "doc": doc, "text": DOCS[doc]}]


def test_generate_then_judge_faithfulness_and_cache(llm_server: LLMServer, store: Store) -> None:  # noqa: F811
    """Issue 6: real generation, schema-valid verdicts, then a re-run with zero requests."""
    gold = GoldSet.from_records(
        [
            {"id": "refund", "question": "How long do I have for a refund?",
             "relevant": [{"doc": "refunds.md"}], "answer_contains": ["30 days"]},
            {"id": "ship", "question": "How fast do orders ship?",
             "relevant": [{"doc": "shipping.md"}], "answer_contains": ["2 business days"]},
        ]
    )  # fmt: skip
    generator = LLMGenerator(
        JudgeClient(model=MODEL_ALIAS, base_url=llm_server.base_url, max_tokens=24, timeout=60)
    )
    report = ragmeter.evaluate(gold, search, k=1, store=store, generator=generator, concurrency=2)
    answers = {r.item_id: r.answer for r in store.results(report.run.id)}
    assert all(isinstance(a, str) and a for a in answers.values()), answers
    assert generator.usage.requests == 2 and generator.usage.completion_tokens > 0
    assert report.dumb_checks is not None and report.dumb_checks[1] == 2

    counting = CountingTransport()
    client = JudgeClient(
        model=MODEL_ALIAS,
        base_url=llm_server.base_url,
        max_tokens=160,
        timeout=90,
        concurrency=2,
        transport=counting,
    )
    served_before = llm_server.chat_requests()
    first = judge_run_faithfulness(store, report.run.id, client=client)
    assert first.n_cases == 2
    # Every case ends as a schema-valid verdict or a recorded error, never a crash.
    assert first.n_verdicts + len(first.errors) == 2 and first.n_verdicts >= 1
    verdicts = store.judge_verdicts(report.run.id, "faithfulness")
    for entry in verdicts.values():
        if entry["verdict"] is not None:
            assert isinstance(entry["verdict"]["supported"], bool)
            assert isinstance(entry["verdict"]["unsupported_claims"], list)
    # llama.cpp refuses json_schema (HTTP 500) and enforces json_object + schema.
    assert counting.count >= 3 and first.usage["prompt_tokens"] > 0
    assert llm_server.chat_requests() - served_before == counting.count

    served_before = llm_server.chat_requests()
    counting_before = counting.count
    again = judge_run_faithfulness(store, report.run.id, client=client)
    assert again.usage["cached"] == first.n_verdicts
    # Cached verdicts cost nothing; only a case that failed the first time is asked again.
    assert again.usage["requests"] == 0 or first.errors
    if not first.errors:
        assert counting.count == counting_before and llm_server.chat_requests() == served_before


def test_relevance_grades_are_schema_valid(llm_server: LLMServer) -> None:  # noqa: F811
    """Issue 6: relevance grades from the real server are integers 0-3 with a reason."""
    client = JudgeClient(model=MODEL_ALIAS, base_url=llm_server.base_url, max_tokens=80)
    batch = judge_relevance(
        client,
        [
            RelevanceCase("a", "How long for a refund?", DOCS["refunds.md"]),
            RelevanceCase("b", "How long for a refund?", DOCS["shipping.md"]),
        ],
    )
    assert len(batch.verdicts) + len(batch.errors) == 2 and batch.verdicts
    for verdict in batch.verdicts.values():
        assert 0 <= verdict.grade <= 3 and isinstance(verdict.reason, str)


def test_timeouts_against_the_real_server(llm_server: LLMServer) -> None:  # noqa: F811
    """Issue 6: a timeout shorter than any generation ends as a per-case error."""
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    client = JudgeClient(
        model=MODEL_ALIAS,
        base_url=llm_server.base_url,
        max_tokens=8,
        timeout=0.001,
        max_retries=1,
        sleep=sleep,
    )
    batch = judge_relevance(client, [RelevanceCase("a", "refund?", DOCS["refunds.md"])])
    assert not batch.verdicts
    # One retry after the shared policy's first backoff (issue 13.3), within its jitter.
    # Which phase the 1 ms runs out in depends on the machine's load: either is a timeout.
    error = batch.errors["a"]
    assert "timed out" in error or "did not finish within 0.001 s" in error, error
    assert len(slept) == 1 and 0.15 <= slept[0] <= 0.25
