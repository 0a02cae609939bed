"""The Ray executor gives the local executor's results (issue 9, item 2).

A real local Ray (``ray.init(num_cpus=2)``), started once for this module: Ray
takes several seconds to start, so these tests are few and marked slow. Work
functions are defined inside the tests so that Ray pickles them by value (the
workers cannot import test modules).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
import time
from typing import Any

import pytest

import ragmeter
from ragmeter.errors import ConfigError
from ragmeter.executors.local import Outcome, run_concurrently
from ragmeter.gold.goldset import GoldSet
from ragmeter.store import Store


def outcomes(runner: Any, items: list[Any], work: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
    got: list[Outcome[Any, Any]] = []
    runner(items, work, on_outcome=got.append, **kwargs)
    assert all(o.error is not None or o.elapsed_ms is not None for o in got)
    return sorted((repr(o.item), o.value, o.error) for o in got)


@pytest.mark.slow
def test_same_outcomes_as_local_executor(local_ray: Any) -> None:
    """Issue 9: values, error rows and timeouts match run_concurrently, item for item."""
    from ragmeter.executors.ray import RayExecutor, run_on_ray

    def work(x: int) -> dict[str, int]:
        if x % 97 == 13:
            raise ValueError(f"bad item {x}")
        if x == 500:
            time.sleep(3)  # longer than the timeout below
        return {"x": x, "square": x * x}

    async def awork(x: int) -> int:
        await asyncio.sleep(0)
        if x == 7:
            raise KeyError("seven")
        return x + 1

    items = list(range(1_000)) + [13, 13]  # repeats are separate items with separate outcomes
    local = outcomes(run_concurrently, items, work, timeout=1.0)
    remote = outcomes(run_on_ray, items, work, timeout=1.0)
    assert remote == local
    assert len(remote) == 1_002
    assert ("500", None, "timed out after 1 s") in remote
    assert ("13", None, "ValueError: bad item 13") in remote

    assert inspect.iscoroutinefunction(awork)
    local_async = outcomes(run_concurrently, list(range(50)), awork)
    cluster = RayExecutor(batch_size=7, workers=3)
    remote_async = outcomes(run_on_ray, list(range(50)), awork, cluster=cluster)
    assert remote_async == local_async and ("7", None, "KeyError: 'seven'") in remote_async

    lock = threading.Lock()

    def locked(x: int) -> int:
        with lock:
            return x

    with pytest.raises(ConfigError, match="cannot be sent to Ray workers .*must pickle"):
        run_on_ray([1, 2], locked, on_outcome=lambda o: None)


GOLD = [
    {"id": f"q{i}", "question": f"question {i}", "relevant": [{"doc": f"d{i % 7}.md"}]}
    for i in range(200)
]


@pytest.mark.slow
def test_evaluate_on_ray_matches_local(local_ray: Any, store: Store) -> None:
    """Issue 9: per-question retrieval on Ray stores the same run as the local executor."""
    from ragmeter.executors.ray import executor_for

    def search(question: str, k: int) -> list[dict[str, Any]]:
        n = int(question.split()[-1])
        if n == 42:
            raise RuntimeError("index shard down")
        docs = [f"d{(n + j) % 9}.md" for j in range(k)]
        return [{"id": f"{d}#0", "doc": d, "score": 10.0 - j} for j, d in enumerate(docs)]

    gold = GoldSet.from_records(GOLD, name="ray")
    evaluate_params = inspect.signature(ragmeter.evaluate).parameters
    local = ragmeter.evaluate(gold, search, k=5, store=store, name="local", commit="x")
    if "executor" in evaluate_params:
        remote = ragmeter.evaluate(
            gold, search, k=5, store=store, name="ray", commit="x", executor="ray"
        )

        # Latency is measured, not computed: the rest must be identical.
        def scored(metrics: dict[str, float]) -> dict[str, float]:
            return {m: v for m, v in metrics.items() if not m.startswith("latency")}

        assert scored(remote.metrics) == scored(local.metrics)
        by_id = {r.item_id: r for r in store.results(local.run.id)}
        for row in store.results(remote.run.id):
            expected = by_id[row.item_id]
            assert (row.hits, row.error, row.extra) == (
                expected.hits,
                expected.error,
                expected.extra,
            )
    # The per-question call evaluate() makes, run through both executors.
    from ragmeter.evaluation.evaluate import retrieval_work as _work
    from ragmeter.retrievers import as_retriever

    work, is_async = _work(as_retriever(search), 5)
    for runner in (run_concurrently, executor_for("ray").run):
        got: list[Outcome[Any, Any]] = []
        runner(list(gold), work, concurrency=4, timeout=None, on_outcome=got.append,
               is_async=is_async)  # fmt: skip
        by_item = {o.item.id: o for o in got}
        assert len(by_item) == 200
        assert by_item["q42"].error is not None and "index shard down" in by_item["q42"].error
        assert [h.doc for h in by_item["q3"].value.hits] == [f"d{j % 9}.md" for j in range(3, 8)]


def test_executor_choice_errors() -> None:
    """Issue 9: an unknown executor or a Ray address without Ray is a clear input error."""
    from ragmeter.executors.ray import executor_for

    with pytest.raises(ConfigError, match="unknown executor 'spark'"):
        executor_for("spark")
    with pytest.raises(ConfigError, match="--ray-address needs --executor ray"):
        executor_for("local", ray_address="ray://head:10001")


def _answered_run(store: Store, name: str) -> int:
    """A run of 40 answered questions: a third supported, some not, some the judge garbles."""
    records = [
        {"id": f"a{i}", "question": f"what does widget {i} do", "relevant": [{"doc": f"w{i}.md"}]}
        for i in range(40)
    ]

    def search(question: str, k: int) -> list[dict[str, Any]]:
        n = int(question.split()[3])
        return [
            {"id": f"w{(n + j) % 40}.md#0", "doc": f"w{(n + j) % 40}.md",
             "text": f"Widget {(n + j) % 40} does task {(n + j) % 40} for widget users."}
            for j in range(k)
        ]  # fmt: skip

    def answer(question: str, chunks: list[Any]) -> str:
        n = int(question.split()[3])
        if n % 9 == 4:
            return "GARBLE"
        return chunks[0].text if n % 3 == 0 else f"Widget {n} also bakes bread."

    gold = GoldSet.from_records(records, name="widgets")
    report = ragmeter.evaluate(gold, search, k=3, store=store, name=name, generator=answer)
    return report.run.id


@pytest.mark.slow
def test_judge_on_ray_matches_local_and_keeps_the_cache(local_ray: Any, tmp_path: Any) -> None:
    """Issue 9: faithfulness and relevance judged on Ray equal the local judge's verdicts.

    A real OpenAI-compatible HTTP server plays a deterministic judge. The driver keeps
    the cache: a second Ray pass sends only the requests that failed the first time.
    """
    from click.testing import CliRunner

    from _openai_server import serve_chat
    from ragmeter.cli import main
    from ragmeter.judge import JudgeClient
    from ragmeter.judging.judge_runs import judge_run_faithfulness, judge_run_relevance

    with serve_chat(mode="judge") as server, Store.memory() as here, Store.memory() as there:
        run_here, run_there = _answered_run(here, "local"), _answered_run(there, "ray")

        def client(executor: str) -> JudgeClient:
            return JudgeClient(model="judge", base_url=server.base_url, executor=executor)

        local = judge_run_faithfulness(here, run_here, client=client("local"))
        sent_local = len(server.requests)
        remote = judge_run_faithfulness(there, run_there, client=client("ray"))
        assert len(server.requests) - sent_local == sent_local  # the same calls, sent elsewhere
        assert (remote.n_cases, remote.n_verdicts, remote.errors) == (
            local.n_cases,
            local.n_verdicts,
            local.errors,
        )
        assert remote.metrics == local.metrics and remote.usage == local.usage
        garbled = [n for n in range(40) if n % 9 == 4]
        assert 0 < local.metrics["faithful"] < 1 and len(local.errors) == len(garbled)
        assert "invalid JSON after one repair attempt" in next(iter(remote.errors.values()))
        assert there.judge_verdicts(run_there, "faithfulness") == here.judge_verdicts(
            run_here, "faithfulness"
        )

        before = len(server.requests)
        again = judge_run_faithfulness(there, run_there, client=client("ray"))
        assert again.usage["cached"] == local.n_verdicts
        # Only the garbled cases are asked again (each: one request and one repair).
        assert len(server.requests) - before == again.usage["requests"] == 2 * len(local.errors)

        graded_here = judge_run_relevance(here, run_here, client=client("local"))
        graded_there = judge_run_relevance(there, run_there, client=client("ray"))
        assert graded_there.n_verdicts == graded_here.n_verdicts > 40
        assert there.judge_verdicts(run_there, "relevance") == here.judge_verdicts(
            run_here, "relevance"
        )

    # The command line: `ragmeter judge faithfulness --executor ray` on a SQLite store.
    db = tmp_path / "runs.db"
    with Store.open(db) as store:
        _answered_run(store, "cli")
    with serve_chat(mode="judge") as server:
        args = ["judge", "faithfulness", "cli", "--store", str(db), "--model", "judge"]
        args += ["--base-url", server.base_url, "--executor", "ray", "--json"]
        out = CliRunner().invoke(main, args)
        assert out.exit_code == 0, out.output
        summary = json.loads(out.output)
        assert summary["cases"] == 40 and len(summary["errors"]) == len(garbled)
        assert summary["metrics"]["faithful"] == local.metrics["faithful"]
        assert summary["usage"]["requests"] == len(server.requests)


@pytest.mark.slow
def test_eval_cli_with_http_retriever_and_llm_generator_on_ray(
    local_ray: Any, tmp_path: Any
) -> None:
    """Issue 9: `ragmeter eval --executor ray` with an HTTP retriever and an LLM generator.

    Both hold connections and locks that cannot be pickled as they are; on Ray they
    travel without them, reconnect on the workers, and the run equals a local one.
    """
    import yaml
    from click.testing import CliRunner

    from _openai_server import serve_chat
    from _servers import serve
    from ragmeter.cli import main

    gold = tmp_path / "gold.yaml"
    records = [
        {"id": f"g{i}", "question": f"question {i}", "relevant": [{"doc": f"doc{i % 4}"}]}
        for i in range(30)
    ]
    gold.write_text(yaml.safe_dump(records), encoding="utf-8")
    db = tmp_path / "runs.db"
    with serve() as service, serve_chat() as chat:
        args = ["eval", "--gold", str(gold), "--retriever", service.url("/good"), "-k", "3"]
        args += ["--generator", "llm", "--generator-model", "m"]
        args += ["--generator-base-url", chat.base_url, "--store", str(db), "--json"]
        runs = {}
        for executor in ("local", "ray"):
            out = CliRunner().invoke(main, [*args, "--name", executor, "--executor", executor])
            assert out.exit_code == 0, out.output
            runs[executor] = json.loads(out.output)
        assert len(chat.requests) == 2 * len(records)
    with Store.open(db) as store:
        rows = {
            name: {r.item_id: (r.hits, r.answer, r.error) for r in store.results(run["run"]["id"])}
            for name, run in runs.items()
        }
    assert rows["ray"] == rows["local"]
    assert {answer for _, answer, _ in rows["ray"].values()} == {"feline, meow, purring"}
    scored = {
        name: {m: v for m, v in run["metrics"].items() if not m.startswith("latency")}
        for name, run in runs.items()
    }
    assert (
        scored["ray"] == scored["local"]
        and scored["ray"]["hit@3"] == sum(i % 4 < 3 for i in range(30)) / 30
    )


@pytest.mark.slow
def test_sweep_on_ray_matches_local(local_ray: Any, tmp_path: Any, store: Store) -> None:
    """Issue 9: `sweep --executor ray` (BM25 pipelines with RM3) stores the local sweep's
    metrics, and every run's stage latency counts all of its questions."""
    from ragmeter.evaluation.job import EvalJob
    from ragmeter.evaluation.sweep import run_sweep
    from ragmeter.examples import example_corpus_dir, example_gold_path
    from ragmeter.executors.ray import executor_for

    results = {}
    for executor in ("local", "ray"):
        job = EvalJob(
            gold=str(example_gold_path()),
            corpus=str(example_corpus_dir()),
            concurrency=4,
            executor=executor_for(executor),
        )
        results[executor] = run_sweep(
            job,
            {"retriever": "bm25", "rewrite": {"method": "rm3"}},
            {"chunker.size": [400, 900]},
            store=store,
            metric="hit@5",
            cache_dir=tmp_path,
            name_prefix=executor,
        )
    for row in results["ray"].rows:
        stages = store.get_run(row.run_id).config["stage_latency"]
        assert stages["retrieve"]["n"] == stages["rewrite"]["n"] == row_count(store, row)

    def scored(result: Any) -> list[tuple[str, dict[str, float]]]:
        return [
            (row.note, {m: v for m, v in row.metrics.items() if not m.startswith("latency")})
            for row in result.rows
        ]

    assert scored(results["ray"]) == scored(results["local"]) and len(results["ray"].rows) == 2

    def winners(result: Any) -> list[tuple[Any, ...]]:
        # Run names carry the prefix ("ray-1 (chunker.size=400)"); the choice must agree.
        return [(t.tag, t.winner.split(" ", 1)[1], t.value, t.margin) for t in result.by_tag]

    assert winners(results["ray"]) == winners(results["local"])


