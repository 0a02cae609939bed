"""Issue 2 item 4: the semantics the metrics must have, with hand-checkable values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragmeter.errors import InputError, MetricNameError
from ragmeter.metrics import compute_metrics


def test_question_without_ranking_scores_zero_and_stays_in_mean() -> None:
    """Issue 2: a qrels question with no ranking scores 0, stays in the mean, is missing."""
    result = compute_metrics({"q1": {"a": 1}, "q2": {"b": 1}}, {"q1": ["a"]}, ["hit@1", "ndcg@10"])
    assert result.per_query["hit@1"] == {"q1": 1.0, "q2": 0.0}
    assert result.means == {"hit@1": 0.5, "ndcg@10": 0.5}
    assert result.missing == ["q2"]


def test_empty_ranking_is_not_missing_but_scores_zero() -> None:
    """Issue 2: an empty ranking is a ranking (not missing) and scores 0."""
    result = compute_metrics({"q1": {"a": 1}}, {"q1": []}, ["mrr", "recall@5"])
    assert result.means == {"mrr": 0.0, "recall@5": 0.0}
    assert result.missing == []


def test_unjudged_item_is_non_relevant_and_run_only_queries_are_ignored() -> None:
    """Issue 2: an item absent from the judgments is non-relevant; extra run queries ignored."""
    result = compute_metrics({"q1": {"a": 1}}, {"q1": ["x", "a"], "other": ["z"]}, ["mrr"])
    assert result.per_query == {"mrr": {"q1": 0.5}}


def test_zero_and_negative_grades_are_non_relevant() -> None:
    """Issue 2: grade 0 and negative grades are non-relevant and add no gain."""
    qrels = {"q1": {"neg": -1, "zero": 0, "good": 2}}
    result = compute_metrics(qrels, {"q1": ["neg", "zero", "good"]}, ["ndcg@3", "mrr", "P@3"])
    # DCG = 2 / log2(4) = 1; IDCG = 2 / log2(2) = 2
    assert result.per_query["ndcg@3"]["q1"] == pytest.approx(0.5, abs=1e-12)
    assert result.per_query["mrr"]["q1"] == pytest.approx(1 / 3)
    assert result.per_query["precision@3"]["q1"] == pytest.approx(1 / 3)


def test_precision_divides_by_k_even_when_fewer_retrieved() -> None:
    """Issue 2: P@k divides by k even when fewer than k items were retrieved."""
    result = compute_metrics({"q1": {"a": 1}}, {"q1": ["a"]}, ["precision@10"])
    assert result.means["precision@10"] == pytest.approx(0.1)


def test_map_and_rprec_divide_by_all_relevant() -> None:
    """Issue 2: MAP and R-precision divide by all relevant items, retrieved or not."""
    qrels = {"q1": {"a": 1, "b": 1, "c": 1, "d": 1}}
    result = compute_metrics(qrels, {"q1": ["a", "x", "b"]}, ["map", "rprec", "map@2"])
    assert result.means["map"] == pytest.approx((1 / 1 + 2 / 3) / 4)
    assert result.means["rprec"] == pytest.approx(2 / 4)  # a and b within the top R = 4
    assert result.means["map@2"] == pytest.approx(1 / 4)


def test_mrr_at_k_is_zero_when_first_relevant_below_k() -> None:
    """Issue 2: mrr@k is 0 when the first relevant item is below rank k."""
    result = compute_metrics({"q1": {"a": 1}}, {"q1": ["x", "y", "a"]}, ["mrr@2", "mrr@3", "mrr"])
    assert result.means == {
        "mrr@2": 0.0,
        "mrr@3": pytest.approx(1 / 3),
        "mrr": pytest.approx(1 / 3),
    }


def test_ndcg_ideal_uses_all_judged_items_cut_at_k() -> None:
    """Issue 2: the ideal DCG comes from all judged items (not the retrieved ones), cut at k."""
    qrels = {"q1": {"a": 1, "b": 3, "c": 2}}
    result = compute_metrics(qrels, {"q1": ["a"]}, ["ndcg@2", "ndcg"])
    idcg2 = 3 + 2 / math.log2(3)
    idcg = idcg2 + 1 / math.log2(4)
    assert result.means["ndcg@2"] == pytest.approx(1 / idcg2, abs=1e-12)
    assert result.means["ndcg"] == pytest.approx(1 / idcg, abs=1e-12)


def test_hit_is_success() -> None:
    """Issue 2: hit@k = 1 if any relevant item is in the top k (trec_eval success_k)."""
    result = compute_metrics({"q1": {"a": 1, "b": 1}}, {"q1": ["x", "b", "a"]}, ["hit@1", "hit@2"])
    assert result.means == {"hit@1": 0.0, "hit@2": 1.0}


def test_duplicate_document_counts_once_so_recall_never_exceeds_one() -> None:
    """Issue 2: a document retrieved twice counts once (first occurrence wins)."""
    result = compute_metrics(
        {"q1": {"a": 1, "b": 1}}, {"q1": ["a", "a", "a", "b"]}, ["recall@3", "recall@2", "P@2"]
    )
    assert result.means["recall@3"] == 1.0  # b moves up to rank 2 once repeats are dropped
    assert result.means["recall@2"] == 1.0
    assert result.means["precision@2"] == 1.0


def test_question_with_no_relevant_item_scores_zero_never_nan() -> None:
    """Issue 2: no relevant judgment -> every metric 0 (as trec_eval), never NaN or > 1."""
    names = ["recall@5", "ndcg@5", "map", "rprec", "mrr", "hit@5", "P@5", "ndcg"]
    result = compute_metrics({"q1": {"a": 0, "b": -1}, "q2": {}}, {"q1": ["a", "b"]}, names)
    for name, values in result.per_query.items():
        assert values == {"q1": 0.0, "q2": 0.0}, name


def test_scored_run_orders_by_score_then_doc_id_descending() -> None:
    """Issue 2: scored runs follow trec_eval order: score desc, ties by doc id desc."""
    qrels = {"q1": {"d10": 1}}
    # d9 > d10 > d1 as strings (strcmp), so d10 is rank 2 among the three tied docs
    run = {"q1": {"d1": 1.0, "d10": 1.0, "d9": 1.0, "top": 2.0}}
    assert compute_metrics(qrels, run, ["mrr"]).means["mrr"] == pytest.approx(1 / 3)


def test_rankings_as_tuple_and_numpy_array() -> None:
    """Issue 2: tuples and numpy arrays of ids are accepted as ranked lists."""
    qrels = {"q1": {"b": 1}, "q2": {"b": 1}}
    run = {"q1": ("a", "b"), "q2": np.array(["b", "a"])}
    assert compute_metrics(qrels, run, ["mrr"]).per_query["mrr"] == {"q1": 0.5, "q2": 1.0}


def test_metric_names_are_canonical_and_repeats_collapse() -> None:
    """Issue 2: result keys are canonical names; two spellings of one metric give one key."""
    result = compute_metrics({"q1": {"a": 1}}, {"q1": ["a"]}, ["nDCG@10", "ndcg_cut_10", "RR"])
    assert list(result.means) == ["ndcg@10", "mrr"]
    assert all(type(v) is float for v in result.means.values())


@pytest.mark.parametrize("name", ["answer_ok", "faithful", "answer_in_context@5", "latency_p50_ms"])
def test_non_ranking_metrics_are_refused(name: str) -> None:
    """Issue 2: compute_metrics refuses metrics that evaluate() computes."""
    with pytest.raises(MetricNameError, match="computed by evaluate"):
        compute_metrics({"q1": {"a": 1}}, {"q1": ["a"]}, [name])


def test_bad_ranking_values_are_input_errors() -> None:
    """Issue 2: a NaN score or a ranking of the wrong type is a clear InputError."""
    with pytest.raises(InputError, match="q1"):
        compute_metrics({"q1": {"a": 1}}, {"q1": {"a": 1.0, "b": float("nan")}}, ["mrr"])
    with pytest.raises(InputError, match="q1"):
        compute_metrics({"q1": {"a": 1}}, {"q1": 3}, ["mrr"])


def test_empty_qrels_is_an_input_error() -> None:
    """Issue 16.3 (was issue 2's "0 means"): no questions at all is a clear InputError,
    neither 0.0 (ragmeter before) nor NaN (ir_measures) nor {} (pytrec_eval)."""
    with pytest.raises(InputError, match="nothing to evaluate"):
        compute_metrics({}, {"q1": ["a"]}, ["mrr"])
