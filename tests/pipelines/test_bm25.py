"""The built-in BM25 retriever: ranking, edge cases, threads, the on-disk cache, SciFact."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from _paths import SHARED
from ragmeter.corpus import Corpus, load_corpus
from ragmeter.documents import Document
from ragmeter.pipelines._cache import default_cache_dir
from ragmeter.pipelines.bm25 import BM25Retriever, _Tokenizer, load_or_build_bm25
from ragmeter.pipelines.chunkers import ChunkerConfig, chunk_corpus

DATA = SHARED / "data"

DOCS = [
    Document("install.md", "# Installing\n\nRun pip install ragmeter to install it.", "Installing"),
    Document("cats.md", "# Cats\n\nCats purr when they are happy. Cats sleep a lot.", "Cats"),
    Document("dogs.md", "# Dogs\n\nDogs bark at the mailman.", "Dogs"),
    Document("titled.md", "Nothing relevant in the body.", "Zebra stripes"),
]


@pytest.fixture
def corpus() -> Corpus:
    return Corpus.from_documents(DOCS)


def test_ranking_hits_and_stemming(corpus: Corpus) -> None:
    """Issue 3: hits carry chunk id, doc, score, text and span; stemming matches forms."""
    r = BM25Retriever(chunk_corpus(corpus, ChunkerConfig()))
    hits = r.retrieve("Why is my cat purring?", 10)
    assert [h.doc for h in hits] == ["cats.md"]
    h = hits[0]
    assert h.id == "cats.md#0" and h.score is not None and h.score > 0
    assert h.text == corpus["cats.md"].text[h.start : h.end]
    scores = [x.score for x in r.retrieve("cats dogs install", 10)]
    assert scores == sorted(scores, reverse=True) and len(scores) == 3


def test_title_is_indexed(corpus: Corpus) -> None:
    """Issue 3: title + text are indexed (the title is the document's)."""
    r = load_or_build_bm25(corpus, ChunkerConfig(kind="none"), None)
    assert [h.id for h in r.retrieve("zebra", 5)] == ["titled.md"]


def test_edge_cases(corpus: Corpus) -> None:
    """Issue 3: k beyond the corpus, unknown or stopword-only queries, k <= 0, no chunks."""
    r = BM25Retriever(chunk_corpus(corpus, ChunkerConfig(kind="none")))
    assert len(r.retrieve("cats dogs install zebra", 1000)) == 4
    assert r.retrieve("xylophone quasar", 5) == []
    assert r.retrieve("the and of", 5) == []
    assert r.retrieve("", 5) == []
    assert r.retrieve("cats", 0) == []
    assert [len(x) for x in r.retrieve_many(["cats", "xylophone-quasar", "dogs bark"], 2)] == [
        1,
        0,
        1,
    ]
    assert BM25Retriever([]).retrieve("cats", 5) == []


def test_index_ids_are_bm25s_own_tokens_numbered_in_order_of_first_occurrence() -> None:
    """Issue 29.3: indexing numbers stems in one pass; each text's stems are what bm25s'
    own tokenizer (the floor's) gives, and ids follow the first occurrence of each stem."""
    import bm25s
    import Stemmer

    folder = Path(__file__).resolve().parents[2] / "src" / "ragmeter" / "examples" / "uv_docs"
    texts = [p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*.md"))]
    texts += ["", "the and of", "Ünïcödé Straße straße", "cats CATS cat's", "a b c"]
    ids, vocab = _Tokenizer().index_ids(texts)
    theirs = bm25s.tokenize(
        texts, stopwords="en", stemmer=Stemmer.Stemmer("english"), show_progress=False
    )
    their_stems = {i: stem for stem, i in theirs.vocab.items()}
    our_stems = {i: stem for stem, i in vocab.items()}
    assert [[our_stems[i] for i in row] for row in ids] == [
        [their_stems[i] for i in row] for row in theirs.ids
    ]
    first_seen = list(dict.fromkeys(i for row in ids for i in row))
    assert first_seen == list(range(len(vocab))) == sorted(vocab.values())
    assert len(texts) > 30 and len(vocab) > 1000


def test_ties_are_ordered_by_corpus_position() -> None:
    """Issue 3: equal scores rank in chunk order, so runs are reproducible."""
    docs = [Document(f"d{i}", "same words here") for i in range(5)]
    r = BM25Retriever(chunk_corpus(Corpus.from_documents(docs), ChunkerConfig(kind="none")))
    assert [h.doc for h in r.retrieve("words", 3)] == ["d0", "d1", "d2"]


def test_concurrent_retrieval_matches_sequential(corpus: Corpus) -> None:
    """Issue 3: evaluate() calls retrieve from a thread pool; answers must not mix."""
    r = BM25Retriever(chunk_corpus(corpus, ChunkerConfig()))
    questions = ["cats purr", "dogs bark", "install pip", "zebra", "sleeping cats"] * 40
    expected = [r.retrieve(q, 3) for q in questions]
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda q: r.retrieve(q, 3), questions))
    assert got == expected