def row_count(store: Store, row: Any) -> int:
    return sum(1 for _ in store.results(row.run_id))


@pytest.mark.slow
def test_judge_repeats_on_ray_match_local_and_cache_per_repeat(
    local_ray: Any, tmp_path: Any
) -> None:
    """Issue 17.4: `repeats=3, executor="ray"` gives the local judge's verdicts, votes,
    stability and unstable list. Each repeat is one job, cached on the driver under its own
    key: the server sees 3 requests per question on the first pass (plus one repair per
    failed repeat), and a second pass asks again only the repeats that failed. A repeat that
    fails makes its question an error "1 of 3 repeats failed"; relevance and the command
    line (`judge faithfulness --executor ray --repeats 3`) take the same path."""
    from click.testing import CliRunner

    from _openai_server import serve_chat
    from ragmeter.cli import main
    from ragmeter.judge import JudgeClient
    from ragmeter.judging.judge_runs import judge_run_faithfulness, judge_run_relevance

    garbled = [n for n in range(40) if n % 9 == 4]  # every repeat fails
    once = [n for n in range(40) if n % 7 == 2]  # the second sight of the prompt fails
    wobbly = [n for n in range(40) if n % 5 == 1 and n not in garbled + once]
    with (
        serve_chat("wobbly") as near,
        serve_chat("wobbly") as far,
        Store.memory() as here,
        Store.memory() as there,
    ):
        run_here, run_there = _answered_run(here, "local"), _answered_run(there, "ray")

        def client(executor: str, server: Any) -> JudgeClient:
            return JudgeClient(
                model="judge", base_url=server.base_url, executor=executor, repeats=3
            )

        local = judge_run_faithfulness(here, run_here, client=client("local", near))
        remote = judge_run_faithfulness(there, run_there, client=client("ray", far))
        first = 3 * 40 + 3 * len(garbled) + len(once)
        assert len(far.requests) == len(near.requests) == remote.usage["requests"] == first
        assert (remote.errors, remote.metrics, remote.usage) == (
            local.errors,
            local.metrics,
            local.usage,
        )
        assert remote.stability == local.stability
        assert sorted(remote.stability["unstable"]) == sorted(f"a{n}" for n in wobbly)
        assert set(remote.errors) == {f"a{n}" for n in garbled + once}
        assert remote.errors["a2"].startswith("1 of 3 repeats failed: invalid JSON")
        assert remote.errors["a4"].startswith("3 of 3 repeats failed: invalid JSON")
        assert there.judge_verdicts(run_there, "faithfulness") == here.judge_verdicts(
            run_here, "faithfulness"
        )

        again = judge_run_faithfulness(there, run_there, client=client("ray", far))
        # Cached per repeat: only the failed repeats go out again (2 requests per garbled
        # repeat with its repair; the once-failed repeat now succeeds at its 4th sight).
        assert len(far.requests) - first == again.usage["requests"] == 6 * len(garbled) + len(once)
        assert again.usage["cached"] == 3 * (40 - len(garbled)) - len(once)
        assert set(again.errors) == {f"a{n}" for n in garbled}

        graded_here = judge_run_relevance(here, run_here, client=client("local", near))
        before = len(far.requests)
        graded = judge_run_relevance(there, run_there, client=client("ray", far))
        assert len(far.requests) - before == graded.usage["requests"] == 3 * graded.n_cases
        assert graded.n_verdicts == graded_here.n_verdicts == graded.n_cases > 40
        assert graded.stability == graded_here.stability and graded.stability["repeats"] == 3
        assert there.judge_verdicts(run_there, "relevance") == here.judge_verdicts(
            run_here, "relevance"
        )
        before = len(far.requests)
        assert judge_run_relevance(there, run_there, client=client("ray", far)).usage["cached"]
        assert len(far.requests) == before  # every repeat came from the cache

    db = tmp_path / "runs.db"
    with Store.open(db) as store:
        _answered_run(store, "cli")
    with serve_chat("wobbly") as server:
        args = ["judge", "faithfulness", "cli", "--store", str(db), "--model", "judge"]
        args += ["--base-url", server.base_url, "--executor", "ray", "--repeats", "3", "--json"]
        out = CliRunner().invoke(main, args)
        assert out.exit_code == 0, out.output
        summary = json.loads(out.output)
        assert summary["usage"]["requests"] == len(server.requests) == first
        assert summary["stability"] == local.stability
        assert summary["metrics"]["faithful"] == local.metrics["faithful"]


