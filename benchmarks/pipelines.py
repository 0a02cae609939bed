"""Reference pipelines on SciFact (issue 4): BM25 indexing time, dense embedding throughput,
nDCG@10 of bm25 / dense / hybrid (RRF), beside the published references.

    .venv/bin/python benchmarks/pipelines.py [--data ../shared/data]

Needs the dense extra (``pip install 'ragmeter[dense]'``). Embeds the corpus once (about a
minute on 2 idle cores); the embedding cache lives in a temporary folder.
"""

from __future__ import annotations

import argparse
import csv
import tempfile
import time
from pathlib import Path

from ragmeter.corpus import load_corpus
from ragmeter.formats.beir import read_beir_qrels, read_beir_queries
from ragmeter.metrics import compute_metrics
from ragmeter.pipelines.bm25 import BM25Retriever
from ragmeter.pipelines.chunkers import ChunkerConfig, chunk_corpus
from ragmeter.pipelines.dense import DenseRetriever, EmbeddingCache, get_embedder
from ragmeter.pipelines.hybrid import rrf

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def ndcg10(qrels: dict, qids: list[str], rankings: list[list]) -> float:
    run = {
        q: {h.doc: float(len(hits) - n) for n, h in enumerate(hits)}
        for q, hits in zip(qids, rankings, strict=True)
    }
    return float(compute_metrics(qrels, run, ["ndcg@10"]).means["ndcg@10"])


def published(data: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    path = data / "baselines" / "published_baselines.csv"
    if not path.is_file():
        return out
    with path.open() as fh:
        for row in csv.DictReader(fh):
            if row["dataset"].lower() == "scifact" and row["metric"].lower() == "ndcg@10":
                out[row["system"]] = f"{row['value']} ({row['source_quality']})"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    folder = args.data / "scifact"
    corpus = load_corpus(folder)
    chunks = chunk_corpus(corpus, ChunkerConfig(kind="none"))
    titles = {d.id: d.title for d in corpus}
    qrels = read_beir_qrels(folder, "test")
    queries = read_beir_queries(folder)
    qids = list(qrels)
    texts = [queries[q] for q in qids]

    started = time.perf_counter()
    bm25 = BM25Retriever(chunks, titles)
    bm25_index_s = time.perf_counter() - started
    bm25_runs = bm25.retrieve_many(texts, 100)

    embedder = get_embedder()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        dense = DenseRetriever(
            chunks, embedder, EmbeddingCache.for_model(Path(tmp), embedder.key), titles=titles
        )
        embed_s = time.perf_counter() - started
    dense_runs = dense.retrieve_many(texts, 100)
    hybrid_runs = [rrf([b, d]) for b, d in zip(bm25_runs, dense_runs, strict=True)]

    print(f"SciFact: {len(chunks)} docs, {len(qids)} test queries")
    print(f"BM25 indexing: {bm25_index_s:.2f} s (target < 5 s)")
    print(
        f"dense embedding: {embed_s:.1f} s = {len(chunks) / embed_s:.0f} docs/s "
        f"(model load {embedder.load_seconds:.1f} s)"
    )
    print()
    print(f"{'system':<34} {'nDCG@10':>8}  published")
    refs = published(args.data)
    for name, runs, ref in (
        ("bm25 (bm25s lucene k1=1.2 b=0.75)", bm25_runs, "0.680 (bm25s README)"),
        ("dense all-MiniLM-L6-v2", dense_runs, "~0.64-0.67 (MTEB, uncertain)"),
        ("hybrid RRF k=60", hybrid_runs, "-"),
    ):
        print(f"{name:<34} {ndcg10(qrels, qids, runs):>8.4f}  {ref}")
    for system, value in sorted(refs.items()):
        print(f"  published: {system:<40} {value}")


if __name__ == "__main__":
    main()
