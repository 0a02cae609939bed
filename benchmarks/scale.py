"""Scale benchmark (issue 9): throughput and peak memory at BEIR / MS MARCO size.

    .venv/bin/python benchmarks/scale.py                 # everything
    .venv/bin/python benchmarks/scale.py --questions 20000 --skip-postgres

Measures, each in a fresh subprocess (peak RSS from ``os.wait4``, so one
measurement never inflates another's):

1. ``ragmeter.evaluate`` on N questions (default 100,000) with an instant
   in-process retriever, k=10, into a SQLite file and into PostgreSQL (a throwaway
   server started here, as in the tests; ``RAGMETER_TEST_POSTGRES_URL`` uses an
   existing one). Throughput = questions / seconds of the ``evaluate`` call.
2. ``ragmeter metrics`` on a generated TREC run of MS MARCO-dev size (6,980
   queries x 1,000 lines) versus pytrec_eval parsing the same files
   (``parse_qrel`` + ``parse_run``) and scoring them (``RelevanceEvaluator``),
   same metrics. Each side runs ``--repeat`` times, alternating; the best wall
   time counts (the machine is shared), CPU time is reported too.

3. ``--read``: ``ragmeter show`` of a run and ``ragmeter diff`` of two runs of 1k / 10k
   (and 100k with ``--read-100k``) questions in a SQLite file (and with ``--postgres URL``,
   or ``--postgres temp`` for a throwaway server, in a PostgreSQL database per size), each
   beside its floor, interleaved, the median of ``--repeat`` runs (issue 29.1): the least
   code that prints the same thing from the same store, the plain driver (``sqlite3`` or
   ``psycopg``) + ``json`` (+ numpy for diff), no ragmeter. Show's floor reads the stored
   means, every question's stored summary and the rankings of the misses; diff's floor
   reads both runs' per-question values and prints each metric's mean difference with a
   normal-approximation 95% interval. ``--keep DIR`` builds the SQLite stores there and
   reuses them next time (a PostgreSQL database that holds both runs is reused too).

Targets: >= 2,000 q/s into SQLite, >= 1,000 q/s into PostgreSQL, peak RSS < 2 GB,
``ragmeter metrics`` >= 3x faster than pytrec_eval.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _bytecode import compile_package
from scale_eval import EVALUATE, eval_ratios

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable


PYTREC = r"""
import json, sys, time
import pytrec_eval
started = time.perf_counter()
with open(sys.argv[1]) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f:
    run = pytrec_eval.parse_run(f)
parsed = time.perf_counter()
scores = pytrec_eval.RelevanceEvaluator(qrels, set(sys.argv[3].split(","))).evaluate(run)
done = time.perf_counter()
mean = {m: sum(v[m] for v in scores.values()) / len(qrels) for m in next(iter(scores.values()))}
print(json.dumps({"parse_s": parsed - started, "evaluate_s": done - parsed, "means": mean}))
"""

# The run ``diff`` compares with EVALUATE's: every ranking starts one document later.
EVALUATE_B = EVALUATE.replace(
    "rankings[int(question[9:]) % docs]", "rankings[(int(question[9:]) + 1) % docs]"
)
EVALUATE_B = EVALUATE_B.replace('name="scale"', 'name="scale-b"')

# The floors connect with the plain driver: sqlite3 for a file, psycopg for a PostgreSQL URL.
CONNECT = r"""
import sys
target = sys.argv[1]
if target.startswith("postgresql"):
    import psycopg
    _conn = psycopg.connect(target.replace("postgresql+psycopg://", "postgresql://"))
    class _DB:
        def execute(self, sql, params=()):
            return _conn.execute(sql.replace("?", "%s"), params)
    db = _DB()
else:
    import sqlite3
    db = sqlite3.connect(target)
"""

SHOW_FLOOR = (
    CONNECT
    + r"""
import json
run_id, k = db.execute("SELECT id, k FROM runs WHERE name = 'scale'").fetchone()
means = dict(db.execute("SELECT metric, value FROM run_metrics WHERE run_id = ?", (run_id,)))
missed = []
for item_id, summary in db.execute(
        "SELECT item_id, summary FROM results WHERE run_id = ? ORDER BY id", (run_id,)):
    first = json.loads(summary)["first"]
    if first is None or first > k:
        missed.append(item_id)
