"""LangChain, LlamaIndex and Haystack retrievers as they are, with the real packages (issue 14.1).

Each framework's retriever is built over the bundled uv docs with absolute file paths in its
metadata, as loaders put them; ragmeter must read it with no glue and give exactly the
numbers of the same hits handed over as plain dicts with corpus-relative ids.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from haystack import Document as HaystackDocument
from haystack import Pipeline
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from langchain_core.documents import Document as LangChainDocument
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core import MockEmbedding, VectorStoreIndex
from llama_index.core.retrievers import BaseRetriever as LlamaRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

import ragmeter
from _langchain import SUNSET_FILTER, community
from ragmeter.corpus import Corpus, load_corpus
from ragmeter.evaluation.setup import RetrieverSetup
from ragmeter.examples import example_corpus_dir, example_gold_path
from ragmeter.gold.goldset import GoldSet
from ragmeter.retrievers import as_retriever

LangChainBM25 = community("langchain_community.retrievers").BM25Retriever

K = 10
QUESTIONS = 24  # enough of the demo gold set to move every metric, fast on 2 cores


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return load_corpus(example_corpus_dir())


@pytest.fixture(scope="module")
def root() -> Path:
    return example_corpus_dir().resolve()


@pytest.fixture(scope="module")
def gold() -> GoldSet:
    full = ragmeter.load_gold(example_gold_path())
    return GoldSet(list(full)[:QUESTIONS], name="demo")


def _absolute(root: Path, doc_id: str) -> str:
    return str(root / doc_id)


def _relative(root: Path, path: str) -> str:
    return Path(path).relative_to(root).as_posix()


def _metrics(gold: GoldSet, retriever: Any, corpus: Corpus, **options: Any) -> dict[str, float]:
    # The corpus travels with the retriever (the spec layer's RetrieverSetup), so the id
    # check knows the corpus ids.
    setup = RetrieverSetup(retriever, documents=corpus.documents)
    report = ragmeter.evaluate(gold, setup, k=K, level="doc", concurrency=2, **options)
    assert report.n_errors == 0, report.errors[:1]
    return {name: v for name, v in report.metrics.items() if not name.startswith("latency")}


@pytest.fixture(scope="module")
def langchain_bm25(corpus: Corpus, root: Path) -> Any:
    documents = [
        LangChainDocument(page_content=doc.text, metadata={"source": _absolute(root, doc_id)})
        for doc_id, doc in corpus.documents.items()
    ]
    return LangChainBM25.from_documents(documents, k=4)


def test_langchain_bm25_retriever_as_is(
    langchain_bm25: Any, gold: GoldSet, corpus: Corpus, root: Path
) -> None:
    """Issue 14.1: a LangChain BM25Retriever is evaluated as it is; k reaches it (its own k
    is 4); absolute metadata["source"] paths under doc_root become corpus-relative ids; the
    numbers equal those of the same hits as plain dicts."""

    def plain(question: str, k: int) -> list[dict[str, Any]]:
        found = langchain_bm25.model_copy(update={"k": k}).invoke(question)
        return [
            {"doc": _relative(root, d.metadata["source"]), "text": d.page_content} for d in found
        ]

    retriever = as_retriever(langchain_bm25, doc_root=str(root))
    hits = retriever.retrieve(gold.items[0].question, 7)
    assert len(hits) == 7
    assert all(not Path(hit.doc).is_absolute() and hit.doc in corpus.documents for hit in hits)
    assert retriever.config["framework"] == "langchain"
    framework = _metrics(gold, retriever, corpus)
    assert framework == _metrics(gold, plain, corpus)
    assert framework["hit@10"] > 0.3
    assert any("corpus-relative" in note for note in retriever.notes.items)


def test_langchain_vectorstore_with_uuid_ids(gold: GoldSet, corpus: Corpus, root: Path) -> None:
    """Issue 14.1/14.3: a LangChain VectorStore (UUIDs in Document.id) is searched through
    similarity_search_with_score(q, k); the document id comes from metadata["source"], never
    from the UUID."""
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(
        [
            LangChainDocument(page_content=doc.text[:500], metadata={"source": _absolute(root, d)})
            for d, doc in corpus.documents.items()
        ]
    )

    def plain(question: str, k: int) -> list[dict[str, Any]]:
        pairs = store.similarity_search_with_score(question, k=k)
        return [
            {"id": d.id, "doc": _relative(root, d.metadata["source"]), "text": d.page_content}
            for d, _ in pairs
        ]

    retriever = as_retriever(store, doc_root=str(root))
    hits = retriever.retrieve("install uv", 5)
    assert len(hits) == 5 and all(hit.doc in corpus.documents for hit in hits)
    assert _metrics(gold, retriever, corpus) == _metrics(gold, plain, corpus)


@pytest.fixture(scope="module")
def llama_index(corpus: Corpus, root: Path) -> Any:
    nodes = []
    for doc_id, doc in corpus.documents.items():
        for start in range(0, len(doc.text), 1500):
            end = min(start + 1500, len(doc.text))
            nodes.append(
                TextNode(
                    text=doc.text[start:end],
                    id_=f"{doc_id}@{start}",
                    metadata={"file_path": _absolute(root, doc_id)},
                    start_char_idx=start,
                    end_char_idx=end,
                )
            )
    return VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))


class KeywordRetriever(LlamaRetriever):
    """A user's own LlamaIndex retriever: word overlap over nodes, top 20."""

    def __init__(self, nodes: list[TextNode]) -> None:
        self._nodes = nodes
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        words = set(query_bundle.query_str.lower().split())
        scored = [
            NodeWithScore(node=n, score=float(len(words & set(n.text.lower().split()))))
            for n in self._nodes
        ]
        scored.sort(key=lambda s: (-(s.score or 0.0), s.node.node_id))
        return scored[:20]


