"""Stores and files for the dashboard tests (issue 8), built through the library.

``build_small`` evaluates a deterministic in-process retriever over a small gold
set (fast, doc level, answers included, one question full of HTML);
``build_demo`` evaluates the bundled example with the real BM25 pipeline at two
chunk sizes. ``write_candidates`` writes a synthetic-candidates file to review.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from pathlib import Path
from typing import Any

from ragmeter.evaluation.evaluate import evaluate
from ragmeter.gold.goldset import GoldItem, GoldSet
from ragmeter.store import Store

#: A gold question and an answer a careless page would execute.
EVIL_QUESTION = '<script>window.__pwned = 1</script><b>bold</b> & "quoted" </script>'
EVIL_ANSWER = '<img src=x onerror="window.__pwned = 2"><i>not italic</i>'
TAGS = ("billing", "typo", "lang:es")
N_SMALL = 12


def small_gold() -> GoldSet:
    records: list[dict[str, Any]] = []
    for n in range(N_SMALL):
        item = f"q{n:02d}"
        question = EVIL_QUESTION if n == 0 else f"where is the answer to {item}?"
        records.append(
            {
                "id": item,
                "question": question,
                "relevant": [{"doc": f"{item}.md"}],
                "tags": [TAGS[n % 3]],
                "answer_contains": [f"fact {item}"],
            }
        )
    return GoldSet.from_records(records, name="small")


def _retriever(gold: GoldSet, found: Collection[str]) -> Any:
    by_question = {item.question: item.id for item in gold}

    def search(question: str, k: int) -> dict[str, Any]:
        item = by_question[question]
        noise = [{"doc": f"noise-{n}.md", "score": 1.0 / (n + 1)} for n in range(k)]
        if item in found:
            rank = int(item[1:]) % 3  # 0-2 noise hits before the answer
            hits = [*noise[:rank], {"doc": f"{item}.md", "score": 2.0}, *noise[rank:]][:k]
            answer = f"the fact {item} is here"
        else:
            hits, answer = noise, EVIL_ANSWER
        return {"hits": hits, "answer": answer}

    return search


#: Questions found by the two small runs: "better" finds more, but loses q03 (billing).
FOUND_BASE = {"q00", "q01", "q02", "q03", "q06", "q09"}
FOUND_BETTER = {"q00", "q01", "q02", "q04", "q05", "q06", "q07", "q08", "q09", "q10"}


def build_small(store: Store) -> Store:
    gold = small_gold()
    for name, note, found in (
        ("base", "baseline", FOUND_BASE),
        ("better", "+ query rewriting", FOUND_BETTER),
    ):
        evaluate(gold, _retriever(gold, found), store=store, name=name, note=note, commit="abc1234")
    return store


def build_demo(store: Store) -> Store:
    from ragmeter.evaluation.job import EvalJob
    from ragmeter.evaluation.jobs import run_job
    from ragmeter.examples import example_corpus_dir, example_gold_path
    from ragmeter.pipelines.chunkers import ChunkerConfig

    for name, note, size in (
        ("bm25", "BM25, 1000-char chunks", 1000),
        ("bm25-400", "400-char chunks", 400),
    ):
        job = EvalJob(
            gold=str(example_gold_path()),
            corpus=str(example_corpus_dir()),
            chunker=ChunkerConfig(size=size),
            name=name,
            note=note,
        )
        run_job(job, store=store)
    return store


def write_candidates(path: Path) -> Path:
    from ragmeter.gold.review import save_items

    items = [
        GoldItem(
            id=f"syn-{n}",
            question=question,
            relevant=[{"doc": "concepts/cache.md"}],
            tags=("synthetic",),
            source="synthetic",
            status="candidate",
        )
        for n, question in enumerate(
            [
                "How do I clear uv's cache?",
                "What is <b>uv</b> cache prune for?",
                "Where does uv keep its cache",
            ]
        )
    ]
    save_items(path, items)
    return path


#: Found questions whose generated answer is wrong although the right chunk came back.
WRONG_ANSWERS = {"q02", "q06"}


def build_generated(store: Store) -> Store:
    """A run with a generator (issue 15.1), judged by the offline lexical judge.

    Retrieval finds ``FOUND_BETTER``; the generator answers from the chunks, except for
    ``WRONG_ANSWERS`` (a number that is in no chunk): blame is ``generation`` there,
    ``retrieval`` for the misses and ``ok`` for the rest.
    """
    from ragmeter.evaluation.judging import judge_run_faithfulness

    gold = small_gold()
    by_question = {item.question: item.id for item in gold}

    def search(question: str, k: int) -> list[dict[str, Any]]:
        item = by_question[question]
        noise = [
            {"doc": f"noise-{n}.md", "score": 1.0 / (n + 1), "text": "nothing useful here"}
            for n in range(k)
        ]
        if item not in FOUND_BETTER:
            return noise
        rank = int(item[1:]) % 3
        found = {"doc": f"{item}.md", "score": 2.0, "text": f"the fact {item} is here"}
        return [*noise[:rank], found, *noise[rank:]][:k]

    def generate(question: str, chunks: list[Any]) -> str:
        item = by_question[question]
        if item in WRONG_ANSWERS:
            return "the answer is 42 days"
        if item in FOUND_BETTER:
            return f"the fact {item} is here"
        return "I could not find it"

    evaluate(gold, search, store=store, name="generated", note="+ generator",
             commit="abc1234", generator=generate)  # fmt: skip
    judge_run_faithfulness(store, "generated", client=None)
    return store


def build_levels(store: Store) -> Store:
    """Issue 15.2: ``build_small``'s two doc-level runs, then the same retrieval scored at
    chunk level ("chunked") and a doc-level run on a smaller gold set ("fewer")."""
    from ragmeter.documents import Chunk
    from ragmeter.evaluation.setup import RetrieverSetup

    build_small(store)
    gold = small_gold()
    # Chunk level needs the corpus's chunks (issue 24.4): one chunk per gold document.
    inventory = [Chunk(f"{i.id}.md", f"{i.id}.md", f"the fact {i.id} is here", 0, 21) for i in gold]
    setup = RetrieverSetup(_retriever(gold, FOUND_BETTER), chunks=inventory)
    evaluate(gold, setup, store=store, name="chunked",
             note="chunk level", commit="abc1234", level="chunk")  # fmt: skip
    fewer = GoldSet.from_records(gold.to_records()[:8], name="fewer")
    evaluate(fewer, _retriever(fewer, FOUND_BETTER), store=store, name="fewer",
             note="8 questions", commit="abc1234")  # fmt: skip
    return store


def get_text(app: Any, path: str) -> str:
    """GET ``path`` from the ASGI ``app`` on the loopback Host; the body of a 200 answer."""
    import httpx

    async def go() -> str:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            response = await client.get(path)
            assert response.status_code == 200, (path, response.text[:300])
            return response.text

    return asyncio.run(go())
