"""run:FILE — a precomputed TREC run served by gold item id (issue 3)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ragmeter.documents import Hit
from ragmeter.errors import RetrieverError
from ragmeter.retrievers import RunFileRetriever, rank_run, resolve_retriever

TREC_RUN = """\
q1 Q0 d3 1 9.5 bm25
q1 Q0 d1 2 7.0 bm25
q1 Q0 d2 3 7.0 bm25
q1 Q0 d4 4 1.5 bm25
q2 Q0 d9 1 3.0 bm25
"""


@pytest.fixture
def run_file(tmp_path: Path) -> Path:
    path = tmp_path / "bm25.trec"
    path.write_text(TREC_RUN)
    return path


def test_run_spec_serves_rankings_by_item_id(run_file: Path) -> None:
    """Issue 3: run:FILE looks rankings up by gold item id, best first, cut at k."""
    retriever = resolve_retriever(f"run:{run_file}")
    assert isinstance(retriever, RunFileRetriever)
    assert retriever.by_item_id is True
    assert retriever.is_async is False
    assert retriever.spec == f"run:{run_file}"
    assert retriever.retrieve_for("q1", "question text is ignored", 10) == [
        Hit(id="d3", doc="d3", score=9.5),
        # trec_eval breaks score ties by descending doc id, whatever the file's rank column says.
        Hit(id="d2", doc="d2", score=7.0),
        Hit(id="d1", doc="d1", score=7.0),
        Hit(id="d4", doc="d4", score=1.5),
    ]
    assert [hit.doc for hit in retriever.retrieve_for("q1", "", 2)] == ["d3", "d2"]
    assert asyncio.run(retriever.aretrieve_for("q2", "", 5)) == [Hit(id="d9", doc="d9", score=3.0)]
    assert retriever.query_ids == frozenset({"q1", "q2"})
    assert retriever.config["type"] == "run"
    assert retriever.config["queries"] == 2
    assert len(retriever.config["sha256"]) == 64
    retriever.close()


def test_missing_query_gets_no_hits(run_file: Path) -> None:
    """Issue 3: a gold item absent from the run gets [] (scores 0, stays in the mean)."""
    retriever = resolve_retriever(f"run:{run_file}")
    assert isinstance(retriever, RunFileRetriever)
    assert retriever.retrieve_for("q404", "anything", 10) == []


def test_run_cannot_answer_a_free_question(run_file: Path) -> None:
    """Issue 3: a run has no answer for a question it was not computed for."""
    retriever = resolve_retriever(f"run:{run_file}")
    with pytest.raises(RetrieverError, match="keyed by gold item id"):
        retriever.retrieve("a new question", 5)


def test_rank_run_keeps_unscored_order() -> None:
    """Issue 3: a JSONL run without scores is already in rank order."""
    assert rank_run(["b", "a", "c"]) == [
        Hit(id="b", doc="b"),
        Hit(id="a", doc="a"),
        Hit(id="c", doc="c"),
    ]


def test_tie_order_agrees_with_trec_eval() -> None:
    """Issue 3: our order of tied scores is the one trec_eval (pytrec_eval) uses."""
    from _trec import trec_eval

    pytest.importorskip("pytrec_eval")
    run = {"d3": 9.5, "d1": 7.0, "d2": 7.0, "d10": 7.0, "d4": 1.5}
    ranked = [hit.doc for hit in rank_run(run)]
    qrels = {f"q-{doc}": {doc: 1} for doc in run}
    values = trec_eval(qrels, {qid: run for qid in qrels}, {"recip_rank"})
    for doc in run:
        expected = values[f"q-{doc}"]["recip_rank"]
        assert 1 / (ranked.index(doc) + 1) == pytest.approx(expected), doc