def test_llamaindex_retriever_nodes_and_spans(
    llama_index: Any, gold: GoldSet, corpus: Corpus, root: Path
) -> None:
    """Issue 14.1: a LlamaIndex BaseRetriever is called with the question alone; its
    NodeWithScore hits keep node_id, metadata["file_path"] (relativised) and the span from
    start_char_idx/end_char_idx; its fixed top 20 is cut to k, said once."""
    nodes = list(llama_index.docstore.docs.values())
    user = KeywordRetriever(nodes)

    def plain(question: str, k: int) -> list[dict[str, Any]]:
        return [
            {
                "id": s.node.node_id,
                "doc": _relative(root, s.node.metadata["file_path"]),
                "start": s.node.start_char_idx,
                "end": s.node.end_char_idx,
                "score": s.score,
                "text": s.node.text,
            }
            for s in user.retrieve(question)[:k]
        ]

    retriever = as_retriever(user, doc_root=str(root))
    hit = retriever.retrieve(gold.items[0].question, 3)[0]
    assert hit.doc in corpus.documents and hit.start is not None and hit.end is not None
    assert corpus.documents[hit.doc].text[hit.start : hit.end] == hit.text
    assert _metrics(gold, retriever, corpus) == _metrics(gold, plain, corpus)
    assert any("cut to k" in note for note in retriever.notes.items)
    vector = as_retriever(llama_index.as_retriever(similarity_top_k=K), doc_root=str(root))
    assert all(h.doc in corpus.documents for h in vector.retrieve("install", K))
    shallow = as_retriever(llama_index.as_retriever(similarity_top_k=2), doc_root=str(root))
    assert len(shallow.retrieve("install", K)) == 2
    assert any("similarity_top_k=2 hits, fewer than k=10" in n for n in shallow.notes.items)


def test_llamaindex_query_engine_keeps_answer_and_sources(
    llama_index: Any, corpus: Corpus, root: Path
) -> None:
    """Issue 14.1: a LlamaIndex query engine gives both its answer and its source_nodes."""
    from llama_index.core.llms import MockLLM

    engine = llama_index.as_query_engine(llm=MockLLM(), similarity_top_k=3)
    output = as_retriever(engine, doc_root=str(root)).retrieve_full("How do I install uv?", 3)
    assert output.answer is not None
    assert len(output.hits) == 3 and all(h.doc in corpus.documents for h in output.hits)


@pytest.fixture(scope="module")
def haystack_store(corpus: Corpus, root: Path) -> Any:
    store = InMemoryDocumentStore()
    store.write_documents(
        [
            HaystackDocument(content=doc.text, meta={"file_path": _absolute(root, doc_id)})
            for doc_id, doc in corpus.documents.items()
        ]
    )
    return store