@pytest.mark.slow
def test_judge_claims_repeats_on_ray_match_local(local_ray: Any) -> None:
    """Issue 17.4 with 17.5: `judge claims` with `repeats=3, executor="ray"` (no longer
    refused) sends the local judge's requests — extraction once, every entailment check
    three times — from Ray workers to a real loopback server, gives the same metrics,
    verdicts and stability, and a second pass sends nothing (cached per repeat)."""
    from http.server import BaseHTTPRequestHandler

    import httpx

    from _servers import serve_handler
    from judge.test_judge_claims import _Judge, _judge_server, _run
    from ragmeter.judge import JudgeClient
    from ragmeter.judging.judge_runs import judge_run_claims

    with _judge_server(repeats=3) as (client, judge), Store.memory() as store:
        local = judge_run_claims(store, _run(store), client=client)
        local_verdicts = store.judge_verdicts(local.run.id, "claims")
        local_sent = dict(judge.requests)

    far, lock = _Judge(), threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        """The same judge over real HTTP (the workers are other processes)."""

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            with lock:  # the judge counts requests
                reply = far(httpx.Request("POST", "http://judge.test/v1/x", content=body))
            self.send_response(reply.status_code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply.content)))
            self.end_headers()
            self.wfile.write(reply.content)

    with serve_handler(Handler) as url, Store.memory() as store:
        run_id = _run(store)

        def remote_client() -> JudgeClient:
            return JudgeClient(model="judge", base_url=f"{url}/v1", repeats=3, executor="ray")

        remote = judge_run_claims(store, run_id, client=remote_client())
        sent = dict(far.requests)
        again = judge_run_claims(store, run_id, client=remote_client())
        assert far.requests == sent and again.usage["requests"] == 0
        assert store.judge_verdicts(run_id, "claims") == local_verdicts
    assert sent == local_sent and sent["check"] > 0
    assert (remote.metrics, remote.errors, remote.stability) == (
        local.metrics,
        local.errors,
        local.stability,
    )
    assert remote.stability["repeats"] == 3 and remote.usage == local.usage
