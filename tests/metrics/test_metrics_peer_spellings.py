"""Issue 24.7: a peer's spelling means the peer's metric, or is refused with the alternative.

Checked against ir_measures itself (installed with the dev extra).
"""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter.errors import MetricNameError
from ragmeter.metrics import compute_metrics, parse_metric

ir_measures = pytest.importorskip("ir_measures")


def _ir_judged(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], k: int
) -> dict[str, float]:
    from ir_measures import Judged, Qrel, ScoredDoc

    judged = [Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    scored = [ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    return {m.query_id: m.value for m in ir_measures.iter_calc([Judged @ k], judged, scored)}


def test_ir_measures_judged_is_refused_with_the_alternative() -> None:
    """Issue 24.7: `Judged@10` was read as ragmeter's judged@10 (÷ k); ir_measures divides by
    min(k, ranking length), counts negative grades as judged and breaks ties by doc id
    ascending, so the spelling is refused, naming judged@k; judged@10 still parses."""
    with pytest.raises(MetricNameError) as refused:
        parse_metric("Judged@10")
    message = str(refused.value)
    assert "min(k, ranking length)" in message and "ask for judged@k" in message
    assert str(parse_metric("judged@10")) == "judged@10"


def test_where_judged_agrees_with_ir_measures_and_where_it_does_not() -> None:
    """Issue 24.7: on rankings at least k long, with distinct scores and no negative grade,
    ragmeter's judged@k equals ir_measures' Judged@k; on a ranking of 2 items for k=5
    ir_measures gives judged/2 where ragmeter (trec_eval) gives judged/5, and a negative
    grade is judged to ir_measures but not to ragmeter: the two quantities differ, hence the
    refusal rather than a silent mapping."""
    rng = np.random.default_rng(24)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(40):
        pool = [f"d{i:02d}" for i in range(30)]
        judged = rng.choice(pool, 12, replace=False)
        qrels[f"q{q}"] = {str(d): int(rng.integers(0, 3)) for d in judged}
        picked = rng.choice(pool, 15, replace=False)
        scores = rng.choice(1000, 15, replace=False) / 1000  # distinct scores
        run[f"q{q}"] = {str(d): float(s) for d, s in zip(picked, scores, strict=True)}
    for k in (1, 5, 10):
        ours = compute_metrics(qrels, run, [f"judged@{k}"]).per_query[f"judged@{k}"]
        reference = _ir_judged(qrels, run, k)
        assert reference.keys() == ours.keys()
        for qid, value in reference.items():
            assert ours[qid] == pytest.approx(value, abs=1e-12), (k, qid)
    short = {"q": {"a": 1, "b": 0, "c": 1}}
    two = {"q": {"a": 0.9, "x": 0.5}}  # one judged item of two retrieved
    assert _ir_judged(short, two, 5) == {"q": 0.5}
    assert compute_metrics(short, two, ["judged@5"]).per_query["judged@5"] == {"q": 0.2}
    negative = {"q": {"a": -1, "b": 1}}
    both = {"q": {"a": 0.9, "b": 0.5}}
    assert _ir_judged(negative, both, 2) == {"q": 1.0}
    assert compute_metrics(negative, both, ["judged@2"]).per_query["judged@2"] == {"q": 0.5}


def test_ir_measures_rbp_without_rel_is_refused() -> None:
    """Issue 24.7: ir_measures' `RBP(p=0.8)` without `rel` is graded RBP (its parameter says
    so); ragmeter read it as binary. It is refused, naming the binary and graded spellings;
    with `rel=` it is binary RBP in both, and ragmeter's own `rbp(p=…)` is unchanged."""
    measure = ir_measures.parse_measure("RBP(p=0.8)")
    assert "graded relevance" in measure.SUPPORTED_PARAMS["rel"].desc
    assert measure["rel"] is ir_measures.providers.base.NOT_PROVIDED
    for spelling in ("RBP(p=0.8)", "RBP"):
        with pytest.raises(MetricNameError, match=r"graded RBP .* rbp\(p=\.\.\.,gain=grade\)"):
            parse_metric(spelling)
    assert str(parse_metric("RBP(p=0.8,rel=1)")) == "rbp(p=0.8)"
    assert str(parse_metric("RBP(p=0.8,rel=2)")) == "rbp(p=0.8,rel=2)"
    assert str(parse_metric("rbp(p=0.8)")) == "rbp(p=0.8)"
    assert str(parse_metric("rbp.8")) == "rbp(gain=grade,p=0.8)"  # ranx: graded, as ranx is