shown = {}
for start in range(0, len(missed), 500):
    chunk = missed[start:start + 500]
    marks = ",".join("?" * len(chunk))
    for item_id, ranking in db.execute(
            f"SELECT item_id, ranking FROM results WHERE run_id = ? AND item_id IN ({marks})",
            (run_id, *chunk)):
        shown[item_id] = json.loads(ranking)[:3]
print(json.dumps(means)[:200], len(missed), len(shown))
"""
)

DIFF_FLOOR = (
    CONNECT
    + r"""
import json
import numpy as np
ids = {name: db.execute("SELECT id FROM runs WHERE name = ?", (name,)).fetchone()[0]
       for name in ("scale", "scale-b")}
def values(run_id):  # a row per metric: sorted ids (JSON, or another metric's), float64 LE
    rows = db.execute("SELECT metric, item_ids, same_ids_as, values_f64le FROM metric_columns"
                      " WHERE run_id = ?", (run_id,)).fetchall()
    ids = {metric: json.loads(text) for metric, text, _, _ in rows if text is not None}
    return {metric: dict(zip(ids[same or metric], np.frombuffer(blob, "<f8").tolist()))
            for metric, _, same, blob in rows}
a, b = values(ids["scale"]), values(ids["scale-b"])
for metric in sorted(a):
    common = sorted(set(a[metric]) & set(b[metric]))
    d = np.array([b[metric][i] - a[metric][i] for i in common], dtype=float)
    half = 1.96 * d.std(ddof=1) / np.sqrt(len(d))
    print(metric, round(d.mean(), 4), round(d.mean() - half, 4), round(d.mean() + half, 4))
"""
)

OURS = ["map", "mrr", "ndcg@10", "recall@100", "P@10"]
THEIRS = "map,recip_rank,ndcg_cut_10,recall_100,P_10"


def run_child(args: list[str]) -> dict[str, Any]:
    """Run a command; wall time, CPU time and peak RSS (MB) of that child alone, and stdout."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(args, stdout=out, stderr=err, cwd=ROOT, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}):\n{stderr[-3000:]}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "rss_mb": usage.ru_maxrss / 1024,
        "stdout": stdout,
    }


def write_msmarco_like(
    folder: Path, n_queries: int = 6_980, depth: int = 1_000
) -> tuple[Path, Path]:
    """A run and qrels shaped like MS MARCO passage dev: 1,000 hits, ~1.06 relevant each."""
    import numpy as np

    rng = np.random.default_rng(9)
    qrels_path, run_path = folder / "dev.qrels", folder / "run.trec"
    qids = rng.choice(np.arange(1, 1_200_000), n_queries, replace=False)
    with open(run_path, "w") as run, open(qrels_path, "w") as qrels:
        for qid in qids.tolist():
            docs = rng.choice(8_841_823, depth, replace=False).tolist()
            scores = np.sort(rng.normal(20.0, 3.0, depth))[::-1].tolist()
            run.write(
                "".join(
                    f"{qid} Q0 {doc} {rank} {score:.6f} bm25\n"
                    for rank, (doc, score) in enumerate(zip(docs, scores, strict=True), 1)
                )
            )
            judged = {docs[min(int(rng.exponential(30)), depth - 1)] if rng.random() < 0.8
                      else int(rng.integers(8_841_823))}  # fmt: skip
            if rng.random() < 0.06:
                judged.add(int(rng.integers(8_841_823)))
            qrels.write("".join(f"{qid} 0 {doc} 1\n" for doc in judged))
    return qrels_path, run_path


