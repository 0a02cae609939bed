"""Speed of ragmeter's metrics engine against pytrec_eval and ranx (issue 2 item 7).

Run: ``.venv/bin/python benchmarks/metrics_speed.py`` (add ``--quick`` for one repeat).

Two synthetic inputs: MS MARCO-dev-sized (6,980 questions x 1,000 ranked docs with
distinct scores, ~1.1 relevant docs each) and RAG-sized (500 x 100). Each library
computes {ndcg@10, recall@100, mrr@10, map, precision@10, hit@10} from the same Python
dicts; ragmeter is also timed from a prebuilt grade matrix. Times are the best of a
few repeats, all measured in this process, so the ratios are like for like.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ragmeter.metrics import compute_from_matrix, compute_metrics

METRICS = ["ndcg@10", "recall@100", "mrr@10", "map", "precision@10", "hit@10"]
PYTREC_MEASURES = {"ndcg_cut.10", "recall.100", "recip_rank", "map", "P.10", "success.10"}
RANX_METRICS = ["ndcg@10", "recall@100", "mrr@10", "map", "precision@10", "hit_rate@10"]


def make_input(n_queries: int, depth: int, seed: int = 0) -> tuple[Any, Any]:
    """qrels {qid: {doc: grade}} and a scored run {qid: {doc: score}} with distinct scores."""
    rng = np.random.default_rng(seed)
    n_docs = 8_800_000  # MS MARCO passage collection size
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(n_queries):
        qid = str(1_000_000 + q)
        docs = rng.choice(n_docs, size=depth + 2, replace=False)
        scores = np.sort(rng.random(depth))[::-1] * 30.0
        ranked = [str(d) for d in docs[:depth].tolist()]
        run[qid] = dict(zip(ranked, scores.tolist(), strict=True))
        n_rel = 1 + int(rng.random() < 0.1)  # ~1.1 relevant per question
        relevant = {}
        for j in range(n_rel):
            if rng.random() < 0.8:  # most relevant docs were retrieved, somewhere
                relevant[ranked[int(rng.integers(0, depth))]] = 1
            else:
                relevant[str(docs[depth + j])] = 1
        qrels[qid] = relevant
    return qrels, run


def build_matrix(qrels: Any, run: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    qids = list(qrels)
    depth = max(len(r) for r in run.values())
    grades = np.zeros((len(qids), depth), dtype=np.int8)
    ideal = np.zeros((len(qids), max(len(j) for j in qrels.values())), dtype=np.int8)
    for i, qid in enumerate(qids):
        ranking = run[qid]
        order = sorted(ranking, key=lambda d: (ranking[d], d), reverse=True)
        judged = qrels[qid]
        for r, doc in enumerate(order):
            grades[i, r] = max(judged.get(doc, 0), 0)
        positive = sorted((g for g in judged.values() if g > 0), reverse=True)
        ideal[i, : len(positive)] = positive
    return grades, (ideal > 0).sum(axis=1), ideal


def best_of(repeats: int, fn: Callable[[], Any]) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def bench(label: str, n_queries: int, depth: int, repeats: int) -> None:
    qrels, run = make_input(n_queries, depth)
    rows: list[tuple[str, float | None, str]] = []
    ours = best_of(repeats, lambda: compute_metrics(qrels, run, METRICS))
    rows.append(("ragmeter (from dicts)", ours, ""))
    grades, n_rel, ideal = build_matrix(qrels, run)
    matrix = best_of(max(repeats, 5), lambda: compute_from_matrix(grades, n_rel, ideal, METRICS))
    rows.append(("ragmeter (prebuilt matrix)", matrix, ""))
    try:
        import pytrec_eval

        def run_pytrec() -> Any:
            return pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES).evaluate(run)

        rows.append(("pytrec_eval", best_of(repeats, run_pytrec), "recip_rank has no cutoff"))
    except ImportError:
        rows.append(("pytrec_eval", None, "not installed (pip install pytrec-eval-terrier)"))
    try:
        import ranx

        def run_ranx() -> Any:
            return ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), RANX_METRICS)

        start = time.perf_counter()
        run_ranx()
        first = time.perf_counter() - start
        warm = best_of(repeats, run_ranx)
        rows.append(("ranx (warm)", warm, f"first call incl. JIT: {first:.3f} s"))
    except ImportError:
        rows.append(("ranx", None, "not installed (pip install ranx)"))

    print(f"\n{label}: {n_queries:,} questions x {depth:,} docs, metrics {', '.join(METRICS)}")
    print(f"{'implementation':<28}{'seconds':>10}{'ragmeter is':>16}  note")
    for name, seconds, note in rows:
        if seconds is None:
            print(f"{name:<28}{'-':>10}{'':>16}  {note}")
            continue
        ratio = "" if name.startswith("ragmeter") else f"{seconds / ours:.1f}x faster"
        print(f"{name:<28}{seconds:>10.4f}{ratio:>16}  {note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repeat instead of three")
    args = parser.parse_args()
    repeats = 1 if args.quick else 3
    bench("MS MARCO dev size", 6_980, 1_000, repeats)
    bench("RAG size", 500, 100, repeats)


if __name__ == "__main__":
    main()
