"""Issue 24.4: what a run cannot compute is absent and the run says why, never a 0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import ragmeter
from ragmeter.cli import main
from ragmeter.errors import ConfigError
from ragmeter.evaluation.setup import RetrieverSetup
from ragmeter.gold.goldset import GoldSet
from ragmeter.store import Store

RUNNER = CliRunner()


def test_an_item_with_only_grade_0_judgments_is_left_out_and_named() -> None:
    """Issue 24.4: an item whose judgments are all grade 0 has nothing to find: it is left out
    of the retrieval means (hit@1 1.0 over the one item that has something, not 0.5) and a
    warning stored on the run names it."""
    gold = GoldSet.from_records(
        [
            {"id": "found", "question": "refunds?", "relevant": [{"doc": "refunds.md"}]},
            {"id": "empty", "question": "shipping?", "relevant": [{"doc": "x.md", "grade": 0}]},
        ]
    )
    answers = {"refunds?": ["refunds.md"], "shipping?": ["x.md"]}
    report = ragmeter.evaluate(gold, lambda q, k: [{"doc": d} for d in answers[q]])
    # By hand: "found" has its document at rank 1; "empty" has nothing to find.
    assert report.metrics["hit@1"] == 1.0
    assert report.metrics["mrr"] == 1.0
    assert set(report.per_query["hit@1"]) == {"found"}
    assert any("only grade-0" in w and "empty" in w for w in report.warnings), report.warnings
    assert report.misses == [] and report.hit_rate == 1.0  # nothing to find is no miss


def test_gold_check_lists_items_with_nothing_to_find(tmp_path: Path) -> None:
    """Issue 24.4: `gold check` names the items a run would leave out of its means."""
    path = tmp_path / "gold.yaml"
    path.write_text(
        "- id: ok\n  question: a?\n  relevant: [a.md]\n"
        "- id: zero\n  question: b?\n  relevant:\n    - doc: b.md\n      grade: 0\n",
        encoding="utf-8",
    )
    result = RUNNER.invoke(main, ["gold", "check", str(path)])
    assert result.exit_code == 0, result.output
    assert "Warning: 1 item(s) have only grade-0 judgments" in result.output
    assert result.output.rstrip().endswith(": zero")


def test_answer_in_context_without_hit_text_is_absent_not_zero() -> None:
    """Issue 24.4: hits without text (a `run:` file, ids only) cannot show whether the answer
    was retrieved: answer_in_context@k is absent with a warning, not 0.0. A question whose
    hits do carry the answer's text still counts."""
    gold = GoldSet.from_records(
        [
            {"id": "q", "question": "refunds?", "relevant": ["a.md"], "answer_contains": ["30"]},
        ]
    )
    bare = ragmeter.evaluate(gold, lambda q, k: [{"doc": "a.md"}], k=3)
    assert "answer_in_context@3" not in bare.metrics
    assert "answer_in_context@3" not in bare.per_query
    assert any("answer_in_context@3" in w and "unknown" in w for w in bare.warnings)
    texted = ragmeter.evaluate(gold, lambda q, k: [{"doc": "a.md", "text": "in 30 days"}], k=3)
    assert texted.metrics["answer_in_context@3"] == 1.0
    missing = ragmeter.evaluate(gold, lambda q, k: [{"doc": "a.md", "text": "no"}], k=3)
    assert missing.metrics["answer_in_context@3"] == 0.0  # every hit read: a known miss
    # The answer at rank 3 under a text-less hit at rank 2: known at 3, unknown at 2, and a
    # known 0 at 1 (rank 1 was read).
    mixed = [{"doc": "b.md", "text": "no"}, {"doc": "c.md"}, {"doc": "a.md", "text": "30"}]
    deep = ragmeter.evaluate(
        gold,
        lambda q, k: mixed,
        k=3,
        metrics=["answer_in_context@1", "answer_in_context@2", "answer_in_context@3"],
    )
    assert deep.metrics["answer_in_context@1"] == 0.0
    assert "answer_in_context@2" not in deep.metrics
    assert deep.metrics["answer_in_context@3"] == 1.0


def test_an_empty_answer_from_a_retrieval_only_engine_is_no_answer() -> None:
    """Issue 24.4: LlamaIndex `response_mode="no_text"` answers '' (nothing is generated):
    no answer_ok of 0, no generation blame, and the run says why."""
    from llama_index.core import MockEmbedding, VectorStoreIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.response_synthesizers.no_text import NoText
    from llama_index.core.schema import TextNode

    nodes = [
        TextNode(text="Refunds are paid within 30 days.", id_="a", metadata={"file_path": "a.md"}),
        TextNode(text="Shipping is free.", id_="b", metadata={"file_path": "b.md"}),
    ]
    index = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))
    # What response_mode="no_text" builds (given the LLM, so no default model is looked up).
    engine = RetrieverQueryEngine(index.as_retriever(similarity_top_k=2), NoText(llm=MockLLM()))
    gold = GoldSet.from_records(
        [{"id": "q", "question": "refunds?", "relevant": ["a.md"], "answer_contains": ["30"]}]
    )
    report = ragmeter.evaluate(gold, engine, k=2)
    assert "answer_ok" not in report.metrics
    assert report.blame == {}
    assert report.rows[0].answer is None
    assert report.metrics["answer_in_context@2"] == 1.0  # the retrieved text is still read
    assert any("empty answer" in w and "no_text" in w for w in report.warnings), report.warnings


