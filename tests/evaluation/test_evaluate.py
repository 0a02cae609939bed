"""evaluate(): the main job end to end, its error rows, resume and misses."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

import ragmeter
from ragmeter.errors import EvaluationError
from ragmeter.evaluation.report import build_report
from ragmeter.evaluation.setup import RetrieverSetup
from ragmeter.gold.goldset import GoldSet
from ragmeter.store import Store

GOLD = [
    {
        "id": "refund",
        "question": "refund window?",
        "relevant": [{"doc": "refunds.md", "grade": 3}],
        "tags": ["policies"],
        "answer_contains": ["30 days"],
    },
    {
        "id": "ship",
        "question": "shipping cost?",
        "relevant": [{"doc": "shipping.md"}],
        "tags": ["policies", "colloquial"],
    },
    {
        "id": "reset",
        "question": "reset password",
        "relevant": [{"doc": "account.md"}],
        "tags": ["account"],
    },
    {
        "id": "delete",
        "question": "delete account",
        "relevant": [{"doc": "account.md"}, {"doc": "privacy.md", "grade": 2}],
        "tags": ["account", "colloquial"],
    },
]

TEXTS = {
    "refunds.md": "Refunds are accepted within 30 days of delivery.",
    "shipping.md": "Shipping is free above 50 euros.",
    "account.md": "Reset your password from the login page.",
    "privacy.md": "You can delete your data at any time.",
    "faq.md": "Frequently asked questions.",
}

# question -> ranked docs; "ship" is a miss, "delete" finds account.md at rank 2.
ANSWERS = {
    "refund window?": ["refunds.md", "faq.md"],
    "shipping cost?": ["faq.md", "refunds.md"],
    "reset password": ["account.md"],
    "delete account": ["faq.md", "account.md", "account.md", "privacy.md"],
}


def search(question: str, k: int) -> list[dict[str, Any]]:
    return [
        {"id": f"{doc}#0", "doc": doc, "score": 10.0 - i, "text": TEXTS[doc]}
        for i, doc in enumerate(ANSWERS[question][:k])
    ]


@pytest.fixture
def gold() -> GoldSet:
    return GoldSet.from_records(GOLD, name="shop")


def test_metrics_match_compute_metrics(gold: GoldSet, store: Store) -> None:
    """Issue 3: evaluate() scores doc-level rankings exactly as compute_metrics does (dedupe docs)."""
    report = ragmeter.evaluate(gold, search, k=5, store=store, name="base")
    qrels = {item.id: {r.doc: r.grade for r in item.relevant} for item in gold}
    runs = {item.id: list(dict.fromkeys(ANSWERS[item.question])) for item in gold}
    expected = ragmeter.compute_metrics(qrels, runs, ["hit@5", "mrr", "ndcg@5", "recall@5", "map"])
    for name, value in expected.means.items():
        assert report.metrics[name] == pytest.approx(value, abs=1e-12), name
    assert report.metrics["answer_in_context@5"] == 1.0  # only "refund" has an answer check
    assert report.run.status == "complete"
    assert report.n_questions == 4 and report.n_errors == 0


def test_misses_grouped_by_tag_and_doc(gold: GoldSet, store: Store) -> None:
    """Issue 3: misses list the question, tags, expected docs and top hits; tags show hit rates."""
    report = ragmeter.evaluate(gold, search, k=5, store=store)
    assert [m.id for m in report.misses] == ["ship"]
    miss = report.misses[0]
    assert miss.expected == ["shipping.md"]
    assert [h["doc"] for h in miss.retrieved] == ["faq.md", "refunds.md"]
    assert miss.retrieved[0]["text"].startswith("Frequently")
    by_tag = {t.tag: t for t in report.by_tag}
    assert by_tag["colloquial"].n == 2 and by_tag["colloquial"].misses == 1
    assert by_tag["colloquial"].hit_rate == 0.5
    assert by_tag["account"].hit_rate == 1.0
    assert report.hit_rate == 0.75
    assert report.by_doc == [("shipping.md", 1)]


def test_errors_become_rows_and_run_goes_on(gold: GoldSet, store: Store) -> None:
    """Issue 3: a retriever that raises marks that question as an error; the others are scored."""

    def flaky(question: str, k: int) -> list[dict[str, Any]]:
        if question == "reset password":
            raise RuntimeError("index offline")
        return search(question, k)

    report = ragmeter.evaluate(gold, flaky, k=5, store=store)
    assert report.n_errors == 1
    assert report.errors[0].id == "reset"
    assert "index offline" in str(report.errors[0].error)
    # the failed question stays in the mean as 0: hit@5 = 2 hits of 4 questions
    assert report.metrics["hit@5"] == 0.5


def test_malformed_hits_and_timeouts_are_errors(gold: GoldSet, store: Store) -> None:
    """Issue 3: malformed answers and timeouts are per-question errors."""

    def bad(question: str, k: int) -> Any:
        if question == "refund window?":
            return [{"score": 1.0}]
        if question == "shipping cost?":
            time.sleep(2)
        return search(question, k)

    report = ragmeter.evaluate(gold, bad, k=5, store=store, timeout=0.5, concurrency=4)
    errors = {e.id: e.error for e in report.errors}
    assert set(errors) == {"refund", "ship"}
    assert "malformed hit 1" in str(errors["refund"])
    assert "timed out" in str(errors["ship"])


def test_every_question_failing_is_exit_3(gold: GoldSet, store: Store) -> None:
    """Issue 3: when every question fails, evaluation raises EvaluationError (exit code 3)."""

    def down(question: str, k: int) -> list[str]:
        raise ConnectionError("refused")

    with pytest.raises(EvaluationError) as info:
        ragmeter.evaluate(gold, down, store=store)
    assert info.value.exit_code == 3
    assert "all 4 questions failed" in str(info.value)


def test_async_retriever_and_latency(gold: GoldSet, store: Store) -> None:
    """Issue 3: async callables run concurrently; latency is measured around the call."""

    in_flight, most = 0, 0

    async def slow(question: str, k: int) -> list[dict[str, Any]]:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.2)  # the latency under test
        in_flight -= 1
        return search(question, k)

    started = time.perf_counter()
    report = ragmeter.evaluate(gold, slow, k=5, store=store, concurrency=4)
    run_ms = (time.perf_counter() - started) * 1000
    # The 4 calls were in flight together, not in series (the wall time of the run is
    # benchmarks/hot_paths.py's "4 async calls" line).
    assert most == 4
    # Around the call: its 0.2 s sleep, and no more than the whole run (no budget to miss).
    assert 190 <= report.metrics["latency_p50_ms"] <= run_ms


def test_resume_skips_finished_questions(gold: GoldSet, file_store: Store) -> None:
    """Issue 3: an interrupted run resumes without repeating finished questions."""
    calls: list[str] = []

    def interrupting(question: str, k: int) -> list[dict[str, Any]]:
        if question == "delete account":
            raise KeyboardInterrupt
        calls.append(question)
        return search(question, k)

    with pytest.raises(KeyboardInterrupt):
        ragmeter.evaluate(gold, interrupting, k=5, store=file_store, concurrency=1, name="r")
    run = file_store.get_run("r")
    assert run.status == "interrupted"
    done_before = file_store.completed_items(run.id, include_errors=False)
    assert "delete" not in done_before and len(done_before) == 3

    def counting(question: str, k: int) -> list[dict[str, Any]]:
        calls.append(question)
        return search(question, k)

    calls.clear()
    report = ragmeter.evaluate(gold, counting, k=5, store=file_store, resume="r")
    assert calls == ["delete account"]
    assert report.run.status == "complete"
    fresh = ragmeter.evaluate(gold, search, k=5, store=file_store)
    assert report.metrics == pytest.approx(
        {k: v for k, v in fresh.metrics.items() if not k.startswith("latency")}
        | {k: v for k, v in report.metrics.items() if k.startswith("latency")}
    )


def test_chunk_level_quotes(tmp_path: Path, store: Store) -> None:
    """Issue 3: at chunk level, only chunks overlapping the quote are relevant."""
    from ragmeter.documents import Chunk, Document

    text = "Intro line.\n\nRefunds within 30 days of delivery.\n\nShipping is free."
    docs = {"faq.md": Document(id="faq.md", text=text)}
    chunks = [
        Chunk("faq.md#0", "faq.md", text[0:11], 0, 11),
        Chunk("faq.md#1", "faq.md", text[13:48], 13, 48),
        Chunk("faq.md#2", "faq.md", text[50:], 50, len(text)),
    ]
    gold = GoldSet.from_records(
        [{"id": "q", "question": "refund?", "relevant": [{"doc": "faq.md", "quote": "30 days"}]}]
    )

    def search_chunks(question: str, k: int) -> list[dict[str, Any]]:
        return [
            {"id": c.id, "doc": c.doc_id, "start": c.start, "end": c.end, "text": c.text}
            for c in (chunks[0], chunks[2], chunks[1])
        ]

    setup = RetrieverSetup(search_chunks, chunks=chunks, documents=docs)
    report = ragmeter.evaluate(gold, setup, k=3, store=store, level="chunk")
    assert report.run.level == "chunk"
    assert report.metrics["mrr"] == pytest.approx(1 / 3)
    assert report.metrics["recall@3"] == 1.0
    # evaluate()'s report spells out the misses only, as `show` does (issue 29.2); the
    # whole report is read from the store.
    assert report.rows[0].hit and report.rows[0].retrieved == []
    row = build_report(store, report.run.id).rows[0]
    assert [h["grade"] for h in row.retrieved] == [0, 0, 1]


def test_evaluate_signature_is_what_a_user_passes(store: Store) -> None:
    """Issue 13.5: the spec layer's plumbing (spec, config, chunks, documents) travels in a
    ``RetrieverSetup`` with the retriever, not as parameters of ``evaluate()``."""
    import inspect

    params = set(inspect.signature(ragmeter.evaluate).parameters)
    assert not params & {"spec", "config", "chunks", "documents"}
    report = ragmeter.evaluate(
        GoldSet.from_records(GOLD),
        RetrieverSetup(search, spec="shop:v2", config={"index": "v2"}),
        store=store,
    )
    assert report.run.retriever == "shop:v2"
    assert report.run.config["index"] == "v2"


def test_documents_holding_no_gold_doc_stop_before_a_run(tmp_path: Path) -> None:
    """Issue 14.3: evaluate() with RetrieverSetup(documents=...) that hold none of the gold
    documents stops with the spec path's error (exit 2), not a stored run of zeros."""
    from ragmeter.corpus import Corpus
    from ragmeter.documents import Document
    from ragmeter.errors import InputError

    gold = GoldSet.from_records(
        [
            {"id": "q1", "question": "refunds?", "relevant": [{"doc": "policies/refunds.md"}]},
            {"id": "q2", "question": "shipping?", "relevant": [{"doc": "faq.md"}]},
        ]
    )
    # Not docs/policies/refunds.md: the one id resolver reads that as policies/refunds.md
    # (issue 24.2); these name other documents.
    corpus = Corpus.from_documents(
        [
            Document(id="docs/policies/returns.md", text="30 days"),
            Document(id="docs/help.md", text="x"),
        ]
    )
    setup = RetrieverSetup(lambda q, k: [], documents=corpus.documents)
    store = Store.open(tmp_path / "runs.db")
    with pytest.raises(InputError) as caught:
        ragmeter.evaluate(gold, setup, store=store)
    assert str(caught.value) == (
        "none of the 2 documents the gold set names is in the corpus given as "
        "RetrieverSetup(documents=...): gold ids look like faq.md, policies/refunds.md; corpus "
        "ids look like docs/help.md, docs/policies/returns.md. Point --corpus at the folder the "
        "gold ids are relative to, or fix the gold ids"
    )
    assert caught.value.exit_code == 2
    assert store.list_runs() == []  # nothing stored, nothing left "running"

    # One gold document present is enough to run (the rest is the usual missing-docs case).
    fine = RetrieverSetup(
        lambda q, k: [{"doc": "faq.md"}],
        documents={"faq.md": Document(id="faq.md", text="x")},
    )
    assert ragmeter.evaluate(gold, fine, store=store).metrics["hit@1"] == 0.5
    store.close()


