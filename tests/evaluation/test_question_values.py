"""Per-question metric values kept as columns until read (issue 29.2): the same dicts, the
same stored bytes, and judgments shared with ``ScoreInputs`` without changing the caller's."""

from __future__ import annotations

import math

import numpy as np

from ragmeter.documents import Hit
from ragmeter.evaluation.score_inputs import ScoreInputs
from ragmeter.evaluation.scoring import score_inputs, score_results
from ragmeter.gold.goldset import GoldSet
from ragmeter.metrics import compute_metrics
from ragmeter.run import QuestionResult, QuestionValues
from ragmeter.store import Store
from ragmeter.store._metric_columns import _pairs, column_rows

METRICS = ["hit@1", "mrr", "ndcg@10", "recall@5", "map", "precision@5"]


def _gold(n: int) -> GoldSet:
    # ids out of code point order (q10 before q2), so the stored columns are sorted
    return GoldSet.from_records(
        [
            {"id": f"q{i}", "question": f"question {i}", "relevant": [f"d{i % 7}", f"d{i % 3}"]}
            for i in range(n)
        ]
    )


def _results(n: int) -> list[QuestionResult]:
    return [
        QuestionResult(f"q{i}", tuple(Hit(f"d{(i + j) % 9}", f"d{(i + j) % 9}") for j in range(6)))
        for i in range(n)
        if i % 5  # every fifth question has no result: it scores 0
    ]


def test_scores_equal_compute_metrics_dicts() -> None:
    gold = _gold(40)
    scores = score_results(gold, _results(40), level="doc", k=10, metrics=METRICS)
    assert isinstance(scores.per_query, QuestionValues)
    rankings = {r.item_id: [h.doc for h in r.hits] for r in _results(40)}
    expected = compute_metrics(gold.qrels(), rankings, METRICS)
    assert list(scores.per_query) == list(expected.per_query) == METRICS
    assert scores.per_query == expected.per_query
    assert scores.means == expected.means
    for metric in METRICS:  # read as dicts: the same keys in the same order
        assert list(scores.per_query[metric].items()) == list(expected.per_query[metric].items())


def test_stored_columns_are_the_bytes_of_the_dicts() -> None:
    gold = _gold(30)
    scores = score_results(gold, _results(30), level="doc", k=10, metrics=METRICS)
    as_dicts = {m: dict(v) for m, v in scores.per_query.items()}
    fresh = score_results(gold, _results(30), level="doc", k=10, metrics=METRICS).per_query
    assert isinstance(fresh, QuestionValues) and fresh.column("mrr") is not None
    assert list(column_rows(1, _pairs(fresh))) == list(column_rows(1, as_dicts.items()))
    with Store.memory() as store:
        store.save_gold(gold)
        run = store.create_run(
            name="r", gold_hash=gold.hash, retriever="x", config={}, k=10, level="doc", commit=None
        )
        store.set_metrics(run.id, scores.means, fresh)
        assert store.question_metrics(run.id) == {m: as_dicts[m] for m in sorted(METRICS)}


def test_a_column_read_is_built_once_and_then_stored_from_its_dict() -> None:
    values = QuestionValues()
    values.add_columns(["b", "a"], {"x": np.array([0.5, math.nan]), "y": np.array([1.0, 2.0])})
    first = values["x"]
    assert values["x"] is first and values.column("x") is None
    first["a"] = 3.0  # a caller's change to the dict it read is what is stored
    rows = list(column_rows(1, _pairs(values)))  # x from its dict, y from its column
    assert [row["item_ids"] for row in rows] == ['["a", "b"]', None]
    assert rows[0]["values_f64le"] == np.array([3.0, 0.5]).astype("<f8").tobytes()
    assert rows[1]["values_f64le"] == np.array([2.0, 1.0]).astype("<f8").tobytes()
    only = values.only(["y", "z"])
    assert list(only) == ["y"] and only.column("y") is not None


def test_shared_judgments_are_copied_before_a_grade_joins_them() -> None:
    gold = _gold(4)
    judged = gold.qrels()
    before = {i: dict(g) for i, g in judged.items()}
    inputs = ScoreInputs.start(gold, level="doc", k=10, qrels=judged)
    graded = QuestionResult("q1", (Hit("zz", "zz"), Hit("d1", "d1")), extra={"grades": [2, 1]})
    inputs.add(graded)
    inputs.add(QuestionResult("q2", (Hit("d2", "d2"),), extra={"grades": [1]}))
    assert judged == before  # the caller's judgments (the run's Judgments) are unchanged
    assert inputs.qrels["q1"] == {**before["q1"], "zz": 2}
    assert inputs.qrels["q2"] is judged["q2"]  # nothing joined: still shared
    again = QuestionResult("q1", (Hit("yy", "yy"),), extra={"grades": [1]})
    inputs.add(again)  # copied once: later grades join the copy
    assert inputs.qrels["q1"] == {**before["q1"], "zz": 2, "yy": 1} and judged == before
    assert score_inputs(inputs, ["mrr"]).means["mrr"] > 0


def test_plain_records_equal_the_loop() -> None:
    """The brief report's records zipped from columns equal the loop's, in any stored order."""
    import random

    from ragmeter.evaluation.brief import _GoldColumns, _records
    from ragmeter.evaluation.summary import StoredSummaries

    gold = _gold(50)
    rng = random.Random(7)
    order = list(gold.ids)
    rng.shuffle(order)  # finished out of order, as threads finish
    kept = {
        item_id: (
            rng.random(),
            "boom" if n % 9 == 0 else None,
            None,
            {"first": rng.choice([None, 1, 3, 12]), "top": rng.randint(0, 10), "gold": n % 2},
        )
        for n, item_id in enumerate(order)
    }
    summaries = StoredSummaries.from_kept(kept)
    golds = _GoldColumns.of(gold)
    at = summaries.positions(golds.ids)
    fast = _records(golds, summaries, at, 10, set(), {}, {})
    loop = _records(golds, summaries, at, 10, {"not an item"}, {}, {})  # the loop's way
    assert fast == loop and fast[2][0] > 0
