"""Ranked lists through compute_metrics' vectorised path (issue 29.2).

Rankings given as lists or tuples of ids are ranked for every query at once (a repeat
dropped, the first occurrence wins). They must score, to the last bit, what the
per-query path gives (rankings as numpy arrays still take it) and what a plain position
reference written here gives.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from test_metrics_fast_path import METRICS as FAST_PATH_METRICS

from ragmeter.metrics import compute_metrics

# The fast path test's metrics (every engine family, judged-only, rel=), and ERR.
METRICS = [*FAST_PATH_METRICS, "err(max_grade=3)@5"]


def _case(seed: int) -> tuple[dict[str, dict[str, int]], dict[str, list[str] | tuple[str, ...]]]:
    """Random qrels and lists; every third seed judges exactly one relevant document a
    question (the lists are then searched as they are, without a copy per target)."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, list[str] | tuple[str, ...]] = {}
    for q in range(rng.randint(1, 25)):
        qid = f"q{q}"
        if seed % 3 == 0:
            qrels[qid] = {f"d{rng.randint(0, 20)}": rng.randint(1, 3)}
        else:
            judged = range(rng.randint(0, 6))
            qrels[qid] = {f"d{rng.randint(0, 20)}": rng.randint(0, 3) for _ in judged}
        if rng.random() < 0.15:
            continue  # missing from the run
        # few distinct ids, so repeats are common; lists and tuples mixed
        ranking = [f"d{rng.randint(0, 20)}" for _ in range(rng.randint(0, 14))]
        run[qid] = ranking if rng.random() < 0.5 else tuple(ranking)
    if rng.random() < 0.3:
        run["not-judged"] = ["d1"]
    return qrels, run


def test_lists_score_what_the_per_query_path_scores() -> None:
    for seed in range(80):
        qrels, run = _case(seed)
        fast = compute_metrics(qrels, run, METRICS)
        slow = compute_metrics(
            qrels, {q: np.array(r, dtype=object) for q, r in run.items()}, METRICS
        )
        assert fast.per_query == slow.per_query, seed
        assert fast.means == slow.means, seed
        assert fast.missing == slow.missing


def _reference(
    qrels: dict[str, dict[str, int]], run: dict[str, list[str] | tuple[str, ...]]
) -> dict[str, dict[str, float]]:
    """Plain positions: a document's rank is its place among the ranking's distinct ids."""
    out: dict[str, dict[str, float]] = {"mrr": {}, "hit@3": {}, "recall@5": {}, "num_ret": {}}
    for qid, judged in qrels.items():
        distinct: list[str] = []
        for doc in run.get(qid, []):
            if doc not in distinct:
                distinct.append(doc)
        ranks = [distinct.index(d) + 1 for d, g in judged.items() if g > 0 and d in distinct]
        relevant = sum(g > 0 for g in judged.values())
        out["mrr"][qid] = 1 / min(ranks) if ranks else 0.0
        out["hit@3"][qid] = float(any(r <= 3 for r in ranks))
        out["recall@5"][qid] = sum(r <= 5 for r in ranks) / relevant if relevant else 0.0
        out["num_ret"][qid] = float(len(distinct))
    return out


def test_lists_rank_documents_by_their_first_position() -> None:
    for seed in range(80):
        qrels, run = _case(seed)
        got = compute_metrics(qrels, run, ["mrr", "hit@3", "recall@5", "num_ret"]).per_query
        expected = _reference(qrels, run)
        for name, values in expected.items():
            assert got[name] == pytest.approx(values, abs=1e-12), (seed, name)