def test_default_metrics_are_never_deeper_than_k(tmp_path: Path) -> None:
    """Issue 24.4: `-k 3` reports hit@3, precision@3 and ndcg@3, not hit@5, precision@5 and
    ndcg@10 computed over 3 hits; a deeper metric asked for by name carries a stored note."""
    gold = GoldSet.from_records([{"id": "q", "question": "?", "relevant": ["a.md"]}])
    report = ragmeter.evaluate(gold, lambda q, k: [{"doc": "b.md"}, {"doc": "a.md"}], k=3)
    assert [m for m in report.metrics if "@" in m] == [
        "hit@1",
        "hit@3",
        "recall@3",
        "precision@3",
        "ndcg@3",
    ]
    assert report.warnings == []
    asked = ragmeter.evaluate(
        gold, lambda q, k: [{"doc": "b.md"}, {"doc": "a.md"}], k=3, metrics=["ndcg@10", "mrr"]
    )
    assert asked.metrics["ndcg@10"] == pytest.approx(1 / 1.584962500721156)  # 1/log2(3)
    assert asked.warnings == [
        "ndcg@10 is cut at 10 but the run kept only the top 3 hits: ranks 4-10 count as not "
        "retrieved (evaluate with -k 10 to measure that depth)"
    ]


def test_chunk_level_without_an_inventory_is_refused(tmp_path: Path) -> None:
    """Issue 24.4: `--level chunk` without a corpus counted only the retrieved chunks as
    relevant (recall@10 1.0 with one of two gold documents retrieved); it is refused (exit 2)
    unless the gold set lists its chunks itself."""
    gold = GoldSet.from_records(
        [{"id": "q", "question": "?", "relevant": ["a.md", "b.md"]}], name="two"
    )

    def one_doc(question: str, k: int) -> list[dict[str, Any]]:
        return [{"id": "a.md#0", "doc": "a.md"}]

    with pytest.raises(ConfigError, match="--level chunk needs the chunk inventory"):
        ragmeter.evaluate(gold, one_doc, level="chunk")
    listed = GoldSet.from_records([{"id": "q", "question": "?", "relevant": [{"chunk": "a.md#0"}]}])
    assert ragmeter.evaluate(listed, one_doc, level="chunk").metrics["recall@10"] == 1.0
    gold_path = tmp_path / "gold.yaml"
    gold_path.write_text("- id: q\n  question: '?'\n  relevant: [a.md, b.md]\n", encoding="utf-8")
    runfile = tmp_path / "run.trec"
    runfile.write_text("q Q0 a.md 1 1.0 t\n", encoding="utf-8")
    args = ["eval", "--gold", str(gold_path), "--retriever", f"run:{runfile}", "--level", "chunk"]
    result = RUNNER.invoke(main, [*args, "--store", str(tmp_path / "r.db")])
    assert result.exit_code == 2, result.output
    assert "--level chunk needs the chunk inventory" in result.output


def test_an_adapter_run_records_no_chunker_it_never_used(tmp_path: Path, store: Store) -> None:
    """Issue 24.6: a run of the user's own retriever recorded `--chunker`'s defaults
    (markdown, 1000, 100) though nothing was cut with them; only what shaped the run is kept.
    A built-in retriever, which does cut the corpus, keeps its chunker."""
    from ragmeter.evaluation.job import EvalJob
    from ragmeter.evaluation.jobs import run_job
    from ragmeter.examples import example_corpus_dir, example_gold_path

    runfile = tmp_path / "run.trec"
    runfile.write_text("install-standalone Q0 getting-started/installation.md 1 1.0 t\n")
    gold, corpus = str(example_gold_path()), str(example_corpus_dir())
    own = run_job(EvalJob(gold, f"run:{runfile}", corpus, k=3), store=store)
    assert "chunker" not in own.run.config
    bare = run_job(EvalJob(gold, f"run:{runfile}", k=3), store=store)
    assert "chunker" not in bare.run.config
    builtin = run_job(EvalJob(gold, "bm25", corpus), store=store)
    assert builtin.run.config["chunker"]["kind"] == "markdown"


def test_retriever_setup_keeps_its_chunks_at_chunk_level() -> None:
    """Issue 24.4: with the chunk inventory, chunk level is computed (recall over every
    relevant chunk of the corpus): one of two relevant chunks retrieved is recall 0.5."""
    from ragmeter.documents import Chunk

    chunks = [Chunk("a.md#0", "a.md", "x", 0, 1), Chunk("b.md#0", "b.md", "y", 0, 1)]
    gold = GoldSet.from_records([{"id": "q", "question": "?", "relevant": ["a.md", "b.md"]}])
    setup = RetrieverSetup(lambda q, k: [{"id": "a.md#0", "doc": "a.md"}], chunks=chunks)
    report = ragmeter.evaluate(gold, setup, level="chunk")
    assert report.metrics["recall@10"] == 0.5