def test_haystack_component_and_pipeline(
    haystack_store: Any, gold: GoldSet, corpus: Corpus, root: Path
) -> None:
    """Issue 14.1: a Haystack retriever component (run(query, top_k)) and a Pipeline holding
    it (the question and top_k routed to its inputs) give the numbers of the same documents
    as plain dicts; the content-hash Document.id is never the document id."""
    component = InMemoryBM25Retriever(haystack_store)
    pipeline = Pipeline()
    pipeline.add_component("retriever", InMemoryBM25Retriever(haystack_store))

    def plain(question: str, k: int) -> list[dict[str, Any]]:
        found = component.run(query=question, top_k=k)["documents"]
        return [
            {"id": d.id, "doc": _relative(root, d.meta["file_path"]), "text": d.content}
            for d in found
        ]

    expected = _metrics(gold, plain, corpus)
    for thing in (component, pipeline):
        retriever = as_retriever(thing, doc_root=str(root))
        assert len(retriever.retrieve("python versions", 6)) == 6
        assert _metrics(gold, retriever, corpus) == expected


def test_haystack_hash_ids_stop_with_the_fix(haystack_store: Any, gold: GoldSet) -> None:
    """Issue 14.3: Haystack Documents without meta["file_path"] carry content hashes as ids;
    the run stops (exit 2) naming them and --doc-field instead of scoring zeros."""
    store = InMemoryDocumentStore()
    store.write_documents(
        [HaystackDocument(content=d.content) for d in haystack_store.filter_documents()]
    )
    with pytest.raises(ragmeter.ConfigError, match="content hashes or UUIDs") as caught:
        ragmeter.evaluate(gold, InMemoryBM25Retriever(store), k=K, level="doc", concurrency=1)
    assert caught.value.exit_code == 2
    assert "--doc-field" in str(caught.value)


def test_haystack_file_names_without_folders_are_named_not_scored_silently(
    haystack_store: Any, gold: GoldSet, corpus: Corpus
) -> None:
    """Haystack's converters keep only the file name in meta["file_path"] unless
    store_full_path=True (17 of the 81 bundled docs share a name). Such a run is never scored
    silently: a shared name stops it, naming the documents it stands for and the fix."""
    store = InMemoryDocumentStore()
    store.write_documents(
        [
            HaystackDocument(content=d.content, meta={"file_path": Path(d.meta["file_path"]).name})
            for d in haystack_store.filter_documents()
        ]
    )
    setup = RetrieverSetup(InMemoryBM25Retriever(store), documents=corpus.documents)
    try:
        report = ragmeter.evaluate(gold, setup, k=K, level="doc", concurrency=1)
    except ragmeter.ConfigError as error:
        said = str(error)
    else:
        said = " ".join(report.run.warnings)
    # Issue 24.2: a name one document has is mapped; one that several share stops the run.
    assert "(a file name without its folder): ragmeter does not guess" in said
    assert "store_full_path=True" in said
    assert "could be any of" in said


LC_APP = (
    SUNSET_FILTER
    + """
from pathlib import Path

from langchain_core.documents import Document

from ragmeter.examples import example_corpus_dir

from langchain_community.retrievers import BM25Retriever

retriever = BM25Retriever.from_documents(
    [
        Document(page_content=p.read_text(encoding="utf-8"), metadata={"source": str(p.resolve())})
        for p in sorted(example_corpus_dir().rglob("*.md"))
    ]
)
"""
)


@pytest.mark.slow
def test_cli_langchain_module_attr_with_and_without_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 14.1/14.2: `ragmeter eval --retriever lc_app.py:retriever` takes a LangChain
    BM25Retriever with no glue; with --corpus its absolute paths are mapped with no flag,
    and the metrics (document level and the default passage level) equal those with
    --doc-root instead of --corpus."""
    import json

    from click.testing import CliRunner

    from ragmeter.cli import main

    (tmp_path / "lc_app.py").write_text(LC_APP, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGMETER_STORE", f"sqlite:///{tmp_path / 'runs.db'}")
    runner = CliRunner()

    def scores(data: dict[str, Any]) -> dict[str, float]:
        return {n: v for n, v in data["metrics"].items() if not n.startswith("latency")}

    # Document level, and the default for this quote-anchored gold set (passage level).
    for level in (["--level", "doc"], []):
        base = ["eval", "--gold", str(example_gold_path()), "--retriever", "lc_app.py:retriever"]
        base += [*level, "--json"]
        with_corpus = runner.invoke(main, [*base, "--corpus", str(example_corpus_dir())])
        assert with_corpus.exit_code == 0, with_corpus.output
        rooted = runner.invoke(main, [*base, "--doc-root", str(example_corpus_dir())])
        assert rooted.exit_code == 0, rooted.output
        a, b = json.loads(with_corpus.stdout), json.loads(rooted.stdout)
        assert scores(a) == scores(b) and a["metrics"]["hit@10"] > 0.5, level
        assert any("corpus-relative" in n for n in a["notes"]) and a["warnings"] == []