def bench_metrics(folder: Path, repeat: int) -> dict[str, Any]:
    print("generating an MS MARCO-dev-size run file (6,980 x 1,000 lines) ...", flush=True)
    qrels, run = write_msmarco_like(folder)
    print(f"  {run.stat().st_size / 1e6:.0f} MB", flush=True)
    ours_cmd = [PY, "-m", "ragmeter", "metrics", "--qrels", str(qrels), "--run", str(run),
                "--json"] + [a for m in OURS for a in ("-m", m)]  # fmt: skip
    theirs_cmd = [PY, "-c", PYTREC, str(qrels), str(run), THEIRS]
    ours, theirs = [], []
    for _ in range(repeat):
        ours.append(run_child(ours_cmd))
        theirs.append(run_child(theirs_cmd))
    best_ours = min(ours, key=lambda r: r["wall_s"])
    best_theirs = min(theirs, key=lambda r: r["wall_s"])
    our_means = json.loads(best_ours["stdout"])["means"]
    their_means = json.loads(best_theirs["stdout"])["means"]
    agree = all(
        abs(our_means[o] - their_means[t]) < 1e-12
        for o, t in zip(
            ["map", "mrr", "ndcg@10", "recall@100", "precision@10"], THEIRS.split(","), strict=True
        )
    )
    return {
        "ragmeter_metrics": {k: v for k, v in best_ours.items() if k != "stdout"},
        "pytrec_eval": {k: v for k, v in best_theirs.items() if k != "stdout"}
        | {k: json.loads(best_theirs["stdout"])[k] for k in ("parse_s", "evaluate_s")},
        "all_wall_s": {
            "ragmeter": [r["wall_s"] for r in ours],
            "pytrec": [r["wall_s"] for r in theirs],
        },
        "speedup_wall": best_theirs["wall_s"] / best_ours["wall_s"],
        "speedup_cpu": min(r["cpu_s"] for r in theirs) / min(r["cpu_s"] for r in ours),
        "means_agree": agree,
    }


