"""The per-question path beside its floor (issue 29.2), for ``benchmarks/scale.py --eval-ratios``.

1. ``ragmeter.evaluate`` with an instant retriever on 1k / 10k / 100k questions into a SQLite
   file, each in a fresh process, beside its floor: pytrec_eval scoring the same gold and the
   same hits with the same measures, no store (the least code that computes the same numbers).
2. ``ragmeter eval --gold scifact --retriever run:FILE`` (BEIR SciFact's 300 test queries, a
   run file of ``--run-depth`` lines per query, k = 10) beside pytrec_eval reading the same
   qrels and run files, and beside a process that only imports ragmeter's declared
   dependencies (``dependency_imports``: the part of the ratio ragmeter's code cannot remove).

Each side runs ``--repeat`` times, interleaved (the load of the shared machine hits both), and
the medians count: wall and CPU seconds of the whole process and its peak RSS (``wait4``).
The means of both sides are compared, so a fast wrong number cannot pass.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _trec import DEFAULT_MEASURES as MEASURES  # noqa: E402 - the tests' trec_eval names

EVALUATE = r"""
import json, sys, time
import ragmeter
from ragmeter.gold.goldset import GoldSet
from ragmeter.store import Store

n, url, k = int(sys.argv[1]), sys.argv[2], 10
docs = 5_000
started = time.perf_counter()
gold = GoldSet.from_records(
    # The relevant document comes back at rank 1 to 13 (ranks 11-13 are misses at k=10).
    [{"id": f"q{i}", "question": f"question {i}",
      "relevant": [{"doc": f"d{(i % docs + i % 13) % docs}"}]} for i in range(n)], name="scale")
built = time.perf_counter()
# An instant retriever: precomputed rankings, so the benchmark measures ragmeter only.
rankings = [[{"id": f"d{(i + j) % docs}", "doc": f"d{(i + j) % docs}", "score": 10.0 - j}
             for j in range(k)] for i in range(docs)]

def search(question, k):
    return rankings[int(question[9:]) % docs][:k]

store = Store.open(url)
opened = time.perf_counter()
report = ragmeter.evaluate(gold, search, k=k, store=store, name="scale", commit="bench")
done = time.perf_counter()
store.close()
print(json.dumps({"gold_s": built - started, "evaluate_s": done - opened,
                  "mrr": report.metrics.get("mrr"), "means": report.metrics,
                  "n": report.n_questions}))
"""

FLOOR = r"""
import json, sys, time
import pytrec_eval

n, k, docs = int(sys.argv[1]), 10, 5_000
measures = sys.argv[2].split(",")
qrels = {f"q{i}": {f"d{(i % docs + i % 13) % docs}": 1} for i in range(n)}
rankings = [{f"d{(i + j) % docs}": 10.0 - j for j in range(k)} for i in range(docs)]
run = {f"q{i}": rankings[i % docs] for i in range(n)}
scores = pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(run)
print(json.dumps({m: sum(v[m] for v in scores.values()) / n for m in measures}))
"""

PYTREC_FILES = r"""
import json, sys
import pytrec_eval
with open(sys.argv[1]) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f:
    run = pytrec_eval.parse_run(f)