def test_cache_second_call_loads_instead_of_building(tmp_path: Path, corpus: Corpus) -> None:
    """Issue 3: the index is cached by corpus hash + chunker config; a second run loads it."""
    cfg = ChunkerConfig()
    first = load_or_build_bm25(corpus, cfg, tmp_path)
    assert first.built and not first.from_cache
    entries = list((tmp_path / "bm25").iterdir())
    assert len(entries) == 1 and (entries[0] / "chunks.jsonl").is_file()
    second = load_or_build_bm25(corpus, cfg, tmp_path)
    assert second.from_cache and not second.built
    assert second.chunks == first.chunks
    assert second.retrieve("cats purr", 5) == first.retrieve("cats purr", 5)
    # Another chunker or other content is another entry.
    assert not load_or_build_bm25(corpus, ChunkerConfig(kind="none"), tmp_path).from_cache
    changed = Corpus.from_documents([*DOCS[:-1], Document("titled.md", "changed", "Zebra")])
    assert not load_or_build_bm25(changed, cfg, tmp_path).from_cache
    assert len([p for p in (tmp_path / "bm25").iterdir() if not p.name.startswith(".")]) == 3
    assert not [p for p in (tmp_path / "bm25").iterdir() if p.name.startswith(".")]


def test_cached_chunks_keep_any_text(tmp_path: Path) -> None:
    """Issue 29.3: the cached chunks file is written with ASCII escapes; every text, accents,
    emoji, quotes and backslashes included, reads back the same."""
    text = 'Ünïcödé Straße 🐍 «quotes» \\ "end"'
    docs = Corpus.from_documents([Document("ü.md", text, "Tïtle"), *DOCS])
    first = load_or_build_bm25(docs, ChunkerConfig(kind="none"), tmp_path)
    second = load_or_build_bm25(docs, ChunkerConfig(kind="none"), tmp_path)
    assert second.from_cache and second.chunks == first.chunks
    assert second.chunks[0].text == text and second.chunks[0].doc_id == "ü.md"
    assert second.retrieve("straße", 5) == first.retrieve("straße", 5) != []


def test_damaged_cache_entry_is_rebuilt(tmp_path: Path, corpus: Corpus) -> None:
    """Issue 3: a damaged entry is replaced, not trusted."""
    cfg = ChunkerConfig()
    load_or_build_bm25(corpus, cfg, tmp_path)
    (entry,) = (tmp_path / "bm25").iterdir()
    (entry / "chunks.jsonl").write_text("{broken", encoding="utf-8")
    again = load_or_build_bm25(corpus, cfg, tmp_path)
    assert again.built
    assert load_or_build_bm25(corpus, cfg, tmp_path).from_cache


_RACE = """
import sys, json
from pathlib import Path
from ragmeter.corpus import load_corpus
from ragmeter.pipelines.bm25 import load_or_build_bm25
from ragmeter.pipelines.chunkers import ChunkerConfig
r = load_or_build_bm25(load_corpus(sys.argv[1]), ChunkerConfig(), Path(sys.argv[2]))
print(json.dumps([h.doc for h in r.retrieve("cats purr", 3)]))
"""


@pytest.mark.slow
def test_two_processes_racing_on_one_cache(tmp_path: Path) -> None:
    """Issue 3: builds go to a temp dir and are renamed, so concurrent runs both succeed."""
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        "\n".join(json.dumps({"id": d.id, "text": d.text, "title": d.title}) for d in DOCS),
        encoding="utf-8",
    )
    cache = tmp_path / "cache"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RACE, str(docs), str(cache)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [e for _, e in outs]
    assert {o.strip() for o, _ in outs} == {'["cats.md"]'}
    entries = list((cache / "bm25").iterdir())
    assert len(entries) == 1 and not entries[0].name.startswith(".")
    assert load_or_build_bm25(load_corpus(docs), ChunkerConfig(), cache).from_cache


def test_default_cache_dir_reads_env_only_when_given(tmp_path: Path) -> None:
    """Issue 3: library code takes the cache path explicitly; only the CLI passes the env."""
    assert default_cache_dir(None, cwd=tmp_path) == tmp_path / ".ragmeter" / "cache"
    assert default_cache_dir({"RAGMETER_CACHE_DIR": str(tmp_path / "c")}) == tmp_path / "c"
    assert default_cache_dir({}, cwd=tmp_path) == tmp_path / ".ragmeter" / "cache"


@pytest.mark.slow
def test_scifact_ndcg_matches_published_bm25s(tmp_path: Path) -> None:
    """Issue 3: BM25, chunker none, SciFact test, k=100: nDCG@10 within 0.01 of 0.680
    (bm25s' published figure). Indexing speed (issue 4) is measured by benchmarks/pipelines.py."""
    folder = DATA / "scifact"
    if not folder.is_dir():
        pytest.skip(f"shared data not present: {folder}")
    from ragmeter.formats.beir import read_beir_qrels, read_beir_queries
    from ragmeter.metrics import compute_metrics

    corpus = load_corpus(folder)
    retriever = load_or_build_bm25(corpus, ChunkerConfig(kind="none"), tmp_path)
    qrels = read_beir_qrels(folder, "test")
    queries = read_beir_queries(folder)
    assert len(qrels) == 300
    qids = list(qrels)
    rankings = retriever.retrieve_many([queries[q] for q in qids], 100)
    run = {
        q: {h.doc: float(h.score or 0.0) for h in hits}
        for q, hits in zip(qids, rankings, strict=True)
    }
    ndcg = compute_metrics(qrels, run, ["ndcg@10"]).means["ndcg@10"]
    assert abs(ndcg - 0.680) <= 0.01, ndcg
    # Index build time is a benchmark figure (benchmarks/pipelines.py), not a test assertion:
    # a timed assertion fails on a loaded machine without anything being wrong.
    cached = load_or_build_bm25(corpus, ChunkerConfig(kind="none"), tmp_path)
    assert cached.from_cache
    assert cached.retrieve(queries[qids[0]], 10) == retriever.retrieve(queries[qids[0]], 10)
