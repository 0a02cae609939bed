"""Speed of ragmeter's metrics engine against pytrec_eval and ranx (issue 2 item 7, 16.4).

Run: ``.venv/bin/python benchmarks/metrics_speed.py`` (``--quick``: two rounds).
The OPENBLAS_* variables are unset in this process only (before numpy loads), and the
BLAS kernel numpy uses is printed (threadpoolctl), with the machine's load average:
on a shared, loaded machine the absolute times grow, the ratios much less.

Two synthetic inputs: MS MARCO-dev-sized (6,980 questions x 1,000 ranked docs with
distinct scores, ~1.1 relevant docs each) and RAG-sized (500 x 100). Each library
computes {ndcg@10, recall@100, mrr@10, map, precision@10, hit@10} from the same Python
dicts; ragmeter is also timed from a prebuilt grade matrix. Every implementation is
warmed once (ranx's JIT), then timed in interleaved rounds (each runs once per round)
and its best round kept: on a shared machine whose load swings, a burst then slows
every side alike, so the ratios are like for like.
"""

from __future__ import annotations

import os

# Unset here, in this process only, before numpy is imported (issue 16.4): a thread cap
# or core type set for other tools must not shape the numbers.
for _name in [n for n in os.environ if n.startswith("OPENBLAS_")]:
    del os.environ[_name]

import argparse  # noqa: E402
import statistics  # noqa: E402
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
MATRIX_TARGET_MS = 50.0  # compute_from_matrix at MS MARCO dev size

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


def interleaved(rounds: int, fns: dict[str, Callable[[], Any]]) -> dict[str, list[float]]:
    """Each function's time in each of ``rounds`` rounds, each round running all once."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times


def ratio(times: dict[str, list[float]], other: str) -> tuple[float, float]:
    """(best-of ratio, median of the per-round ratios) of ``other`` over ragmeter from dicts.

    Under a swinging load the best-of ratio favours the shorter call (it more often
    lands in a quiet moment); the per-round ratio pairs calls made seconds apart.
    """
    ours = times["ragmeter (from dicts)"]
    paired = [theirs / mine for theirs, mine in zip(times[other], ours, strict=True)]
    return min(times[other]) / min(ours), statistics.median(paired)


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


CAVEAT = (
    "caveat: on an idle machine the absolute times are lower; under load (other processes "
    "on the same cores) they grow and swing, and the ratios less so, since all sides run "
    "interleaved in this one process. Quote the ratios with the load average they were "
    "measured at, and measure more than once."
)


def bench(label: str, n_queries: int, depth: int, rounds: int) -> dict[str, list[float]]:
    """Time every implementation at one size; returns ``{name: seconds of each round}``."""
    qrels, run = make_input(n_queries, depth)
    grades, n_rel, ideal = build_matrix(qrels, run)
    fns: dict[str, Callable[[], Any]] = {
        "ragmeter (from dicts)": lambda: compute_metrics(qrels, run, METRICS),
        "ragmeter (prebuilt matrix)": lambda: compute_from_matrix(grades, n_rel, ideal, METRICS),
    }
    notes = {"pytrec_eval": "recip_rank has no cutoff"}
    try:
        import pytrec_eval

        fns["pytrec_eval"] = lambda: pytrec_eval.RelevanceEvaluator(
            qrels, PYTREC_MEASURES
        ).evaluate(run)
    except ImportError:
        notes["pytrec_eval"] = "not installed (pip install pytrec-eval-terrier)"
    try:
        import ranx

        fns["ranx (warm)"] = lambda: ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), RANX_METRICS)
    except ImportError:
        notes["ranx (warm)"] = "not installed (pip install ranx)"
    for name, fn in fns.items():  # warm: imports, caches, ranx's JIT
        start = time.perf_counter()
        fn()
        if name.startswith("ranx"):
            notes[name] = f"first call incl. JIT: {time.perf_counter() - start:.3f} s"
    times = interleaved(rounds, fns)

    print(f"\n{label}: {n_queries:,} questions x {depth:,} docs, metrics {', '.join(METRICS)}")
    print(f"{'implementation':<28}{'best s':>10}{'median s':>10}{'ragmeter is':>16}  note")
    for name in [*fns, *(n for n in notes if n not in fns)]:
        if name not in times:
            print(f"{name:<28}{'-':>10}{'-':>10}{'':>16}  {notes[name]}")
            continue
        best, median = min(times[name]), statistics.median(times[name])
        shown = "" if name.startswith("ragmeter") else f"{ratio(times, name)[1]:.1f}x faster"
        print(f"{name:<28}{best:>10.4f}{median:>10.4f}{shown:>16}  {notes.get(name, '')}")
    return times


# (label, questions, depth, rounds multiplier: small inputs take more rounds to beat noise)
SIZES = [("MS MARCO dev size", 6_980, 1_000, 1), ("RAG size", 500, 100, 20)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two rounds instead of --rounds")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    args = parser.parse_args()
    rounds = 2 if args.quick else max(1, args.rounds)
    print(kernel_report())
    print(load_report())
    times = {label: bench(label, n, depth, rounds * more) for label, n, depth, more in SIZES}
    print(
        "\nratios: ragmeter from dicts is Nx faster (same metrics, warm, one process; "
        "per-round median, best-of in brackets; a target counts the lower of the two):"
    )
    for label, *_ in SIZES:
        for other in ("pytrec_eval", "ranx (warm)"):
            target = TARGETS.get((label, other))
            if other not in times[label]:
                print(f"  {label:<18} vs {other:<12} not measured")
                continue
            best, paired = ratio(times[label], other)
            goal = ""
            if target is not None:
                goal = f"  (target >= {target:g}x: {'met' if min(best, paired) >= target else 'NOT met'})"
            print(f"  {label:<18} vs {other:<12} {paired:.1f}x ({best:.1f}x){goal}")
    matrix_ms = 1000 * min(times[SIZES[0][0]]["ragmeter (prebuilt matrix)"])
    verdict = "met" if matrix_ms < MATRIX_TARGET_MS else "NOT met"
    print(
        f"  compute_from_matrix at {SIZES[0][0]}: {matrix_ms:.1f} ms "
        f"(target < {MATRIX_TARGET_MS:g} ms: {verdict})"
    )
    print(load_report())
    print(CAVEAT)


if __name__ == "__main__":
    main()
