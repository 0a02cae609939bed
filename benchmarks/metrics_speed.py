"""Speed of ragmeter's metrics engine against pytrec_eval and ranx (issue 2 item 7, 16.4).

Run: ``.venv/bin/python benchmarks/metrics_speed.py`` (add ``--quick`` for one repeat).
The OPENBLAS_* variables are unset in this process only (before numpy loads), and the
BLAS kernel numpy uses is printed (threadpoolctl), with the machine's load average:
on a shared, loaded machine the absolute times grow, the ratios much less.

Two synthetic inputs: MS MARCO-dev-sized (6,980 questions x 1,000 ranked docs with
distinct scores, ~1.1 relevant docs each) and RAG-sized (500 x 100). Each library
computes {ndcg@10, recall@100, mrr@10, map, precision@10, hit@10} from the same Python
dicts; ragmeter is also timed from a prebuilt grade matrix. Times are the best of a
few repeats, all measured in this process, so the ratios are like for like.
"""

from __future__ import annotations

import os

# Unset here, in this process only, before numpy is imported (issue 16.4): a thread cap
# or core type set for other tools must not shape the numbers.
for _name in [n for n in os.environ if n.startswith("OPENBLAS_")]:
    del os.environ[_name]

import argparse  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from ragmeter.metrics import compute_from_matrix, compute_metrics  # noqa: E402

# The issue 16.4 targets: ragmeter from dicts vs each library, at each size.
TARGETS = {
    ("MS MARCO dev size", "pytrec_eval"): 10.0,
    ("MS MARCO dev size", "ranx (warm)"): 25.0,
    ("RAG size", "pytrec_eval"): 3.0,
}

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


def kernel_report() -> str:
    """numpy's BLAS library, version, kernel (e.g. Haswell) and threads, via threadpoolctl."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "BLAS kernel: unknown (pip install threadpoolctl)"
    rows = [
        f"{i.get('internal_api')} {i.get('version')} kernel={i.get('architecture')} "
        f"threads={i.get('num_threads')}"
        for i in threadpool_info()
        if i.get("user_api") == "blas"
    ]
    return "BLAS kernel: " + ("; ".join(rows) or "none loaded")


def load_report() -> str:
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return "load average: unknown"
    cores = os.cpu_count() or 1
    state = "idle" if five < 0.5 * cores else "SHARED/LOADED: absolute times are inflated"
    return f"load average {one:.2f} / {five:.2f} (1 / 5 min) on {cores} cores: {state}"


def bench(label: str, n_queries: int, depth: int, repeats: int) -> dict[str, float]:
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
    return {name: seconds / ours for name, seconds, _ in rows if seconds is not None}


SIZES = [("MS MARCO dev size", 6_980, 1_000), ("RAG size", 500, 100)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repeat instead of three")
    args = parser.parse_args()
    repeats = 1 if args.quick else 3
    print(kernel_report())
    print(load_report())
    ratios = {label: bench(label, n, depth, repeats) for label, n, depth in SIZES}
    print("\nratios (ragmeter from dicts is Nx faster; same metrics, warm, one process):")
    for label, _, _ in SIZES:
        for other in ("pytrec_eval", "ranx (warm)"):
            ratio = ratios[label].get(other)
            target = TARGETS.get((label, other))
            goal = "" if target is None else f"  (target >= {target:g}x)"
            shown = "not measured" if ratio is None else f"{ratio:.1f}x"
            print(f"  {label:<18} vs {other:<12} {shown}{goal}")
    print(load_report())


if __name__ == "__main__":
    main()
