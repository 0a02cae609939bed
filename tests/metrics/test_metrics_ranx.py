"""Issue 16.2: measures trec_eval lacks agree with ranx (the `bench` extra): f1@k, dcg@k,
Burges (exponential-gain) dcg/ndcg, and hits@k, on random graded runs.

Scores are distinct, so the order does not depend on how a library breaks ties.

ranx runs in a child process with numba's JIT off (``NUMBA_DISABLE_JIT=1``): the same ranx
code, interpreted. Compiled, its kernels cost ~100 s of CPU on a machine whose numba cache is
cold (numba keys it by the path of ranx's sources, so every fresh venv is cold) against ~6 s
interpreted for these 80 questions (issue 29.5); numba reads the switch only when first
imported, hence the child.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ragmeter.metrics import compute_metrics, parse_metric

pytest.importorskip("ranx")

TOLERANCE = 1e-9
NAMES = [
    f"{name}@{k}"
    for name in ("f1", "dcg", "dcg_burges", "ndcg_burges", "hits", "hit_rate", "precision")
    for k in (1, 3, 10)
] + ["r-precision", "bpref", "rbp.8"]

# Reads [qrels, run, names] as JSON on stdin, writes {name: {question: value}} (ranx keeps
# the per-question values on the run). JSON keeps floats exactly (shortest repr round-trips).
RANX_CHILD = """
import json, sys, warnings
warnings.simplefilter("ignore")  # ranx's own casts and 0/0 in bpref's unused branch
import ranx
qrels, run, names = json.load(sys.stdin)
reference = ranx.Run(run)
ranx.evaluate(ranx.Qrels(qrels), reference, names, make_comparable=True)
json.dump({n: {q: float(v) for q, v in reference.scores[n].items()} for n in names}, sys.stdout)
"""


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


def ranx_scores(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], names: list[str]
) -> dict[str, dict[str, float]]:
    """Per-question values from ranx, interpreted, in a child process."""
    done = subprocess.run(
        [sys.executable, "-c", RANX_CHILD],
        input=json.dumps([qrels, run, names]),
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NUMBA_DISABLE_JIT": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    scores: dict[str, dict[str, float]] = json.loads(done.stdout)
    return scores


@pytest.mark.slow
def test_measures_trec_eval_lacks_agree_with_ranx() -> None:
    """Issue 16.2: per question within 1e-9 of ranx 0.3."""
    qrels, run = random_case(5)
    reference = ranx_scores(qrels, run, NAMES)
    ours = compute_metrics(qrels, run, NAMES)
    for name in NAMES:
        values = ours.per_query[str(parse_metric(name))]
        expected = reference[name]
        assert set(expected) == set(qrels), name
        worst = max(abs(values[q] - v) for q, v in expected.items())
        assert worst <= TOLERANCE, name
