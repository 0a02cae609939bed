"""Time of ``ragmeter explain`` on a BM25 run (issue 28): the bundled uv docs and SciFact.

For each dataset: evaluate BM25 (k=5) into a SQLite store with an on-disk index cache, then
explain the run (depth 50, no dense probe: a BM25 run's other retriever is dense, which
needs minutes of embedding on 2 cores the first time) and explain it again with
``--verify`` (RM3 and the smaller chunker run over every question). Prints one line per
step. Target (issue 28): a 200-question run with 40 misses explained in under a minute.

Run: ``.venv/bin/python benchmarks/explain.py [--data ../shared/data] [--no-scifact]``
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from ragmeter.evaluation.explain import ExplainOptions, explain_run
from ragmeter.evaluation.jobs import evaluate_spec
from ragmeter.examples import example_corpus_dir, example_gold_path
from ragmeter.pipelines.chunkers import ChunkerConfig
from ragmeter.store import Store

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def bench(name: str, gold: Path, corpus: Path, chunker: ChunkerConfig, tmp: Path) -> None:
    cache = tmp / f"cache-{name}"
    with Store.open(f"sqlite:///{tmp / (name + '.db')}") as store:
        started = time.perf_counter()
        report = evaluate_spec(gold, "bm25", store=store, corpus=corpus, chunker=chunker,
                               k=5, cache_dir=cache)  # fmt: skip
        eval_s = time.perf_counter() - started
        started = time.perf_counter()
        explanation = explain_run(
            store, report.run.id, ExplainOptions(dense=False, cache_dir=cache)
        )
        explain_s = time.perf_counter() - started
        started = time.perf_counter()
        explain_run(store, report.run.id, ExplainOptions(dense=False, cache_dir=cache, verify=True))
        verify_s = time.perf_counter() - started
    counts = ", ".join(f"{k} {v}" for k, v in explanation.counts().items())
    print(
        f"{name}: {explanation.n_evaluated} questions, {len(explanation.misses)} misses "
        f"({counts}); eval {eval_s:.1f}s, explain {explain_s:.1f}s, explain --verify {verify_s:.1f}s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--no-scifact", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sections = ChunkerConfig(kind="markdown", size=800, overlap=100)
        bench("uv docs", example_gold_path(), example_corpus_dir(), sections, Path(tmp))
        if not args.no_scifact:
            scifact = args.data / "scifact"
            bench("scifact", scifact, scifact, ChunkerConfig(kind="none"), Path(tmp))


if __name__ == "__main__":
    main()
