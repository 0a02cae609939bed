"""Issue 16.2: the new measures on cases checkable by hand (trec_eval agreement is in
test_metrics_trec_eval10.py; dcg and f1, which trec_eval lacks, are pinned here)."""

from __future__ import annotations

import math

import pytest

from ragmeter.metrics import compute_from_matrix, compute_metrics, families, parse_metric

# ranks: 1 d3 (grade 0), 2 d1 (1), 3 d9 (unjudged), 4 d2 (2), 5 d4 (-1: pooled, unjudged)
QRELS = {"q1": {"d1": 1, "d2": 2, "d3": 0, "d4": -1, "d5": 3}}
RUN = {"q1": ["d3", "d1", "d9", "d2", "d4"]}
L2 = math.log2


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("dcg@3", 1 / L2(3)),
        ("dcg", 1 / L2(3) + 2 / L2(5)),
        ("dcg(dcg=exp-log2)@5", 1 / L2(3) + 3 / L2(5)),
        ("ndcg(dcg=exp-log2)@2", (1 / L2(3)) / (7 + 3 / L2(3))),
        ("ndcg(gains={1:10})@2", (10 / L2(3)) / (10 + 3 / L2(3))),  # ideal: d1 then d5
        ("f1@2", 2 * 1 / (2 + 3)),  # P = 1/2, R = 1/3
        ("f1(rel=2)@4", 2 * 1 / (4 + 2)),  # P = 1/4, R = 1/2
        ("rbp(p=0.5)", 0.5 * (0.5**1 + 0.5**3)),
        ("rbp(p=0.5,rel=2)", 0.5 * 0.5**3),
        ("rbp(p=0.5,gain=grade)", 0.5 * (1 * 0.5**1 + 2 * 0.5**3)),  # ranx's graded RBP
        ("judged@3", 2 / 3),  # d3 and d1; d9 is unjudged
        ("judged@5", 3 / 5),  # d4's grade -1 is "pooled, unjudged" as in trec_eval
        ("judged@10", 3 / 10),
        ("bpref", (0.0 + 0.0) / 3),  # N = 1 (d3) above both relevant ones
        ("num_rel", 3.0),
        ("num_rel(rel=2)", 2.0),
        ("num_rel_ret", 2.0),
        ("num_rel_ret@3", 1.0),
        ("num_ret", 5.0),
        ("precision(rel=2)@4", 1 / 4),
        ("mrr(rel=2)", 1 / 4),
        ("hit(rel=3)@5", 0.0),
        # infAP (Yilmaz & Aslam): d1 at 2 has d3 (judged 0) above -> 1/2 + (1/2) eps/(1 + 2 eps);
        # d2 at 4 has d3, d1 pooled and d9 unpooled above -> 1/4 + (2/4)(1 + eps)/(2 + 2 eps)
        ("infap", (0.5 + 0.5 * 1e-5 / (1 + 2e-5) + 0.5) / 3),
    ],
)
def test_hand_computed_values(name: str, expected: float) -> None:
    """Issue 16.2: each new measure and parameter on a five-document ranking."""
    value = compute_metrics(QRELS, RUN, [name]).per_query[str(parse_metric(name))]["q1"]
    assert value == pytest.approx(expected, abs=1e-12)


def test_bpref_counts_only_the_first_r_nonrelevant() -> None:
    """Issue 16.2: bpref = 1 - min(n, R) / min(N, R) per relevant item (Buckley & Voorhees)."""
    qrels = {"q": {"n1": 0, "n2": 0, "n3": 0, "r1": 1, "r2": 1}}
    run = {"q": ["n1", "r1", "n2", "n3", "r2"]}
    # R = 2, N = 3: r1 has 1 non-relevant above -> 1 - 1/2; r2 has 3 -> 1 - 2/2
    assert compute_metrics(qrels, run, ["bpref"]).means["bpref"] == pytest.approx(0.25)


def test_missing_question_scores_zero_but_keeps_num_rel() -> None:
    """Issue 16.2: a question with no ranking scores 0 (num_rel is still R, as trec_eval -c)."""
    result = compute_metrics(QRELS, {}, ["num_rel", "num_ret", "judged@5", "bpref", "dcg"])
    assert result.per_query["num_rel"]["q1"] == 3.0
    assert {m: v["q1"] for m, v in result.per_query.items() if m != "num_rel"} == {
        "num_ret": 0.0,
        "judged@5": 0.0,
        "bpref": 0.0,
        "dcg": 0.0,
    }


def test_infap_needs_the_pool_so_the_matrix_api_refuses_it() -> None:
    """Issue 16.2 (infAP): a dense grade matrix cannot tell pooled-unjudged (negative grade)
    from unpooled documents, so infap there is a ValueError, not a number."""
    with pytest.raises(ValueError, match="infap needs the ranks of pooled unjudged items"):
        compute_from_matrix([[1, 0]], [1], [[1]], ["infap"])


def test_matrix_api_refuses_measures_that_need_unjudged_information() -> None:
    """Issue 16.2: compute_from_matrix holds positive grades only, so judged@k is refused
    (it cannot tell unjudged from judged 0) instead of returning a wrong number."""
    with pytest.raises(ValueError, match="judged@k and bpref need"):
        compute_from_matrix([[1, 0]], [1], [[1]], ["judged@2"])


def test_every_ranking_family_has_a_reference_and_round_trips() -> None:
    """Issue 16.2: every family is documented with formula and citation, and its canonical
    string parses back (with its parameters)."""
    for family in families().values():
        assert family.formula and family.citation
    for name in ["ndcg(dcg=exp-log2,gains={1:2,3:9})@10", "rbp(p=0.95,rel=2)", "f1(rel=3)@7"]:
        assert str(parse_metric(name)) == name
        assert parse_metric(str(parse_metric(name))) == parse_metric(name)


@pytest.mark.parametrize("max_comparisons", [1, 7, 1 << 23])
def test_scored_ranks_in_batches(max_comparisons: int) -> None:
    """Issue 16.4: the vectorised ranker gives trec_eval's ranks (ties by doc id
    descending) however the comparisons are batched."""
    from ragmeter.metrics._ranks import scored_ranks

    rankings = [
        {"a": 1.0, "b": 3.0, "c": 3.0, "d": 0.5},
        {"x": 2.0},
        {"p": 1.0, "q": 1.0, "r": 1.0},
    ]
    entries = [(0, "a"), (0, "b"), (0, "c"), (0, "d"), (1, "x"), (2, "p"), (2, "r")]
    ranks = scored_ranks(
        ["q0", "q1", "q2"],
        rankings,
        [q for q, _ in entries],
        [d for _, d in entries],
        max_comparisons=max_comparisons,
    )
    assert ranks.tolist() == [3, 2, 1, 4, 1, 3, 1]
