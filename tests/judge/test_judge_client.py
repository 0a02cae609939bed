"""Issue 6: the judge client under faults (httpx MockTransport), its cache and its config."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragmeter.config import load_config
from ragmeter.errors import ConfigError
from ragmeter.judge import FaithfulnessCase, JudgeClient, Price, judge_faithfulness
from ragmeter.judge.client import http_module
from ragmeter.judge.config import resolve_judge_config
from ragmeter.store import Store

httpx = http_module()

GOOD = {"supported": True, "unsupported_claims": [], "reason": "all in context"}
CASES = [
    FaithfulnessCase(f"q{i}", f"question {i}?", (f"context {i}",), f"answer {i}") for i in range(3)
]


def completion(content: str, prompt_tokens: int = 10, completion_tokens: int = 5) -> Any:
    return httpx.Response(
        200,
        json={
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": "judge",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        },
    )


class Recorder:
    """A MockTransport handler that plays a script per request and records bodies."""

    def __init__(self, script: Callable[[int, dict[str, Any]], Any]) -> None:
        self.script = script
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.lock = threading.Lock()

    def __call__(self, request: Any) -> Any:
        body = json.loads(request.content)
        with self.lock:
            self.bodies.append(body)
            self.headers.append(dict(request.headers))
            n = len(self.bodies)
        return self.script(n, body)


def make_client(recorder: Recorder, **kwargs: Any) -> tuple[JudgeClient, list[float]]:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    options: dict[str, Any] = {
        "model": "judge",
        "base_url": "http://judge.test/v1",
        "transport": httpx.MockTransport(recorder),
        "sleep": sleep,
        **kwargs,
    }
    return JudgeClient(**options), slept


def test_429_retry_after_is_honoured() -> None:
    """Issue 6: a 429 with Retry-After waits that long, then succeeds."""

    def script(n: int, body: dict[str, Any]) -> Any:
        if n == 1:
            return httpx.Response(429, headers={"Retry-After": "7"}, json={"error": "slow down"})
        return completion(json.dumps(GOOD))

    recorder = Recorder(script)
    client, slept = make_client(recorder)
    batch = judge_faithfulness(client, CASES[:1])
    assert batch.verdicts["q0"].supported is True
    assert slept == [7.0]
    assert batch.usage.requests == 2 and batch.usage.retries == 1


def test_500_then_success_and_backoff_doubles() -> None:
    """Issue 6: 5xx is retried with growing backoff once the output mode is known.

    Issue 13.3: the backoff is the shared policy's (``ragmeter._http``): 0.2 s, then
    0.4 s, each within its jitter band.
    """
    from ragmeter._http import BACKOFF_FIRST_S, BACKOFF_JITTER

    def script(n: int, body: dict[str, Any]) -> Any:
        if n in (2, 3):
            return httpx.Response(503, json={"error": "busy"})
        return completion(json.dumps(GOOD))

    recorder = Recorder(script)
    client, slept = make_client(recorder, concurrency=1)
    batch = judge_faithfulness(client, CASES[:2])
    assert len(batch.verdicts) == 2 and not batch.errors
    assert len(slept) == 2
    for attempt, seconds in enumerate(slept):
        base = BACKOFF_FIRST_S * 2**attempt
        assert base * (1 - BACKOFF_JITTER) <= seconds <= base * (1 + BACKOFF_JITTER)


def test_persistent_5xx_becomes_a_per_question_error() -> None:
    """Issue 6: a server that always fails ends as recorded errors, not a crash."""
    recorder = Recorder(lambda n, body: httpx.Response(502, json={"error": "down"}))
    client, slept = make_client(recorder, max_retries=2)
    # json_object mode is the last fallback; 502 is not a mode refusal, so it is retried.
    batch = judge_faithfulness(client, CASES)
    assert set(batch.errors) == {"q0", "q1", "q2"} and not batch.verdicts
    assert "gave up after 3 attempts" in batch.errors["q0"]
    assert batch.coverage == 0.0


def test_timeouts_are_retried_then_recorded() -> None:
    """Issue 6: a timeout is retried; one that persists is a per-question error."""

    def script(n: int, body: dict[str, Any]) -> Any:
        if n == 1 or body["messages"][1]["content"].find("question 2?") >= 0:
            raise httpx.ReadTimeout("slow", request=None)
        return completion(json.dumps(GOOD))

    recorder = Recorder(script)
    client, _ = make_client(recorder, max_retries=1, concurrency=1)
    batch = judge_faithfulness(client, CASES)
    assert set(batch.verdicts) == {"q0", "q1"}
    assert "timed out" in batch.errors["q2"]


def test_json_schema_refused_falls_back_to_json_object_schema() -> None:
    """Issue 6: a 500 on json_schema (llama.cpp) switches to json_object + schema."""

    def script(n: int, body: dict[str, Any]) -> Any:
        if body["response_format"]["type"] == "json_schema":
            return httpx.Response(500, json={"error": "unsupported"})
        assert body["response_format"]["schema"]["required"] == [
            "supported",
            "unsupported_claims",
            "reason",
        ]
        return completion(json.dumps(GOOD))

    recorder = Recorder(script)
    client, slept = make_client(recorder, concurrency=1)
    batch = judge_faithfulness(client, CASES)
    assert len(batch.verdicts) == 3
    kinds = [b["response_format"]["type"] for b in recorder.bodies]
    assert kinds == ["json_schema", "json_object", "json_object", "json_object"]
    assert slept == []


def test_malformed_json_gets_one_repair_attempt() -> None:
    """Issue 6: a reply that is not JSON is repaired once, with the problem quoted."""

    def script(n: int, body: dict[str, Any]) -> Any:
        if n == 1:
            return completion("Sure! The answer is supported.")
        return completion(json.dumps(GOOD))

    recorder = Recorder(script)
    client, _ = make_client(recorder)
    batch = judge_faithfulness(client, CASES[:1])
    assert batch.verdicts["q0"].supported
    repair = recorder.bodies[1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": "Sure! The answer is supported."}
    assert "not JSON" in repair[-1]["content"]


def test_truncated_json_twice_is_a_recorded_error() -> None:
    """Issue 6: JSON cut off at max_tokens, twice, is an error for that question only."""

    def script(n: int, body: dict[str, Any]) -> Any:
        if "question 1?" in body["messages"][1]["content"]:
            return completion('{"supported": true, "unsupported_claims": ["a cla')
        return completion(json.dumps(GOOD))

    recorder = Recorder(script)
    client, _ = make_client(recorder)
    batch = judge_faithfulness(client, CASES)
    assert set(batch.verdicts) == {"q0", "q2"}
    assert "invalid JSON after one repair attempt" in batch.errors["q1"]


def test_raw_newlines_and_schema_checks() -> None:
    """Issue 6: raw newlines in strings parse (strict=False); a wrong type is repaired."""
    replies = iter(
        [
            '{"supported": "yes", "unsupported_claims": [], "reason": "x"}',
            '{"supported": false, "unsupported_claims": ["line\none"], "reason": "a\nb"}',
        ]
    )
    recorder = Recorder(lambda n, body: completion(next(replies)))
    client, _ = make_client(recorder)
    batch = judge_faithfulness(client, CASES[:1])
    verdict = batch.verdicts["q0"]
    assert verdict.supported is False and verdict.unsupported_claims == ("line\none",)


def test_cache_makes_a_rerun_free_and_keys_stay_out(tmp_path: Path) -> None:
    """Issue 6: a re-run with unchanged inputs makes zero requests; the key is never stored."""
    recorder = Recorder(lambda n, body: completion(json.dumps(GOOD), 100, 20))
    store = Store.open(tmp_path / "judge.db")
    secret = "sk-test-SECRET-123"
    client, _ = make_client(
        recorder,
        api_key=secret,
        cache=store,
        prices={"judge": Price(prompt=1.0, completion=2.0)},
    )
    first = judge_faithfulness(client, CASES)
    assert first.usage.requests == 3 and first.usage.cached == 0
    assert first.usage.prompt_tokens == 300 and first.usage.cost == pytest.approx(0.00042)
    assert recorder.headers[0]["authorization"] == f"Bearer {secret}"

    again = judge_faithfulness(client, CASES)
    assert len(recorder.bodies) == 3  # nothing new reached the server
    assert again.usage.requests == 0 and again.usage.cached == 3
    assert again.verdicts == first.verdicts

    # A changed input is a new key; a changed model is too.
    changed = [FaithfulnessCase("q0", "question 0?", ("context 0",), "another answer")]
    judge_faithfulness(client, changed)
    assert len(recorder.bodies) == 4
    store.close()
    assert secret.encode() not in (tmp_path / "judge.db").read_bytes()
    assert secret not in repr(client) and secret not in json.dumps(client.describe())


def test_concurrency_is_bounded() -> None:
    """Issue 6: never more than `concurrency` requests in flight, and more than one at once."""
    import asyncio

    active = 0
    peak = 0

    async def handler(request: Any) -> Any:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.05)
        active -= 1
        return completion(json.dumps(GOOD))

    cases = [FaithfulnessCase(f"q{i}", "q?", ("c",), f"a{i}") for i in range(8)]
    client = JudgeClient(
        model="judge",
        base_url="http://judge.test/v1",
        transport=httpx.MockTransport(handler),
        concurrency=3,
    )
    batch = judge_faithfulness(client, cases)
    assert len(batch.verdicts) == 8 and peak == 3


def test_no_model_is_chosen_silently(tmp_path: Path) -> None:
    """Issue 6: without a configured model the CLI config loader refuses, saying how."""
    with pytest.raises(ConfigError, match="no judge model configured"):
        resolve_judge_config(env={}, settings=load_config(tmp_path / "none.toml").judge)
    with pytest.raises(ConfigError, match="no judge base URL"):
        resolve_judge_config(env={"RAGMETER_JUDGE_MODEL": "m"})
    with pytest.raises(ConfigError):
        JudgeClient(model="", base_url="http://x/v1")


def test_config_precedence_and_key_fallback(tmp_path: Path) -> None:
    """Issue 6: flags > env > ragmeter.toml; the key falls back to OPENAI_API_KEY."""
    toml = tmp_path / "ragmeter.toml"
    toml.write_text(
        '[judge]\nmodel = "from-file"\nbase_url = "http://file/v1"\ntimeout = 5\n'
        '[judge.prices]\n"from-file" = { prompt = 1.0, completion = 3.0 }\n'
    )
    config = resolve_judge_config(env={"OPENAI_API_KEY": "k1"}, settings=load_config(toml).judge)
    assert (config.model, config.base_url, config.timeout, config.api_key) == (
        "from-file",
        "http://file/v1",
        5.0,
        "k1",
    )
    assert config.prices["from-file"] == Price(1.0, 3.0)
    assert "k1" not in repr(config)
    env = {
        "RAGMETER_JUDGE_MODEL": "from-env",
        "RAGMETER_JUDGE_API_KEY": "k2",
        "OPENAI_API_KEY": "x",
    }
    config = resolve_judge_config(env=env, settings=load_config(toml).judge, model="from-flag")
    assert config.model == "from-flag" and config.api_key == "k2"
    toml.write_text('[judge]\nmodle = "typo"\n')
    with pytest.raises(ConfigError, match="unknown key 'modle'"):
        load_config(toml)


def test_calibrating_an_llm_judge_and_runs_showing_it(store: Store) -> None:
    """Issue 6: a judge that says "supported" to everything is flagged; runs show it."""
    from ragmeter.examples import example_calibration_path
    from ragmeter.judging.calibration import load_calibration_set
    from ragmeter.judging.judge_runs import calibrate

    recorder = Recorder(lambda n, body: completion(json.dumps(GOOD)))
    items = load_calibration_set(example_calibration_path())
    client, _ = make_client(recorder, concurrency=4)
    result, batch = calibrate(items, client=client, store=store)
    assert result.n == 28 and result.agreement == pytest.approx(16 / 28)
    assert result.kappa == pytest.approx(0.0) and result.flagged
    assert result.confusion["unsupported"]["supported"] == 12
    assert batch.usage.requests == 28
    saved = store.latest_calibration("judge", "faithfulness/1")
    assert saved is not None and saved["flagged"] is True
    # Re-calibrating the unchanged judge is free.
    _, again = calibrate(items, client=client, store=store)
    assert again.usage.requests == 0 and again.usage.cached == 28


def test_gold_generation_failure_is_a_judge_call_error() -> None:
    """Issue 13.3: prompting.from_client raises JudgeCallError, not a bare RuntimeError."""
    from ragmeter.judge.client import JudgeCallError, JudgeClient, http_module
    from ragmeter.judge.prompting import Prompt, from_client

    http = http_module()

    def refuse(request: Any) -> Any:
        return http.Response(400, json={"error": {"message": "no such model"}})

    client = JudgeClient(
        model="m", base_url="http://judge.test/v1", transport=http.MockTransport(refuse)
    )
    complete = from_client(client)
    prompt = Prompt("demo", 1, "Be brief.", "Say {word}.", {"type": "object"})
    with pytest.raises(JudgeCallError, match="demo@v1: .*400"):
        asyncio.run(complete(prompt, {"word": "hi"}))