measures = sys.argv[3].split(",")
scores = pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(run)
# trec_eval -c: a judged query missing from the run scores 0, in the mean.
print(json.dumps({m: sum(v[m] for v in scores.values()) / len(qrels) for m in measures}))
"""

# The dependencies an ``eval`` of a run file cannot do without: numpy (the metrics), SQLAlchemy
# on the stdlib driver (the store), pydantic (the gold set's model), click (the CLI).
DEPENDENCY_IMPORTS = "import numpy, sqlite3, sqlalchemy, pydantic, click"

SCIFACT = Path("/work/shared/data/scifact")


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return round(statistics.median(r[key] for r in runs), 3)


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "wall_s": _median(runs, "wall_s"),
        "cpu_s": _median(runs, "cpu_s"),
        "rss_mb": _median(runs, "rss_mb"),
        "all_wall_s": [round(r["wall_s"], 3) for r in runs],
    }


def _agree(ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
    return all(abs(ours[o] - theirs[t]) < 1e-9 for o, t in MEASURES.items())


def _ratio(out: dict[str, Any], ours: str, floor: str) -> dict[str, float]:
    return {
        unit: round(out[ours][f"{unit}_s"] / out[floor][f"{unit}_s"], 2) for unit in ("wall", "cpu")
    }


def _ratios(out: dict[str, Any], ours: str, floor: str) -> None:
    ratio = _ratio(out, ours, floor)
    out["ratio_wall"], out["ratio_cpu"] = ratio["wall"], ratio["cpu"]


def bench_eval_ratio(
    run_child: Callable[[list[str]], dict[str, Any]], folder: Path, n: int, repeat: int
) -> dict[str, Any]:
    """``evaluate()`` of ``n`` questions (fresh SQLite file each time) beside its floor."""
    print(f"eval vs floor: {n:,} questions x {repeat} ...", flush=True)
    py, measures = sys.executable, ",".join(MEASURES.values())
    ours: list[dict[str, Any]] = []
    floor: list[dict[str, Any]] = []
    for attempt in range(repeat):
        db = folder / f"eval-{n}-{attempt}.db"
        ours.append(run_child([py, "-c", EVALUATE, str(n), f"sqlite:///{db}"]))
        db.unlink()
        floor.append(run_child([py, "-c", FLOOR, str(n), measures]))
    inner = json.loads(ours[-1]["stdout"].strip().splitlines()[-1])
    theirs = json.loads(floor[-1]["stdout"])
    out: dict[str, Any] = {
        "questions": n,
        "eval": _summary(ours)
        | {"evaluate_call_s": round(inner["evaluate_s"], 3), "gold_s": round(inner["gold_s"], 3)},
        "floor": _summary(floor),
        "means_agree": _agree(inner["means"], theirs),
    }
    _ratios(out, "eval", "floor")
    print(json.dumps(out, indent=2), flush=True)
    return out


def write_scifact_run(path: Path, depth: int) -> None:
    """A run over SciFact's test queries: ``depth`` judged-looking documents per query, the
    first relevant one at rank 1 to ``depth + 3`` (some are misses), fixed seed."""
    qrels: dict[str, list[str]] = {}
    for line in (SCIFACT / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, doc, _ = line.split("\t")
        qrels.setdefault(qid, []).append(doc)
    pool = sorted({doc for docs in qrels.values() for doc in docs})
    rng = random.Random(29)
    lines = []
    for qid, relevant in qrels.items():
        ranking = [d for d in rng.sample(pool, depth + 5) if d not in relevant][:depth]
        at = rng.randrange(depth + 3)
        if at < depth:
            ranking[at] = relevant[0]
        lines += [f"{qid} Q0 {doc} {r} {100.0 - r:.4f} bench\n" for r, doc in enumerate(ranking, 1)]
    path.write_text("".join(lines))


def bench_run_file(
    run_child: Callable[[list[str]], dict[str, Any]],
    folder: Path,
    repeat: int,
    depth: int,
    before: Path | None = None,
) -> dict[str, Any]:
    """``ragmeter eval --retriever run:FILE`` on SciFact beside pytrec_eval on the same files;
    ``before`` (another checkout's ``src``) adds the same command from there, interleaved."""
    print(f"eval --retriever run:FILE (SciFact, {depth} lines per query) x {repeat} ...")
    run = folder / "scifact.trec"
    write_scifact_run(run, depth)
    qrels = SCIFACT / "anserini" / "qrels.beir-v1.0.0-scifact.test.txt"
    py, measures = sys.executable, ",".join(MEASURES.values())
    sides: dict[str, list[str]] = {"eval_run_file": [py]}
    if before is not None:
        sides["before"] = ["env", f"PYTHONPATH={before.resolve()}", py]
    ours: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    theirs: list[dict[str, Any]] = []
    imports: list[dict[str, Any]] = []
    for attempt in range(repeat):
        for side, interpreter in sides.items():
            store = f"sqlite:///{folder / f'runfile-{side}-{attempt}.db'}"
            cmd = [*interpreter, "-m", "ragmeter", "eval", "--gold", str(SCIFACT),
                   "--retriever", f"run:{run}", "--store", store, "--json"]  # fmt: skip
            ours[side].append(run_child(cmd))
        theirs.append(run_child([py, "-c", PYTREC_FILES, str(qrels), str(run), measures]))
        imports.append(run_child([py, "-c", DEPENDENCY_IMPORTS]))
    their_means = json.loads(theirs[-1]["stdout"])
    out: dict[str, Any] = {"queries": 300, "depth": depth}
    out |= {side: _summary(runs) for side, runs in ours.items()}
    out["pytrec_eval"] = _summary(theirs)
    # What importing ragmeter's declared dependencies alone costs, beside the same floor: the
    # part of the ratio no work on ragmeter's own code can remove (docs/scale.md).
    out["dependency_imports"] = _summary(imports)
    out["dependency_imports_ratio"] = _ratio(out, "dependency_imports", "pytrec_eval")
    out["means_agree"] = all(
        _agree(json.loads(runs[-1]["stdout"])["metrics"], their_means) for runs in ours.values()
    )
    _ratios(out, "eval_run_file", "pytrec_eval")
    if before is not None:
        out["before_ratio_cpu"] = round(out["before"]["cpu_s"] / out["pytrec_eval"]["cpu_s"], 2)
    print(json.dumps(out, indent=2), flush=True)
    return out


def eval_ratios(
    run_child: Callable[[list[str]], dict[str, Any]],
    folder: Path,
    sizes: list[int],
    repeat: int,
    depth: int,
    before: Path | None = None,
) -> dict[str, Any]:
    """Every figure of issue 29.2, with the load average before and after."""
    out: dict[str, Any] = {"load_avg_at_start": os.getloadavg()}
    out["evaluate"] = [bench_eval_ratio(run_child, folder, n, repeat) for n in sizes]
    out["run_file"] = bench_run_file(run_child, folder, repeat, depth, before)
    out["load_avg_at_end"] = os.getloadavg()
    return out
