"""Issue 2 item 3 and issue 16.3: metric names parse to canonical identities."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragmeter.errors import InputError, MetricNameError
from ragmeter.metrics import (
    TREC_CUTOFFS,
    compute_metrics,
    families,
    metric,
    parse_metric,
    parse_metrics,
)

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
    # issue 16.3 -- ir_measures (parameterised spellings from its docs)
    "P(rel=2)@5": "precision(rel=2)@5",
    "P(rel=1)@5": "precision@5",
    "AP(rel=2)": "map(rel=2)",
    "nDCG(dcg='exp-log2')@10": "ndcg(dcg=exp-log2)@10",
    'nDCG(dcg="exp-log2")@10': "ndcg(dcg=exp-log2)@10",
    "nDCG(gains={1:1,2:3})@10": "ndcg(gains={1:1,2:3})@10",
    "R(rel=2)@100": "recall(rel=2)@100",
    "RR(rel=2)@10": "mrr(rel=2)@10",
    "Success(rel=2)@5": "hit(rel=2)@5",
    "Rprec(rel=2)": "rprec(rel=2)",
    "judged@10": "judged@10",  # ir_measures' Judged@10 is another quantity: refused
    "Bpref": "bpref",
    "RBP(p=0.8, rel=1)": "rbp(p=0.8)",  # ir_measures' RBP without rel is graded: refused
    "RBP(p=0.8, rel=2)": "rbp(p=0.8,rel=2)",
    "rbp(p=0.8)": "rbp(p=0.8)",
    "NumRel": "num_rel",
    "NumRet": "num_ret",
    "NumRet(rel=1)": "num_rel_ret",
    "nDCG(judged_only=True)@10": "ndcg(judged_only=true)@10",
    "P(rel=2,judged_only=True)@5": "precision(judged_only=true,rel=2)@5",
    # issue 16.2 -- ERR, the RBP residual, infAP
    "ERR(max_grade=4)@20": "err(max_grade=4)@20",
    "err(max_grade=3)": "err(max_grade=3)",
    "rbp_residual(p=0.8)": "rbp_resid(p=0.8)",
    "rbp_resid(p=0.95)": "rbp_resid(p=0.95)",
    "infAP": "infap",
    "infAP(rel=2)": "infap(rel=2)",
    "alpha_nDCG@10": "alpha_ndcg@10",
    "alpha_nDCG(alpha=0.3)@5": "alpha_ndcg(alpha=0.3)@5",
    # trec_eval (output keys and -m spellings)
    "num_rel": "num_rel",
    "num_ret": "num_ret",
    "num_rel_ret": "num_rel_ret",
    "bpref": "bpref",
    "rbp.p=0.95": "rbp(p=0.95)",
    "ndcg.1=3,2=9": "ndcg(gains={1:3,2:9})",
    "map_cut.10": "map@10",
    "P.5": "precision@5",
    "success.5": "hit@5",
    # ranx (its metric names)
    "hits@10": "num_rel_ret@10",
    "hit_rate@10": "hit@10",
    "precision@10": "precision@10",
    "recall@10": "recall@10",
    "f1@10": "f1@10",
    "r-precision": "rprec",
    "mrr@10": "mrr@10",
    "map@10": "map@10",
    "dcg@10": "dcg@10",
    "dcg_burges@10": "dcg(dcg=exp-log2)@10",
    "ndcg@10": "ndcg@10",
    "ndcg_burges@10": "ndcg(dcg=exp-log2)@10",
    "rbp.95": "rbp(gain=grade,p=0.95)",  # ranx's RBP weighs by the grade
    "rbp.8": "rbp(gain=grade,p=0.8)",
}

# Names that mean several metrics (issue 16.3): never the uncut measure.
LISTS = {
    "ndcg_cut": [f"ndcg@{k}" for k in TREC_CUTOFFS],
    "map_cut": [f"map@{k}" for k in TREC_CUTOFFS],
    "P": [f"precision@{k}" for k in TREC_CUTOFFS],
    "recall": [f"recall@{k}" for k in TREC_CUTOFFS],
    "success": ["hit@1", "hit@5", "hit@10"],
    "P_5,10": ["precision@5", "precision@10"],
    "P.5,10": ["precision@5", "precision@10"],
    "ndcg_cut.5,10": ["ndcg@5", "ndcg@10"],
    "recall.20,2000": ["recall@20", "recall@2000"],
    "nDCG@5,10": ["ndcg@5", "ndcg@10"],
    "official": [
        "num_ret", "num_rel", "num_rel_ret", "map", "rprec", "bpref", "mrr",
        *[f"precision@{k}" for k in TREC_CUTOFFS],
    ],
}  # fmt: skip


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


@pytest.mark.parametrize(("name", "expected"), LISTS.items(), ids=list(LISTS))
def test_list_spellings_expand(name: str, expected: list[str]) -> None:
    """Issue 16.3: trec_eval's bare `ndcg_cut`/`map_cut`/`P`/`recall` mean its default
    cutoffs (previously `ndcg_cut` parsed to uncut ndcg and `map_cut` to uncut map); list
    forms and `official` expand; parse_metric refuses them, saying they are several."""
    assert [str(m) for m in parse_metrics(name)] == expected
    assert [str(m) for m in parse_metrics([name, name])] == expected  # repeats dropped
    with pytest.raises(MetricNameError, match="means several metrics"):
        parse_metric(name)


def test_list_spellings_compute_every_metric() -> None:
    """Issue 16.3: compute_metrics expands list names (-m P works in the CLI the same way)."""
    result = compute_metrics({"q": {"a": 1}}, {"q": ["a"]}, ["P_5,10", "ndcg_cut"])
    assert list(result.means) == ["precision@5", "precision@10"] + [
        f"ndcg@{k}" for k in TREC_CUTOFFS
    ]
    assert result.means["precision@5"] == 0.2 and result.means["ndcg@1000"] == 1.0


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [("ndgc@10", "ndcg@10"), ("recal@5", "recall@5"), ("bperf", "bpref"), ("MPR", "mrr")],
)
def test_unknown_names_get_did_you_mean(name: str, suggestion: str) -> None:
    """Issue 16.3: an unknown name suggests the closest registered spelling."""
    with pytest.raises(MetricNameError, match=rf"did you mean {suggestion}\?"):
        parse_metric(name)


def test_rbp_needs_its_persistence() -> None:
    """Issue 16.3: bare `rbp` is refused: trec_eval means p=0.9, ir_measures 0.8."""
    with pytest.raises(MetricNameError, match="needs parameter p .*trec_eval uses 0.9"):
        parse_metric("rbp")


def test_empty_qrels_is_an_error_not_zero() -> None:
    """Issue 16.3: empty qrels raise a clear InputError (previously a mean of 0.0)."""
    with pytest.raises(InputError, match="the qrels hold no question"):
        compute_metrics({}, {"q": {"a": 1.0}}, ["mrr"])


@pytest.mark.parametrize(
    "bad",
    [
        "P(rel=0)@5",
        "P(rel=x)@5",
        "P(foo=1)@5",
        "nDCG(dcg='exp')@10",
        "rbp(p=1.5)",
        "rbp(p=0)",
        "ndcg(gains={0:1})",
        "P(rel=2,rel=3)@5",
        "rprec_5",
    ],
)
def test_bad_parameters_raise(bad: str) -> None:
    """Issue 16.3: an unknown or out-of-range parameter is a MetricNameError."""
    with pytest.raises(MetricNameError):
        parse_metric(bad)


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
    family = families()[name]
    required = {p.name: p.default for p in family.params if p.required}
    built = metric(name, None if family.cutoff == "none" else k, **required)
    assert parse_metric(str(built)) == built
    assert hash(parse_metric(str(built))) == hash(built)
    if family.param("rel") is not None:
        with_rel = metric(name, built.k, rel=k % 4 + 1, **required)
        assert parse_metric(str(with_rel)) == with_rel


@given(st.text(max_size=20))
def test_parse_never_crashes_with_other_errors(text: str) -> None:
    """Issue 2: arbitrary text either parses or raises MetricNameError."""
    try:
        metric = parse_metric(text)
    except MetricNameError:
        return
    assert parse_metric(str(metric)) == metric
