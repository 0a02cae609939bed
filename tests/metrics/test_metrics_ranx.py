"""Issue 16.2: measures trec_eval lacks agree with ranx (the `bench` extra): f1@k, dcg@k,
Burges (exponential-gain) dcg/ndcg, and hits@k, on random graded runs.

Scores are distinct, so the order does not depend on how a library breaks ties.
ranx compiles its kernels with numba on first use (cached on disk afterwards).
"""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter.metrics import compute_metrics, parse_metric

ranx = pytest.importorskip("ranx")

TOLERANCE = 1e-9
NAMES = [
    f"{name}@{k}"
    for name in ("f1", "dcg", "dcg_burges", "ndcg_burges", "hits", "hit_rate", "precision")
    for k in (1, 3, 10)
] + ["r-precision", "bpref", "rbp.8"]


def random_case(seed: int) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(80):
        pool = [f"d{i}" for i in range(int(rng.integers(2, 40)))]
        judged = rng.choice(pool, size=int(rng.integers(1, len(pool))), replace=False)
        grades = {str(d): int(rng.choice([0, 1, 1, 2, 3])) for d in judged}
        if not any(g > 0 for g in grades.values()):
            grades[str(judged[0])] = 1  # ranx drops questions without a relevant item
        qrels[f"q{q}"] = grades
        docs = pool + [f"u{i}" for i in range(10)]
        retrieved = rng.choice(docs, size=min(25, len(docs)), replace=False)
        scores = rng.permutation(len(retrieved)) + rng.random()  # distinct
        run[f"q{q}"] = {str(d): float(s) for d, s in zip(retrieved, scores, strict=True)}
    return qrels, run


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaTypeSafetyWarning")  # ranx's own casts
def test_measures_trec_eval_lacks_agree_with_ranx() -> None:
    """Issue 16.2: per question within 1e-9 of ranx 0.3 (numba JIT makes this slow once)."""
    qrels, run = random_case(5)
    reference = ranx.Run(run)
    ranx.evaluate(ranx.Qrels(qrels), reference, NAMES, make_comparable=True)
    ours = compute_metrics(qrels, run, NAMES)
    for name in NAMES:
        values = ours.per_query[str(parse_metric(name))]
        expected = reference.scores[name]  # ranx keeps per-question values on the run
        assert set(expected) == set(qrels), name
        worst = max(abs(values[q] - float(v)) for q, v in expected.items())
        assert worst <= TOLERANCE, name
