"""The two dense backends side by side on SciFact (issue 29.4): torch (``all-MiniLM-L6-v2``,
the default) and ONNX int8 without torch (``all-MiniLM-L6-v2-int8``, ``[dense-lite]``).

    .venv/bin/python benchmarks/dense_backends.py [--data ../shared/data] [--docs 500]

Per backend: import + model load in a fresh interpreter (median of ``--loads``), throughput
on the test queries (short texts) and on the abstracts (long texts, title + text as the
pipeline indexes them), and nDCG@10 on the test queries. ``--docs N`` searches a subset:
every document judged for a test query, filled up to N with the first others in corpus
order (nDCG on a subset is higher than on the full corpus; compare the backends with each
other, not with published figures); ``--docs 0`` embeds all 5,183 abstracts; ``--only onnx``
(or ``torch``) measures one backend. Needs both
extras (``pip install 'ragmeter[dense,dense-lite]'``); a backend whose packages are missing
is reported and skipped. Nothing is cached: every text is embedded here.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from pipelines import ndcg10  # benchmarks/pipelines.py, beside this script
from ragmeter.corpus import load_corpus
from ragmeter.errors import ConfigError
from ragmeter.formats.beir import read_beir_qrels, read_beir_queries
from ragmeter.pipelines.chunkers import ChunkerConfig, chunk_corpus, index_text
from ragmeter.pipelines.dense import DenseRetriever, EmbeddingCache, get_embedder

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
BACKENDS = (("torch fp32", "all-MiniLM-L6-v2"), ("onnx int8", "all-MiniLM-L6-v2-int8"))

LOAD = """
import time
started = time.perf_counter()
from ragmeter.pipelines.dense import get_embedder
get_embedder({model!r})
print(time.perf_counter() - started)
"""


def load_seconds(model: str, repeats: int) -> float:
    """Median import + load time of ``model`` in a fresh interpreter."""
    src = str(Path(__file__).resolve().parents[1] / "src")
    times = []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", LOAD.format(model=model)],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
        )
        times.append(float(out.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--docs", type=int, default=500, help="corpus subset size; 0 = all")
    parser.add_argument("--loads", type=int, default=3, help="fresh interpreters per backend")
    parser.add_argument(
        "--only", choices=[label.split()[0] for label, _ in BACKENDS], help="one backend only"
    )
    args = parser.parse_args()
    folder = args.data / "scifact"
    corpus = load_corpus(folder)
    qrels = read_beir_qrels(folder, "test")
    queries = read_beir_queries(folder)
    qids = list(qrels)
    questions = [queries[q] for q in qids]
    chunks = chunk_corpus(corpus, ChunkerConfig(kind="none"))
    if args.docs:
        judged = {doc for q in qids for doc in qrels[q]}
        keep = [c for c in chunks if c.doc_id in judged]
        keep += [c for c in chunks if c.doc_id not in judged][: max(0, args.docs - len(keep))]
        chunks = keep
    titles = {d.id: d.title for d in corpus}
    long_texts = [index_text(c, titles.get(c.doc_id, "")) for c in chunks]
    mean_chars = sum(map(len, long_texts)) / len(long_texts)
    print(
        f"SciFact: {len(chunks)} documents (mean {mean_chars:.0f} characters), "
        f"{len(qids)} test queries; Python {sys.version.split()[0]}"
    )
    print(
        f"{'backend':<11} {'load s':>7} {'queries/s':>10} {'abstracts/s':>12} "
        f"{'nDCG@10':>8}  model key"
    )
    for label, model in BACKENDS:
        if args.only and not label.startswith(args.only):
            continue
        try:
            embedder = get_embedder(model)
        except ConfigError as exc:
            print(f"{label:<11} skipped: {exc}")
            continue
        load = load_seconds(model, args.loads)
        embedder.encode(questions[:8])  # warm-up
        started = time.perf_counter()
        embedder.encode(questions)
        short_rate = len(questions) / (time.perf_counter() - started)
        started = time.perf_counter()
        dense = DenseRetriever(chunks, embedder, EmbeddingCache(None), titles=titles)
        long_rate = len(chunks) / (time.perf_counter() - started)
        score = ndcg10(qrels, qids, dense.retrieve_many(questions, 100))
        print(
            f"{label:<11} {load:>7.2f} {short_rate:>10.0f} {long_rate:>12.1f} "
            f"{score:>8.4f}  {embedder.key}",
            flush=True,
        )


if __name__ == "__main__":
    main()
