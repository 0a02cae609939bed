"""Issue 2 (Bad input): property tests of the metric invariants."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ragmeter.metrics import compute_metrics

NAMES = [
    "hit@3",
    "recall@3",
    "precision@3",
    "mrr",
    "mrr@3",
    "ndcg@3",
    "ndcg",
    "map",
    "map@3",
    "rprec",
]
DOCS = [f"d{i}" for i in range(8)]


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    qrels = {"q": draw(st.dictionaries(st.sampled_from(DOCS), st.integers(-2, 3)))}
    if draw(st.booleans()):
        ranking: Any = draw(st.lists(st.sampled_from(DOCS), max_size=12))  # repeats allowed
    else:
        ranking = draw(st.dictionaries(st.sampled_from(DOCS), st.sampled_from([0.0, 1.0, 2.5])))
    return qrels, {"q": ranking}


@given(cases())
def test_every_metric_is_in_unit_interval(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """Issue 2: every metric is within [0, 1] (never NaN), repeats or not."""
    result = compute_metrics(*case, NAMES)
    for name, value in result.means.items():
        assert 0.0 <= value <= 1.0, name


@given(cases(), st.integers(1, 3))
def test_relevant_item_at_rank_one_never_lowers(
    case: tuple[dict[str, Any], dict[str, Any]], grade: int
) -> None:
    """Issue 2: a new relevant item at rank 1 never lowers hit or mrr, nor ndcg when it
    has the top grade."""
    qrels, run = case
    ranking = run["q"]
    listed = (
        list(ranking)
        if isinstance(ranking, list)
        else sorted(ranking, key=lambda d: (ranking[d], d), reverse=True)
    )
    names = ["hit@3", "mrr", "mrr@3", "ndcg@3", "ndcg"]
    before = compute_metrics(qrels, {"q": listed}, names).means
    better_qrels = {"q": {**qrels["q"], "new": grade}}
    base = compute_metrics(better_qrels, {"q": listed}, names).means
    after = compute_metrics(better_qrels, {"q": ["new", *listed]}, names).means
    top = grade >= max([0, *qrels["q"].values()])
    for name in names:
        # nDCG can drop when the new item pushes a higher-graded one down, so the
        # guarantee is for an item graded at least as high as every other judgment.
        if name.startswith("ndcg") and not top:
            continue
        assert after[name] >= base[name] - 1e-12, name
    assert after["hit@3"] == 1.0 and after["mrr"] == 1.0
    assert after["hit@3"] >= before["hit@3"] and after["mrr"] >= before["mrr"]
