"""Issue 29.2: ``evaluate()`` scores a fresh run from what it kept of each result while the
run went (``evaluation/finish.py``), not from every result held in memory. Its per-question
values must be trec_eval's on the same hits, and equal a re-score of the stored rows (the
path a resumed run takes)."""

from __future__ import annotations

import random
from typing import Any

import pytest

import ragmeter
from _trec import DEFAULT_MEASURES as MEASURES
from _trec import trec_eval
from ragmeter.errors import RetrieverError
from ragmeter.evaluation.finish import StoredResults
from ragmeter.evaluation.report import build_report
from ragmeter.evaluation.scoring import score_results
from ragmeter.gold.goldset import GoldSet
from ragmeter.store import Store

DOCS = [f"doc{i}" for i in range(60)]


def _gold(rng: random.Random, n: int) -> GoldSet:
    records: list[dict[str, Any]] = []
    for i in range(n):
        relevant = [
            {"doc": doc, "grade": rng.choice([1, 1, 2, 3])}
            for doc in rng.sample(DOCS, rng.choice([1, 1, 2, 3]))
        ]
        records.append({"id": f"q{i}", "question": f"question {i}", "relevant": relevant})
    # Nothing to find: only grade-0 judgments (left out of the means, issue 24.4).
    records.append({"id": "zero", "question": "zero", "relevant": [{"doc": "doc1", "grade": 0}]})
    return GoldSet.from_records(records)


def _rankings(rng: random.Random, gold: GoldSet) -> dict[str, list[dict[str, Any]]]:
    """Per question: chunks of documents, a document often retrieved twice (doc level counts
    it once, at its first chunk); some questions fail."""
    out = {}
    for item in gold:
        docs = rng.sample(DOCS, rng.randint(0, 12))
        if docs and rng.random() < 0.3:
            docs.insert(rng.randint(1, len(docs)), docs[0])  # a second chunk of a document
        out[item.question] = [
            {"id": f"{doc}#{n}", "doc": doc, "score": 100.0 - n} for n, doc in enumerate(docs)
        ]
    return out


def test_fresh_run_values_are_trec_eval_on_the_same_hits(store: Store) -> None:
    rng = random.Random(292)
    gold = _gold(rng, 240)
    rankings = _rankings(rng, gold)
    failing = {f"question {i}" for i in range(0, 240, 37)}

    def search(question: str, k: int) -> list[dict[str, Any]]:
        if question in failing:
            raise RetrieverError("backend down")
        return rankings[question][:k]

    report = ragmeter.evaluate(gold, search, k=10, store=store, concurrency=4)
    assert report.n_errors == len(failing)

    # The reference: trec_eval on the documents each question got, in first-seen order
    # (decreasing scores), over the items with something to find; a failed question has no
    # ranking, so it scores 0 (trec_eval -c).
    qrels = {i: g for i, g in gold.qrels().items() if any(v > 0 for v in g.values())}
    run: dict[str, dict[str, float]] = {}
    for item in gold:
        if item.question in failing or item.id not in qrels:
            continue
        docs = list(dict.fromkeys(hit["doc"] for hit in rankings[item.question][:10]))
        if docs:
            run[item.id] = {doc: float(len(docs) - n) for n, doc in enumerate(docs)}
    expected = trec_eval(qrels, run, MEASURES.values())
    stored = store.question_metrics(report.run.id)
    for ours, theirs in MEASURES.items():
        values = {qid: expected.get(qid, {}).get(theirs, 0.0) for qid in qrels}
        assert report.per_query[ours].keys() == values.keys(), ours
        for qid, value in values.items():
            assert report.per_query[ours][qid] == pytest.approx(value, abs=1e-12), (ours, qid)
            assert stored[ours][qid] == pytest.approx(value, abs=1e-12), (ours, qid)
        mean = sum(values.values()) / len(values)
        assert report.metrics[ours] == pytest.approx(mean, abs=1e-12), ours


def test_fresh_run_equals_a_rescore_of_its_stored_rows(store: Store) -> None:
    """Passage level, quotes, answers: the values kept on the way equal ``score_results``
    over the stored rows (what a resumed run is scored from); the report equals the one
    read back from the store, except that it spells out only the misses' rankings."""
    rng = random.Random(29)
    texts = {doc: f"{doc} says the refund window is {n} days" for n, doc in enumerate(DOCS)}
    records = []
    for i in range(120):
        doc = rng.choice(DOCS)
        quote = f"window is {DOCS.index(doc)} days"
        records.append(
            {
                "id": f"q{i}",
                "question": f"question {i}",
                "relevant": [{"doc": doc, "quote": quote, "grade": rng.choice([1, 2])}],
                "answer_contains": [f"{DOCS.index(doc)} days"] if i % 3 == 0 else [],
            }
        )
    gold = GoldSet.from_records(records)

    def search(question: str, k: int) -> list[dict[str, Any]]:
        local = random.Random(question)
        docs = local.sample(DOCS, 8)
        return [
            {"id": f"{d}#0", "doc": d, "text": texts[d] if local.random() < 0.9 else None}
            for d in docs
        ]

    report = ragmeter.evaluate(gold, search, k=6, store=store)
    assert report.run.level == "passage"
    rescored = score_results(
        gold,
        store.results(report.run.id),
        level="passage",
        k=6,
        metrics=list(report.metrics),
    )
    assert rescored.means == report.metrics
    assert rescored.per_query == report.per_query
    assert "answer_in_context@6" in report.per_query

    whole = build_report(store, report.run.id)
    assert [(r.id, r.hit, r.first_relevant_rank) for r in report.rows] == [
        (r.id, r.hit, r.first_relevant_rank) for r in whole.rows
    ]
    assert report.warnings == whole.warnings
    assert [m.id for m in report.misses] == [m.id for m in whole.misses]
    assert all(m.retrieved == w.retrieved for m, w in zip(report.misses, whole.misses, strict=True))
    assert all(not r.retrieved for r in report.rows if r.hit)
    # report.results reads the store when asked, so no result stays in memory.
    assert isinstance(report.results, StoredResults)
    assert len(report.results) == len(gold)
    assert [h.doc for h in report.results["q1"].hits] == [h.doc for h in whole.results["q1"].hits]
