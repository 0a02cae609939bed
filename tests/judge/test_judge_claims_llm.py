"""Issue 17.5: the claims judge through a REAL llama.cpp server (plumbing, not verdicts).

SmolLM2-135M cannot judge: this checks that claim extraction and the claim checks come back
schema-valid, that ``--repeats`` sends each check once per repeat and caches each repeat under
its own key, and that a second pass makes zero requests, counted at the server.
"""

from __future__ import annotations

import pytest
from tests.judge.test_judge_claims import _run
from tests.judge.test_judge_llm import CountingTransport

from _llm_server import MODEL_ALIAS, LLMServer, llm_server  # noqa: F401 - the fixture
from ragmeter.judge import JudgeClient
from ragmeter.judge._types import request_key
from ragmeter.judge.prompts import CLAIM_CHECK
from ragmeter.judging.judge_runs import judge_run_claims
from ragmeter.store import Store

pytestmark = pytest.mark.slow

REPEATS = 2
#: Two questions (one with a reference answer) keep the run to about a dozen requests.
QUESTIONS = ("ship", "contact")


@pytest.mark.timeout(600)
def test_claims_through_llama_cpp_are_schema_valid_and_cached_per_repeat(
    llm_server: LLMServer,  # noqa: F811
    store: Store,
) -> None:
    """Issue 17.5: schema-valid claims and checks from the real server; each check sent
    once per repeat and cached per repeat; a second pass sends nothing to the server."""
    counting = CountingTransport()
    client = JudgeClient(
        model=MODEL_ALIAS,
        base_url=llm_server.base_url,
        max_tokens=200,
        timeout=120,
        concurrency=1,
        repeats=REPEATS,
        transport=counting,
    )
    run_id = _run(store, only=QUESTIONS)
    served = llm_server.chat_requests()
    first = judge_run_claims(store, run_id, client=client)
    assert first.n_verdicts + len(first.errors) == first.n_cases == len(QUESTIONS)
    assert first.n_verdicts >= 1, first.errors
    assert llm_server.chat_requests() - served == counting.count == first.usage["requests"]
    for entry in store.judge_verdicts(run_id, "claims").values():
        verdict = entry["verdict"]
        if verdict is None:
            continue
        claims = verdict["answer_claims"]
        assert all(isinstance(c, str) for c in claims)
        assert [len(row) for row in verdict["answer_in_chunks"]] == [
            len(verdict["relevant"])
        ] * len(claims)
        assert all(isinstance(x, bool) for row in verdict["answer_in_chunks"] for x in row)
    # Each repeat of a decided pair has its own cache entry.
    ship = store.judge_verdicts(run_id, "claims")[("ship", "")]["verdict"]
    if ship is not None and ship["answer_claims"]:
        from tests.judge.test_judge_claims import DOCS

        pair = {"claim": ship["answer_claims"][0], "premise": DOCS["refunds.md"]}
        for repeat in range(REPEATS):
            key = request_key(MODEL_ALIAS, CLAIM_CHECK.version, pair, repeat=repeat)
            assert store.judge_cache_get(key) is not None, repeat

    print(f"first pass: {first.usage}, errors {first.errors}")  # shown with -s
    served, sent = llm_server.chat_requests(), counting.count
    again = judge_run_claims(store, run_id, client=client)
    if not first.errors:
        assert again.usage["requests"] == 0
        assert counting.count == sent and llm_server.chat_requests() == served
    assert again.metrics == first.metrics or first.errors
