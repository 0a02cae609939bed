"""Issue 6: answers in runs, dumb checks, judging stored runs, blame, covered@k, the CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import ragmeter
from _servers import serve_handler
from ragmeter.documents import Hit
from ragmeter.errors import ConfigError
from ragmeter.evaluation.generation import GenerationError, coerce_generated, resolve_generator
from ragmeter.evaluation.report import build_report
from ragmeter.gold.goldset import GoldSet
from ragmeter.judge import JudgeClient
from ragmeter.judge.client import http_module
from ragmeter.judging.judge_runs import judge_run_faithfulness, judge_run_relevance
from ragmeter.store import Store

DOCS = {
    "refunds.md": "Refunds are accepted within 30 days of delivery.",
    "shipping.md": "Orders ship in 2 business days from Berlin.",
    "faq.md": "Contact support by email.",
}


@pytest.fixture
def gold() -> GoldSet:
    return GoldSet.from_records(
        [
            {
                "id": "refund",
                "question": "How long do refunds take?",
                "relevant": [{"doc": "refunds.md"}],
                "answer_contains": ["30 days"],
                "tags": ["policy"],
            },
            {
                "id": "ship",
                "question": "How fast do orders ship?",
                "relevant": [{"doc": "shipping.md"}],
                "answer_contains": ["2 business days"],
                "tags": ["shipping"],
            },
            {
                "id": "contact",
                "question": "How do I contact support?",
                "relevant": [{"doc": "faq.md"}],
                "answer_contains": ["email"],
                "tags": ["policy"],
            },
        ]
    )


def search(question: str, k: int) -> list[dict[str, Any]]:
    # "ship" misses its document: retrieval's fault, whatever the generator does.
    order = ["faq.md", "refunds.md"] if "ship" in question else ["refunds.md", "faq.md"]
    if "contact" in question:
        order = ["faq.md", "shipping.md"]
    return [{"id": f"{d}#0", "doc": d, "text": DOCS[d]} for d in order[:k]]


def answer(question: str, chunks: list[Hit]) -> Any:
    if "refunds" in question:
        return {"answer": "Within 30 days of delivery.", "context_ids": [chunks[0].id]}
    if "ship" in question:
        return "Orders ship in 2 business days."  # right answer, wrong context: unsupported
    return "Call us on 555-0100."  # relevant chunk present, answer wrong: generation


def test_generator_answers_are_stored_with_their_context(gold: GoldSet, store: Store) -> None:
    """Issue 6: each answer is stored next to the context it was generated from."""
    report = ragmeter.evaluate(gold, search, k=2, store=store, generator=answer)
    results = {r.item_id: r for r in store.results(report.run.id)}
    assert results["refund"].answer == "Within 30 days of delivery."
    assert results["refund"].extra["context"] == [
        {"id": "refunds.md#0", "doc": "refunds.md", "text": DOCS["refunds.md"]}
    ]
    assert len(results["ship"].extra["context"]) == 2  # no context_ids: every chunk
    assert report.run.config["generator"].endswith("answer")
    # Dumb checks: 2 of 3 answers contain their strings.
    assert report.metrics["answer_ok"] == pytest.approx(2 / 3)
    assert report.per_query["answer_ok"] == {"refund": 1.0, "ship": 1.0, "contact": 0.0}
    assert report.dumb_checks == (2, 3)
    rows = {row.id: row for row in report.rows}
    assert rows["contact"].blame == "generation"
    assert rows["refund"].blame == "ok"
    assert report.blame == {"retrieval": 0, "generation": 1, "ok": 2}
    assert report.blame_by_tag["policy"] == {"retrieval": 0, "generation": 1, "ok": 1}
    # Latency stays retrieval latency, generation is timed apart.
    assert results["refund"].extra["generation_ms"] >= 0


def test_generator_failure_is_recorded_not_fatal(gold: GoldSet, store: Store) -> None:
    """Issue 6: a generator that raises leaves a per-question error; retrieval is kept."""

    def flaky(question: str, chunks: list[Hit]) -> str:
        if "ship" in question:
            raise RuntimeError("model overloaded")
        return "30 days, 2 business days, email"

    report = ragmeter.evaluate(gold, search, k=2, store=store, generator=flaky)
    rows = {row.id: row for row in report.rows}
    assert rows["ship"].error is None and rows["ship"].retrieved
    assert "model overloaded" in (rows["ship"].generation_error or "")
    assert rows["ship"].answer_ok is False and rows["ship"].blame == "retrieval"
    assert report.dumb_checks == (2, 3)


def test_async_retriever_with_generator(gold: GoldSet, store: Store) -> None:
    """Issue 6: generation also follows async retrievers."""

    async def asearch(question: str, k: int) -> list[dict[str, Any]]:
        return search(question, k)

    report = ragmeter.evaluate(gold, asearch, k=2, store=store, generator=answer)
    assert report.dumb_checks == (2, 3)


def test_retriever_answers_count_too(gold: GoldSet, store: Store) -> None:
    """Issue 6: a retriever returning {"hits", "answer"} has its answer checked."""

    def rag(question: str, k: int) -> dict[str, Any]:
        return {"hits": search(question, k), "answer": "email us"}

    report = ragmeter.evaluate(gold, rag, k=2, store=store)
    assert report.dumb_checks == (1, 3)
    assert report.blame["retrieval"] == 1 and report.blame["generation"] == 1


def test_coerce_generated_rejects_bad_shapes() -> None:
    """Issue 6: a generator's output must be a string or {"answer", "context_ids"}."""
    with pytest.raises(GenerationError, match='"answer" must be a string'):
        coerce_generated({"answer": 3}, source="g")
    with pytest.raises(GenerationError, match="context_ids"):
        coerce_generated({"answer": "a", "context_ids": "x"}, source="g")


