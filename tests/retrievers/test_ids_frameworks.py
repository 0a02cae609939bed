"""Real framework hits through the one id resolver, ranked by position (issue 24.1, 24.2).

LangChain's ``BM25Retriever`` over ``RecursiveCharacterTextSplitter`` chunks of the bundled
uv docs (``Document.id`` None, absolute ``metadata["source"]``) and Haystack documents whose
``file_path`` is only the file name (``store_full_path=False``), each with and without the
corpus. Every cell equals :func:`reference` — the hits in the order the framework returned
them, quotes and chunks located by plain string search in the source files — or stops with
exit 2 naming the fix. None ends with exit 0 and zeros.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from haystack import Document as HaystackDocument
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from langchain_core.documents import Document as LangChainDocument
from langchain_text_splitters import RecursiveCharacterTextSplitter

import ragmeter
from _langchain import community
from ragmeter.corpus import Corpus, load_corpus
from ragmeter.evaluation.setup import RetrieverSetup
from ragmeter.examples import example_corpus_dir, example_gold_path
from ragmeter.gold.goldset import GoldSet
from ragmeter.retrievers import as_retriever

BM25Retriever = community("langchain_community.retrievers").BM25Retriever

K = 5
Span = tuple[int, int]


@pytest.fixture(scope="module")
def root() -> Path:
    return example_corpus_dir().resolve()


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return load_corpus(example_corpus_dir())


def _locate(text: str, quote: str) -> Span:
    """The quote's span in its source file: plain search, else whitespace runs as one."""
    at = text.find(quote)
    if at >= 0:
        return at, at + len(quote)
    found = re.search(r"\s+".join(re.escape(w) for w in quote.split()), text)
    assert found is not None, quote
    return found.span()


def reference(
    gold: GoldSet, ranked: dict[str, Sequence[tuple[str, Span]]], k: int
) -> dict[str, float]:
    """mrr, hit@k, recall@k of ``(doc, span in the file)`` hits, position = rank.

    ``spans`` of the quotes come from :func:`_locate`; an entry is covered by a hit of its
    document whose span holds the quote (every chunk is checked to hold a quote whole or not
    touch it, see ``_clean``), or any hit of its document when it has no quote.
    """
    mrr = hit = recall = 0.0
    for item in gold:
        entries = [rel for rel in item.relevant if rel.grade > 0]
        first: dict[int, int] = {}
        for position, (doc, (start, end)) in enumerate(ranked[item.id], start=1):
            for index, rel in enumerate(entries):
                if doc != rel.doc:
                    continue
                span = QUOTE_SPANS.get((item.id, index))
                if span is None or (start <= span[0] and span[1] <= end):
                    first.setdefault(index, position)
        best = min(first.values(), default=None)
        mrr += 1 / best if best else 0.0
        hit += float(best is not None and best <= k)
        recall += sum(p <= k for p in first.values()) / len(entries)
    n = len(gold)
    return {"mrr": mrr / n, f"hit@{k}": hit / n, f"recall@{k}": recall / n}


QUOTE_SPANS: dict[tuple[str, int], Span] = {}


@pytest.fixture(scope="module")
def chunks(root: Path, corpus: Corpus) -> list[LangChainDocument]:
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=400, chunk_overlap=80, add_start_index=True
    )
    docs = [
        LangChainDocument(page_content=doc.text, metadata={"source": str(root / doc_id)})
        for doc_id, doc in sorted(corpus.documents.items())
    ]
    return splitter.split_documents(docs)


@pytest.fixture(scope="module")
def gold(chunks: list[LangChainDocument], root: Path, corpus: Corpus) -> GoldSet:
    """The bundled items whose quotes every chunk holds whole or does not touch, so that
    any coverage rule (containment, half-overlap) gives the same answer."""
    spans: dict[str, list[Span]] = {}
    for chunk in chunks:
        doc = Path(chunk.metadata["source"]).relative_to(root).as_posix()
        start = chunk.metadata["start_index"]
        spans.setdefault(doc, []).append((start, start + len(chunk.page_content)))
    keep = []
    for item in ragmeter.load_gold(example_gold_path()):
        located = {}
        for index, rel in enumerate(r for r in item.relevant if r.grade > 0):
            if rel.quote is not None:
                located[index] = _locate(corpus.documents[rel.doc].text, rel.quote)
        clean = all(
            e <= q0 or q1 <= s or (s <= q0 and q1 <= e)
            for index, (q0, q1) in located.items()
            for s, e in spans[[r for r in item.relevant if r.grade > 0][index].doc]
        )
        if clean:
            keep.append(item)
            QUOTE_SPANS.update({(item.id, i): span for i, span in located.items()})
    assert len(keep) >= 20
    return GoldSet(keep, name="clean")