def test_a_metric_the_run_cannot_compute_stops_before_any_question(
    tmp_path: Path, store: Store
) -> None:
    """Issue 16.2: alpha_ndcg (no subtopics in a gold set), err below the gold set's top grade
    and unknown names stop evaluate() before the retriever is called and before a run exists."""
    from ragmeter.errors import RagmeterError

    gold = ragmeter.GoldSet.from_records(
        [{"id": "q1", "question": "refunds?", "relevant": [{"doc": "refunds.md", "grade": 3}]}]
    )
    calls: list[str] = []

    def search(question: str, k: int) -> list[dict[str, str]]:
        calls.append(question)
        return [{"doc": "refunds.md"}]

    for bad, says in (
        ("alpha_ndcg@10", "subtopic"),
        ("err(max_grade=1)@10", "max_grade"),
        ("hitz@5", "hitz"),
    ):
        with pytest.raises(RagmeterError, match=says):
            ragmeter.evaluate(gold, search, store=store, metrics=[bad], commit="")
    assert calls == []
    assert store.list_runs() == []
    report = ragmeter.evaluate(
        gold, search, store=store, metrics=["err(max_grade=3)@10"], commit=""
    )
    assert calls == ["refunds?"] and report.metrics["err(max_grade=3)@10"] > 0