@pytest.fixture
def generator_server() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if "contact" in body["question"]:
                self.send_response(400)
                self.end_headers()
                return
            data = json.dumps(
                {"answer": f"{len(body['chunks'])} chunks: {body['chunks'][0]['text']}"}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    with serve_handler(Handler) as base_url:
        yield f"{base_url}/generate"


def test_http_generator(gold: GoldSet, generator_server: str, store: Store) -> None:
    """Issue 6: an HTTP generator endpoint on loopback; a 400 is a per-question error."""
    report = ragmeter.evaluate(gold, search, k=2, store=store, generator=generator_server)
    rows = {row.id: row for row in report.rows}
    assert rows["refund"].answer == f"2 chunks: {DOCS['refunds.md']}"
    assert "HTTP 400" in (rows["contact"].generation_error or "")


def test_generator_url_password_is_never_stored(
    gold: GoldSet, generator_server: str, store: Store
) -> None:
    """Issue 9: a password in a generator URL stays out of the store; resume asks for it."""
    from ragmeter.evaluation.job import EvalJob
    from ragmeter.evaluation.jobs import run_job

    url = generator_server.replace("http://", "http://bob:s3cret@")
    report = ragmeter.evaluate(gold, search, k=2, store=store, generator=url)
    assert report.rows[0].answer is not None
    stored = json.dumps(store.get_run(report.run.id).config)
    assert "s3cret" not in stored and "bob:***@127.0.0.1" in stored
    with pytest.raises(ConfigError, match="password, which is never stored: pass --generator"):
        run_job(EvalJob(resume=report.run.id), store=store)


def test_lexical_judge_on_a_run_and_blame(gold: GoldSet, store: Store) -> None:
    """Issue 6: `judge lexical` stores verdicts, sets `faithful`, and blame uses them."""
    run = ragmeter.evaluate(gold, search, k=2, store=store, generator=answer).run
    result = judge_run_faithfulness(store, run.id)
    assert result.n_cases == 3 and result.calibration is None
    report = build_report(store, run.id)
    rows = {row.id: row for row in report.rows}
    # "2 business days" is not in the faq/refunds context: unsupported, and retrieval's fault.
    assert rows["ship"].faithful is False and rows["ship"].blame == "retrieval"
    assert rows["refund"].faithful is True
    assert report.metrics["faithful"] == pytest.approx(1 / 3)
    assert report.judges["faithfulness"]["config"]["model"] == "lexical"


def test_relevance_judge_fills_gaps_only_when_asked(gold: GoldSet, store: Store) -> None:
    """Issue 6: unlabelled chunks get judge grades; metrics change only with fill-with-judge."""
    httpx = http_module()
    sent: list[str] = []

    def handler(request: Any) -> Any:
        body = json.loads(request.content)
        sent.append(body["messages"][1]["content"])
        content = json.dumps({"grade": 3, "reason": "answers it"})
        return httpx.Response(
            200,
            json={
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
            },
        )

    run = ragmeter.evaluate(gold, search, k=2, store=store, generator=answer).run
    before = dict(store.get_run(run.id).metrics)
    client = JudgeClient(
        model="m", base_url="http://judge.test/v1", transport=httpx.MockTransport(handler)
    )
    result = judge_run_relevance(store, run.id, client=client)
    # 6 retrieved items, 2 gold-relevant (refund, contact), 4 unlabelled; refund's faq.md
    # chunk was not in the generator's context, but the run kept its text (issue 15.1)
    # -> all 4 judged.
    assert result.n_cases == 4 and len(sent) == 4 and result.skipped == 0
    report = build_report(store, run.id)
    assert report.judged == {
        "covered@2": pytest.approx(1.0),
        "gold": 2,
        "judge": 4,
        "unlabelled": 0,
        "labels": "gold",
    }
    assert store.get_run(run.id).metrics["mrr"] == before["mrr"]
    filled = judge_run_relevance(store, run.id, client=client, fill_with_judge=True)
    assert len(sent) == 4  # every verdict came from the cache
    assert filled.metrics["hit@1"] == 1.0 and before["hit@1"] < 1.0
    assert build_report(store, run.id).judged["labels"] == "gold+judge"


def test_report_coverage_is_covered_at_k_not_the_judged_metric(
    tmp_path: Path, gold: GoldSet
) -> None:
    """Issue 16.6: the report's label coverage is ``covered@k``; the registry's ``judged@k``
    (trec_eval/ir_measures: qrels-judged share of the top k) is a metric and keeps its name.

    Previously both were called ``judged@k`` and, when the run stored the metric, the report
    showed two different numbers under one name.
    """
    db = tmp_path / "r.db"
    store = Store.open(db)
    run = ragmeter.evaluate(
        gold, search, k=2, store=store, name="cov", metrics=["hit@2", "judged@2"]
    ).run
    report = build_report(store, run.id)
    # refund and contact find their document in the top 2 (1 of 2 labelled), ship does not.
    assert report.metrics["judged@2"] == pytest.approx(1 / 3)  # the registry metric
    assert report.judged["covered@2"] == pytest.approx(2 / 6)  # gold labels only, no judge
    assert "judged@2" not in report.judged
    assert report.to_dict()["judged"]["covered@2"] == pytest.approx(1 / 3)
    store.close()
    # A run stored before the rename is read the same way: coverage is computed from rows.
    out = CliRunner().invoke(_cli(), ["show", "cov", "--store", str(db)])
    assert out.exit_code == 0, out.output
    assert "covered@2 0.33 (labels: gold)" in out.output


def _cli() -> click.Group:
    from ragmeter.cli import main
    from ragmeter.cli.judge import judge

    main.add_command(judge)
    return main


def test_cli_lexical_calibrate_and_missing_model(
    gold: GoldSet, file_store: Store, store_path: Path
) -> None:
    """Issue 6: the judge commands print summaries; no configured model is exit 2."""
    ragmeter.evaluate(gold, search, k=2, store=file_store, generator=answer, name="gen")
    runner = CliRunner()
    cli = _cli()
    out = runner.invoke(cli, ["judge", "lexical", "gen", "--store", str(store_path)])
    assert out.exit_code == 0, out.output
    assert "3/3 verdicts, 0 errors" in out.output
    assert "faithful = 0.333" in out.output and "not calibrated" in out.output
    out = runner.invoke(
        cli, ["judge", "calibrate", "--judge", "lexical", "--store", str(store_path)]
    )
    assert out.exit_code == 0, out.output
    assert "agreement: 0.643" in out.output
    assert "FLAGGED" in out.output and "tighten the prompt" in out.output
    out = runner.invoke(cli, ["judge", "lexical", "gen", "--store", str(store_path), "--json"])
    assert json.loads(out.output)["calibration"]["agreement"] == pytest.approx(18 / 28)
    out = runner.invoke(cli, ["judge", "faithfulness", "gen", "--store", str(store_path)])
    assert out.exit_code == 2
    assert "no judge model configured" in out.output


def test_resolve_generator_forms() -> None:
    """Issue 6: generator specs: module:function, http(s)://, and llm needs a client."""
    gen = resolve_generator("tests.evaluation.test_generation:answer")
    assert gen.generate("How do refunds work?", [Hit(id="a", doc="a")]).context_ids == ("a",)
    with pytest.raises(ragmeter.errors.ConfigError, match="needs a model"):
        resolve_generator("llm")
