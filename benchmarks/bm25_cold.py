"""Cold SciFact BM25 ``eval`` beside its floor (issue 29.3). Target: <= 1.4x the floor.

ragmeter: ``ragmeter eval --gold scifact --corpus scifact --retriever bm25 --chunker none`` in a
new empty folder each time (no index cache, no store), a whole process.

Floor: the least code that does the same job, also a whole process: read the BEIR corpus,
queries and test qrels, tokenize with bm25s (English stopwords, PyStemmer's English stemmer),
index with bm25s (Lucene, k1 = 1.2, b = 0.75), take the top 10 of each test query and score them
with pytrec_eval (nDCG@10, recall@10, reciprocal rank); no store, no cache.

The two run interleaved ``--runs`` times; the medians of wall and CPU time (user + system of the
process, from ``os.wait4``) and the peak RSS are printed with the ratios and the load average.
On a shared machine quote the CPU ratio: wall time moves with the other processes.

Run: ``.venv/bin/python benchmarks/bm25_cold.py [--runs 7] [--data ../shared/data]``
(needs ``pytrec-eval-terrier``, in the ``dev`` and ``bench`` extras).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _bytecode import compile_package

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

FLOOR_NAME = "floor: bm25s + pytrec_eval"
FLOOR = """
import gzip, json, sys
import bm25s, pytrec_eval, Stemmer
folder = sys.argv[1]
with gzip.open(folder + "/corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
    docs = [json.loads(line) for line in fh]
queries = {}
with open(folder + "/queries.jsonl", encoding="utf-8") as fh:
    for line in fh:
        q = json.loads(line)
        queries[q["_id"]] = q["text"]
qrels = {}
with open(folder + "/qrels/test.tsv", encoding="utf-8") as fh:
    next(fh)
    for line in fh:
        qid, did, grade = line.split("\\t")
        qrels.setdefault(qid, {})[did] = int(grade)
stemmer = Stemmer.Stemmer("english")
texts = [d.get("title", "") + "\\n" + d["text"] for d in docs]
index = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
index.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
            show_progress=False)
qids = sorted(qrels)
tokens = bm25s.tokenize([queries[q] for q in qids], stopwords="en", stemmer=stemmer,
                        show_progress=False)
found, scores = index.retrieve(tokens, k=10, show_progress=False)
run = {q: {docs[i]["_id"]: float(s) for i, s in zip(found[n], scores[n])}
       for n, q in enumerate(qids)}
evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recall_10", "recip_rank"})
per_query = evaluator.evaluate(run)
print("nDCG@10", sum(v["ndcg_cut_10"] for v in per_query.values()) / len(per_query))
"""


Case = tuple[list[str], dict[str, str]]


def _once(case: Case) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of one process run in a new empty folder."""
    args, env = case
    with tempfile.TemporaryDirectory() as cwd:
        started = time.perf_counter()
        proc = subprocess.Popen(
            args, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        assert proc.stderr is not None
        err = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{err[-3000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument(
        "--before",
        type=Path,
        help="another checkout's src/ folder, run as a third case (before/after in one load)",
    )
    args = parser.parse_args()
    folder = str((args.data / "scifact").resolve())
    env = dict(os.environ)
    ours = [sys.executable, "-m", "ragmeter", "eval", "--gold", folder, "--corpus", folder]
    ours += ["--retriever", "bm25", "--chunker", "none"]
    # The ragmeter this script imports, by absolute path: each case runs in a new folder,
    # where a relative PYTHONPATH=src would fall back to whatever the venv installed.
    ours_env = {**env, "PYTHONPATH": str(compile_package().parent)}
    cases: dict[str, Case] = {
        FLOOR_NAME: ([sys.executable, "-c", FLOOR, folder], env),
        "ragmeter eval (cold)": (ours, ours_env),
    }
    if args.before is not None:
        before_env = {**env, "PYTHONPATH": str(args.before.resolve())}
        cases[f"before: {args.before}"] = (ours, before_env)
        compile_package(args.before.resolve())
    for case in cases.values():
        _once(case)  # warm the file cache
    load_before = os.getloadavg()[0]
    figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in cases}
    for _ in range(args.runs):
        for name, case in cases.items():
            figures[name].append(_once(case))
    load_after = os.getloadavg()[0]
    print(f"load average {load_before:.1f} before, {load_after:.1f} after; {args.runs} runs each")
    width = max(map(len, cases)) + 2
    print(f"{'':<{width}} {'wall':>8} {'CPU':>8} {'peak RSS':>9}")
    medians = {}
    for name, rows in figures.items():
        wall, cpu, rss = (statistics.median(col) for col in zip(*rows, strict=True))
        medians[name] = (wall, cpu)
        print(f"{name:<{width}} {wall:>7.2f}s {cpu:>7.2f}s {rss:>6.0f} MB")
    floor_wall, floor_cpu = medians.pop(FLOOR_NAME)
    print("÷ floor (target <= 1.4x):")
    for name, (wall, cpu) in medians.items():
        print(f"  {name}: wall {wall / floor_wall:.2f}x, CPU {cpu / floor_cpu:.2f}x")


if __name__ == "__main__":
    main()
