"""Issue 4: query rewriting: RM3 over BM25 (offline) and LLM expansion over real HTTP."""

from __future__ import annotations

import pytest

from _openai_server import serve_chat
from ragmeter.corpus import Corpus
from ragmeter.documents import Document
from ragmeter.errors import ConfigError
from ragmeter.judge.chat import LLMSettings
from ragmeter.pipelines.bm25 import BM25Retriever
from ragmeter.pipelines.chunkers import ChunkerConfig, chunk_corpus
from ragmeter.pipelines.pipeline import Pipeline, PipelineConfig
from ragmeter.pipelines.rewrite import RM3, LLMExpansion

DOCS = [
    Document("a.md", "Cats purr. Cats purr loudly. Feline."),
    Document("b.md", "The larynx of a feline vibrates; larynx muscles twitch rapidly."),
    Document("c.md", "Dogs bark at the mailman every morning."),
]


def bm25() -> BM25Retriever:
    return BM25Retriever(chunk_corpus(Corpus.from_documents(DOCS), ChunkerConfig(kind="none")))


def test_rm3_weights_by_hand_and_expansion_finds_more() -> None:
    """Issue 4: RM3 mixes P(w|q) and P(w|R); feedback terms reach a doc without the query word."""
    index = bm25()
    assert [h.doc for h in index.retrieve("cats purr", 10)] == ["a.md"]
    rm3 = RM3(index, fb_docs=1, fb_terms=3, original_weight=0.5)
    rewrite = rm3.rewrite("cats purr")
    assert rewrite.terms is not None
    # Feedback doc a.md analysed: cat purr cat purr loud felin (6 terms): P(cat|R) =
    # P(purr|R) = 2/6, then felin and loud at 1/6 (ties alphabetical: felin kept).
    top = {"purr": 2 / 6, "cat": 2 / 6, "felin": 1 / 6}
    norm = sum(top.values())
    assert rewrite.terms["purr"] == pytest.approx(0.5 * 0.5 + 0.5 * top["purr"] / norm)
    assert rewrite.terms["felin"] == pytest.approx(0.5 * top["felin"] / norm)
    assert "felin" in rewrite.text
    expanded = [h.doc for h in index.retrieve_weighted(rewrite.terms, 10)]
    assert expanded[:2] == ["a.md", "b.md"]


def test_rm3_in_a_pipeline_and_bad_settings() -> None:
    """Issue 4: rewrite: rm3 in a pipeline records a rewrite stage; bad values are errors."""
    corpus = Corpus.from_documents(DOCS)
    cfg = PipelineConfig.from_dict(
        {"chunker": {"kind": "none"}, "rewrite": {"method": "rm3", "fb_docs": 1, "fb_terms": 3}}
    )
    pipeline = Pipeline(cfg, corpus)
    assert [h.doc for h in pipeline.retrieve("cats purr", 2)] == ["a.md", "b.md"]
    assert pipeline.stage_latency_summary()["rewrite"]["n"] == 1
    with pytest.raises(ConfigError, match="fb_docs must be an integer >= 1"):
        PipelineConfig.from_dict({"rewrite": {"fb_docs": 0}})
    with pytest.raises(ConfigError, match="use retriever bm25 or hybrid"):
        PipelineConfig.from_dict({"retriever": "dense", "rewrite": {"method": "rm3"}})
    with pytest.raises(ConfigError, match="allowed: method, fb_docs"):
        PipelineConfig.from_dict({"rewrite": {"terms": 5}})


def test_llm_expansion_over_http() -> None:
    """Issue 4: LLM expansion appends the model's keywords; BM25 then finds the feline doc."""
    with serve_chat() as server:
        expander = LLMExpansion(LLMSettings(server.base_url, "judge", timeout=10))
        rewrite = expander.rewrite("why does my kitty hum")
        assert rewrite.text == "why does my kitty hum\nfeline, meow, purring"
        assert "kitty" in server.requests[0]["messages"][0]["content"]
        assert bm25().retrieve("why does my kitty hum", 5) == []
        assert bm25().retrieve(rewrite.text, 5)[0].doc in ("a.md", "b.md")
