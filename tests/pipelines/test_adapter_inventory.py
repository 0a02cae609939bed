"""Adapters are not chunked for nothing (issue 24).

``build_retriever`` used to cut the whole corpus with ``--chunker`` for every adapter run
(``module:function``, HTTP, run files), although only chunk-level recall reads those chunks:
wasted work at doc and passage level. The chunking is counted through ``build_retriever``'s
``chunk`` injection point.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmeter.corpus import Corpus, load_corpus
from ragmeter.documents import Chunk
from ragmeter.evaluation.job import EvalJob
from ragmeter.evaluation.jobs import run_job
from ragmeter.examples import example_corpus_dir, example_gold_path
from ragmeter.pipelines.builtin import build_retriever
from ragmeter.pipelines.chunkers import ChunkerConfig, chunk_corpus
from ragmeter.store import Store


class CountingChunker:
    """``chunk_corpus``, counting its calls and the chunks it made."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, corpus: Corpus, config: ChunkerConfig) -> list[Chunk]:
        self.calls += 1
        return chunk_corpus(corpus, config)


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return load_corpus(example_corpus_dir())


@pytest.mark.parametrize(("inventory", "calls"), [(False, 0), (True, 1)],
                         ids=["doc-or-passage", "chunk-level"])  # fmt: skip
def test_an_adapter_is_chunked_only_for_the_chunk_inventory(
    tmp_path: Path, corpus: Corpus, inventory: bool, calls: int
) -> None:
    """Issue 24: a run file over the corpus is cut once at chunk level, never otherwise."""
    runfile = tmp_path / "run.trec"
    runfile.write_text("q Q0 getting-started/installation.md 1 1.0 t\n")
    counting = CountingChunker()
    built = build_retriever(f"run:{runfile}", corpus=corpus, inventory=inventory,
                            chunk=counting)  # fmt: skip
    assert counting.calls == calls
    assert (built.chunks is not None) == inventory
    assert ("chunker" in built.config) == inventory  # recorded only when it shaped the run
    if inventory:
        assert built.chunks == chunk_corpus(corpus, ChunkerConfig())


def test_run_job_asks_for_the_inventory_only_at_chunk_level(tmp_path: Path) -> None:
    """Issue 24: the same adapter run at the default level (passage, scored at doc level as
    a run file has no text) and at chunk level; only the chunk-level run keeps a chunker."""
    runfile = tmp_path / "run.trec"
    runfile.write_text("install-standalone Q0 getting-started/installation.md 1 1.0 t\n")
    store = Store.memory()
    gold, docs = str(example_gold_path()), str(example_corpus_dir())
    passage = run_job(EvalJob(gold, f"run:{runfile}", docs, k=3), store=store)
    chunk = run_job(EvalJob(gold, f"run:{runfile}", docs, k=3, level="chunk"), store=store)
    assert passage.run.level == "doc" and "chunker" not in passage.run.config
    assert chunk.run.level == "chunk" and chunk.run.config["chunker"]["kind"] == "markdown"