def _ranked_langchain(
    bm25: Any, gold: GoldSet, root: Path, k: int
) -> dict[str, list[tuple[str, Span]]]:
    out = {}
    for item in gold:
        found = bm25.model_copy(update={"k": k}).invoke(item.question)
        out[item.id] = [
            (
                Path(d.metadata["source"]).relative_to(root).as_posix(),
                (d.metadata["start_index"], d.metadata["start_index"] + len(d.page_content)),
            )
            for d in found
        ]
    return out


@pytest.mark.parametrize("how", ["doc-root", "corpus", "neither"])
def test_langchain_bm25_over_split_chunks(
    chunks: list[LangChainDocument], gold: GoldSet, root: Path, corpus: Corpus, how: str
) -> None:
    """Issue 24.1/24.2: BM25Retriever over splitter chunks (Document.id None) merged a
    document's chunks (hit@5 0.604 where 0.566 was right); now every chunk keeps its
    position. Absolute sources are read with --doc-root or the corpus; with neither, the run
    stops (exit 2) naming --doc-root."""
    bm25 = BM25Retriever.from_documents(chunks, k=K)
    metrics = ["mrr", f"hit@{K}", f"recall@{K}"]
    if how == "neither":
        with pytest.raises(ragmeter.ConfigError, match=f"pass --doc-root {root} ") as caught:
            ragmeter.evaluate(gold, bm25, k=K, metrics=metrics)
        assert caught.value.exit_code == 2
        return
    retriever = as_retriever(bm25, doc_root=str(root)) if how == "doc-root" else bm25
    documents = corpus.documents if how == "corpus" else None
    report = ragmeter.evaluate(
        gold, RetrieverSetup(retriever, documents=documents), k=K, metrics=metrics
    )
    expected = reference(gold, _ranked_langchain(bm25, gold, root, K), K)
    assert expected["mrr"] > 0.3
    for name, value in expected.items():
        assert report.metrics[name] == pytest.approx(value), name
    assert report.warnings == [] and report.notes  # the mapping is said, as a note


def _haystack(chunks: list[LangChainDocument], root: Path, *, full: bool) -> Any:
    store = InMemoryDocumentStore()
    store.write_documents(
        [
            HaystackDocument(
                content=c.page_content,
                meta={
                    "file_path": c.metadata["source"] if full else Path(c.metadata["source"]).name,
                    "start_index": c.metadata["start_index"],
                },
            )
            for c in chunks
        ]
    )
    return InMemoryBM25Retriever(store, top_k=K)


@pytest.mark.parametrize("with_corpus", [False, True], ids=["no-corpus", "corpus"])
def test_haystack_file_names_map_when_unique_or_stop(
    chunks: list[LangChainDocument], gold: GoldSet, root: Path, corpus: Corpus, with_corpus: bool
) -> None:
    """Issue 24.2: Haystack's default store_full_path=False leaves file names; over only the
    documents whose names are unique, with the corpus they resolve to their paths and score
    the reference; without it, nothing could confirm a name, so the run stops (exit 2)."""
    names: dict[str, list[str]] = {}
    for doc_id in corpus.documents:
        names.setdefault(Path(doc_id).name, []).append(doc_id)
    unique = [c for c in chunks if len(names[Path(c.metadata["source"]).name]) == 1]
    retriever = _haystack(unique, root, full=False)
    kept = {Path(c.metadata["source"]).relative_to(root).as_posix() for c in unique}
    items = GoldSet([i for i in gold if all(r.doc in kept for r in i.relevant)], name="u")
    documents = corpus.documents if with_corpus else None
    metrics = ["mrr", f"hit@{K}", f"recall@{K}"]
    if not with_corpus:
        with pytest.raises(ragmeter.ConfigError, match="pass --corpus DIR") as caught:
            ragmeter.evaluate(items, RetrieverSetup(retriever, documents=documents), k=K)
        assert caught.value.exit_code == 2
        return
    report = ragmeter.evaluate(
        items, RetrieverSetup(retriever, documents=documents), k=K, metrics=metrics
    )
    ranked = {}
    for item in items:
        found = retriever.run(query=item.question, top_k=K)["documents"]
        ranked[item.id] = [
            (
                names[d.meta["file_path"]][0],
                (d.meta["start_index"], d.meta["start_index"] + len(d.content)),
            )
            for d in found
        ]
    expected = reference(items, ranked, K)
    assert expected["mrr"] > 0.3
    for name, value in expected.items():
        assert report.metrics[name] == pytest.approx(value), name
    assert any("by file name" in note for note in report.notes)
