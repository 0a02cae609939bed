"""Issue 2 item 3: metric names parse to canonical identities."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragmeter.errors import MetricNameError
from ragmeter.metrics import Metric, families, parse_metric

SPELLINGS = {
    "nDCG@10": "ndcg@10",
    "ndcg_cut_10": "ndcg@10",
    "ndcg_cut.10": "ndcg@10",
    "ndcg": "ndcg",
    "R@100": "recall@100",
    "recall_100": "recall@100",
    "P@5": "precision@5",
    "P_5": "precision@5",
    "RR": "mrr",
    "recip_rank": "mrr",
    "RR@10": "mrr@10",
    "AP": "map",
    "map": "map",
    "AP@10": "map@10",
    "map_cut_10": "map@10",
    "Success@5": "hit@5",
    "success_5": "hit@5",
    "Rprec": "rprec",
    "hit@3": "hit@3",
    "answer_in_context@5": "answer_in_context@5",
    "latency_p95_ms": "latency_p95_ms",
}


@pytest.mark.parametrize(("spelling", "canonical"), SPELLINGS.items(), ids=list(SPELLINGS))
def test_spellings_parse_to_canonical(spelling: str, canonical: str) -> None:
    """Issue 2: ir_measures and trec_eval spellings parse to the canonical metric."""
    metric = parse_metric(spelling)
    assert str(metric) == canonical
    assert parse_metric(canonical) == metric


def test_kinds() -> None:
    """Issue 2: every registered metric has a kind."""
    kinds = {
        str(parse_metric(n)): parse_metric(n).kind
        for n in ["ndcg@10", "answer_in_context@3", "answer_ok", "faithful", "latency_p50_ms"]
    }
    assert kinds == {
        "ndcg@10": "ranking",
        "answer_in_context@3": "answer",
        "answer_ok": "generation",
        "faithful": "judge",
        "latency_p50_ms": "latency",
    }


@pytest.mark.parametrize(
    "bad", ["foo", "hit", "ndcg@0", "ndcg@-1", "ndcg@x", "rprec@5", "P_x", "", "answer_ok@3"]
)
def test_bad_names_raise_metric_name_error(bad: str) -> None:
    """Issue 2: a bad name raises MetricNameError (a ValueError) with a clear message."""
    with pytest.raises(MetricNameError):
        parse_metric(bad)


def test_unknown_name_lists_known_metrics() -> None:
    """Issue 2: the error for an unknown name lists the known names."""
    with pytest.raises(MetricNameError, match=r"known metrics: hit@k, recall@k"):
        parse_metric("bleu")


@given(
    st.sampled_from(sorted(families())),
    st.integers(min_value=1, max_value=10_000),
)
def test_parse_of_str_round_trips(name: str, k: int) -> None:
    """Issue 2: parse_metric(str(m)) == m for every metric."""
    cutoff = families()[name].cutoff
    metric = Metric(name) if cutoff == "none" else Metric(name, k)
    assert parse_metric(str(metric)) == metric
    assert hash(parse_metric(str(metric))) == hash(metric)


@given(st.text(max_size=20))
def test_parse_never_crashes_with_other_errors(text: str) -> None:
    """Issue 2: arbitrary text either parses or raises MetricNameError."""
    try:
        metric = parse_metric(text)
    except MetricNameError:
        return
    assert parse_metric(str(metric)) == metric