def bench_evaluate(url: str, n: int, label: str) -> dict[str, Any]:
    print(f"evaluate(): {n:,} questions into {label} ...", flush=True)
    result = run_child([PY, "-c", EVALUATE, str(n), url])
    inner = json.loads(result["stdout"].strip().splitlines()[-1])
    return {
        "questions": n,
        "evaluate_s": inner["evaluate_s"],
        "gold_build_s": inner["gold_s"],
        "questions_per_s": n / inner["evaluate_s"],
        "process_wall_s": result["wall_s"],
        "cpu_s": result["cpu_s"],
        "peak_rss_mb": result["rss_mb"],
        "mrr": inner["mrr"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per side (median counts)")
    parser.add_argument("--skip-postgres", action="store_true")
    parser.add_argument("--skip-evaluate", action="store_true")
    parser.add_argument("--skip-metrics", action="store_true")
    parser.add_argument("--read", action="store_true", help="show and diff vs their floors")
    parser.add_argument("--read-100k", action="store_true", help="--read at 100k questions too")
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="--read on this PostgreSQL server too ('temp': a throwaway server started here)",
    )
    parser.add_argument(
        "--keep", type=Path, help="build --read's stores in this folder and reuse them next time"
    )
    parser.add_argument(
        "--eval-ratios", action="store_true", help="eval and run:FILE vs their floors (29.2)"
    )
    parser.add_argument("--eval-sizes", default="1000,10000,100000", help="for --eval-ratios")
    parser.add_argument("--run-depth", type=int, default=10, help="run:FILE lines per query")
    parser.add_argument(
        "--only-run-file",
        action="store_true",
        help="only eval --retriever run:FILE beside pytrec_eval (29.2); nothing else runs",
    )
    parser.add_argument(
        "--before",
        type=Path,
        help="another checkout's src/: its run:FILE eval runs too, interleaved (before/after)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if args.only_run_file:
        args.skip_metrics = args.skip_evaluate = True
    figures: dict[str, Any] = {"cpus": os.cpu_count(), "load_avg_at_start": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="ragmeter-scale-") as tmp:
        folder = Path(tmp)
        if not args.skip_metrics:
            figures["metrics"] = bench_metrics(folder, args.repeat)
            print(json.dumps(figures["metrics"], indent=2), flush=True)
        if not args.skip_evaluate:
            url = f"sqlite:///{folder / 'scale.db'}"
            figures["evaluate_sqlite"] = bench_evaluate(url, args.questions, "SQLite")
            print(json.dumps(figures["evaluate_sqlite"], indent=2), flush=True)
            if not args.skip_postgres:
                figures["evaluate_postgres"] = bench_postgres(args.questions)
                print(json.dumps(figures["evaluate_postgres"], indent=2), flush=True)
        if args.eval_ratios or args.only_run_file:
            compile_package()
            if args.before is not None:
                compile_package(args.before.resolve())
            sizes = [] if args.only_run_file else [int(n) for n in args.eval_sizes.split(",")]
            figures["eval_ratios"] = eval_ratios(run_child, folder, sizes, args.repeat,
                                                 args.run_depth, args.before)  # fmt: skip
        if args.read:
            sizes = [1_000, 10_000] + ([100_000] if args.read_100k else [])
            keep = args.keep or folder
            keep.mkdir(parents=True, exist_ok=True)
            figures["read"] = [
                bench_read(f"sqlite:///{keep / f'read-{n}.db'}", n, args.repeat) for n in sizes
            ]
            if args.postgres:
                with postgres_server(args.postgres) as base:
                    figures["read_postgres"] = [
                        bench_read(database(base, f"ragmeter_read_{n}"), n, args.repeat)
                        for n in sizes
                    ]
    figures["load_avg_at_end"] = os.getloadavg()
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    print(json.dumps(figures, indent=2))


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def bench_read(url: str, n: int, repeat: int) -> dict[str, Any]:
    """``show`` and ``diff`` of ``n``-question runs beside their floors (medians of ``repeat``).

    The two runs are built once per store: a SQLite file or a PostgreSQL database that
    already holds them is reused (``--keep``)."""
    target = url.removeprefix("sqlite:///")
    if not _has_runs(url):
        print(f"read side: building two {n:,}-question runs in {url} ...", flush=True)
        run_child([PY, "-c", EVALUATE, str(n), url])
        run_child([PY, "-c", EVALUATE_B, str(n), url])
    commands = {
        "show": [PY, "-m", "ragmeter", "show", "scale", "--store", url],
        "show_floor": [PY, "-c", SHOW_FLOOR, target],
        "diff": [PY, "-m", "ragmeter", "diff", "scale", "scale-b", "--store", url],
        "diff_floor": [PY, "-c", DIFF_FLOOR, target],
    }
    measured: dict[str, list[dict[str, Any]]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, command in commands.items():  # interleaved: the load hits every side
            measured[name].append(run_child(command))
    out: dict[str, Any] = {"questions": n, "store": url.split(":")[0], "load": os.getloadavg()}
    for name, runs in measured.items():
        out[name] = {
            key: round(median([r[key] for r in runs]), 3) for key in ("cpu_s", "wall_s", "rss_mb")
        } | {"cpu_s_all": [round(r["cpu_s"], 3) for r in runs]}
    for side in ("show", "diff"):
        out[f"{side}_ratio_cpu"] = round(out[side]["cpu_s"] / out[f"{side}_floor"]["cpu_s"], 2)
        out[f"{side}_ratio_wall"] = round(out[side]["wall_s"] / out[f"{side}_floor"]["wall_s"], 2)
    print(json.dumps(out, indent=2), flush=True)
    return out


def _has_runs(url: str) -> bool:
    """Whether the store at ``url`` already holds both benchmark runs."""
    probe = (
        "import sys\nfrom ragmeter.store import Store\n"
        "s = Store.open(sys.argv[1])\nnames = {r.name for r in s.list_runs()}\n"
        "print(int({'scale', 'scale-b'} <= names))"
    )
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists():
        return False
    return run_child([PY, "-c", probe, url])["stdout"].strip().endswith("1")


@contextlib.contextmanager
def postgres_server(url: str) -> Iterator[str]:
    """``url`` itself, or (``temp``) the URL of a throwaway server stopped on exit."""
    if url != "temp":
        yield url
        return
    sys.path.insert(0, str(ROOT / "tests"))
    from _postgres import TemporaryPostgres

    with TemporaryPostgres(database="scale") as server:
        yield server.url


def database(base: str, name: str) -> str:
    """``base`` with its database replaced by ``name``, created when missing."""
    import psycopg

    conninfo = base.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists is None:
            conn.execute(f'CREATE DATABASE "{name}"')
    head, _, tail = conninfo.rpartition("/")
    query = tail.partition("?")[2]
    return f"{head}/{name}" + (f"?{query}" if query else "")


def bench_postgres(n: int) -> dict[str, Any]:
    existing = os.environ.get("RAGMETER_TEST_POSTGRES_URL")
    if existing:
        return bench_evaluate(existing, n, "PostgreSQL (existing server)")
    sys.path.insert(0, str(ROOT / "tests"))
    from _postgres import TemporaryPostgres

    with TemporaryPostgres(database="scale") as server:
        return bench_evaluate(server.url, n, "PostgreSQL (throwaway server)")


if __name__ == "__main__":
    main()
