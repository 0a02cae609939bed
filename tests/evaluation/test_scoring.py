"""Scoring: scorers picked by the metric's kind, and passage-level judgments.

Passage-level expected values are small enough to check by hand; the worked
example is the one in docs/levels.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest

import ragmeter
from ragmeter.documents import Chunk, Document, Hit
from ragmeter.evaluation import scoring
from ragmeter.evaluation.scoring import Judgments, score_results
from ragmeter.evaluation.setup import RetrieverSetup
from ragmeter.gold.goldset import GoldSet
from ragmeter.metrics import Family, _base, families, register
from ragmeter.pipelines.chunkers import ChunkerConfig, chunk_document
from ragmeter.run import QuestionResult
from ragmeter.store import Store

# -- 13.5: scorers by kind ----------------------------------------------------------


@pytest.fixture
def registry() -> Iterator[None]:
    """Restore the metric registry after a test registers a family of its own."""
    saved = dict(_base._FAMILIES), dict(_base._ALIASES)
    yield
    _base._FAMILIES.clear()
    _base._FAMILIES.update(saved[0])
    _base._ALIASES.clear()
    _base._ALIASES.update(saved[1])


def test_every_kind_has_a_scorer() -> None:
    """Issue 13.5: each metric kind, and so every registered family, has exactly one scorer."""
    kinds = set(get_args(_base.Kind))
    assert set(scoring._SCORERS) == kinds
    assert {family.kind for family in families().values()} <= kinds


def test_a_new_family_of_a_known_kind_needs_no_scoring_code(registry: None) -> None:
    """Issue 13.5: a latency family is scored from its percentile, not from its name."""
    register(
        Family(
            name="latency_p0_ms",
            kind="latency",
            cutoff="none",
            summary="Fastest retrieval.",
            formula="percentile(latencies_ms, 0)",
            citation="test",
            percentile=0.0,
        )
    )
    gold = GoldSet.from_records([{"id": f"q{i}", "question": "?"} for i in range(3)])
    results = [QuestionResult(f"q{i}", latency_ms=ms) for i, ms in enumerate([30.0, 10.0, 20.0])]
    scores = score_results(
        gold, results, level="doc", k=10, metrics=["latency_p0_ms", "latency_p50_ms"]
    )
    assert scores.means == {"latency_p0_ms": 10.0, "latency_p50_ms": 20.0}


def test_generation_and_judge_kinds_read_their_own_inputs() -> None:
    """Issue 13.5: answer_ok (generation) checks answers; faithful (judge) reads verdicts."""
    gold = GoldSet.from_records(
        [
            {"id": "a", "question": "?", "answer_contains": ["30 days"]},
            {"id": "b", "question": "?", "answer_contains": ["free"]},
            {"id": "c", "question": "?"},
        ]
    )
    results = [
        QuestionResult("a", answer="Within 30 days."),
        QuestionResult("b", answer="It costs 5 euros."),
        QuestionResult("c", answer="Sure."),
    ]
    scores = score_results(
        gold,
        results,
        level="doc",
        k=10,
        metrics=["faithful", "answer_ok"],
        faithful={"a": True, "c": False, "elsewhere": True},
    )
    assert scores.means == {"faithful": 0.5, "answer_ok": 0.5}
    assert scores.per_query == {
        "faithful": {"a": 1.0, "c": 0.0},
        "answer_ok": {"a": 1.0, "b": 0.0},
    }


# -- 14.4: passage level -------------------------------------------------------------

FILLER = "Unrelated words about something else entirely. "
QUOTE_1 = "Refunds are accepted within thirty days of delivery, with the receipt."
QUOTE_2 = "Shipping is free for orders above fifty euros in the European Union."
# q1 at 330, q2 at 925: one 2,000-character chunk holds both, 200-character chunks cut q1.
TEXT = FILLER * 7 + QUOTE_1 + " " + FILLER * 11 + QUOTE_2 + " " + FILLER * 30
OTHER = FILLER * 40
DOCS = {
    "policy.md": Document(id="policy.md", text=TEXT),
    "other.md": Document(id="other.md", text=OTHER),
}
GOLD = GoldSet.from_records(
    [
        {
            "id": "q",
            "question": "refunds and shipping?",
            "relevant": [
                {"doc": "policy.md", "quote": QUOTE_1, "grade": 2},
                {"doc": "policy.md", "quote": QUOTE_2},
            ],
        }
    ]
)
RANKING_METRICS = ["hit@1", "hit@5", "recall@1", "recall@5", "recall@10", "mrr", "ndcg@10", "map"]


def _chunks(size: int) -> list[Chunk]:
    config = ChunkerConfig(kind="fixed", size=size, overlap=0)
    return [c for doc in DOCS.values() for c in chunk_document(doc, config)]


def _found_by(chunks: list[Chunk], *, spans: bool = True) -> Any:
    """A retriever that ranks one miss, then every chunk covering a quote, then misses."""
    relevant = [
        c
        for c in chunks
        if c.doc_id == "policy.md" and any(_holds_half(c, q) for q in (QUOTE_1, QUOTE_2))
    ]
    misses = [c for c in chunks if c.doc_id == "other.md"]
    ranked = [misses[0], *relevant, *misses[1:]]

    def search(question: str, k: int) -> list[dict[str, Any]]:
        return [
            {"id": c.id, "doc": c.doc_id, "text": c.text}
            | ({"start": c.start, "end": c.end} if spans else {})
            for c in ranked[:k]
        ]

    return search


def _holds_half(chunk: Chunk, quote: str) -> bool:
    """The chunk's span shares at least half of the shorter of it and the quote (letters and
    digits counted, as the coverage rule counts; issue 24.3)."""

    def count(text: str) -> int:
        return sum(ch.isalnum() for ch in text)

    start = TEXT.index(quote)
    shared = count(TEXT[max(chunk.start, start) : min(chunk.end, start + len(quote))])
    return shared > 0 and shared >= min(count(chunk.text), count(quote)) / 2


def _metrics(report: Any) -> dict[str, float]:
    return {name: report.metrics[name] for name in RANKING_METRICS}


@pytest.mark.parametrize("size", [200, 800, 2000], ids=["200-chars", "800-chars", "2000-chars"])
def test_passage_metrics_do_not_depend_on_the_chunker(size: int, store: Store) -> None:
    """Issue 14.4: the same passages found by 200-, 800- and 2,000-character chunks score alike.

    The entry ranking is [miss, entry 0 (grade 2), entry 1 (grade 1), ...] for every
    chunker: hit@1 0, MRR 1/2, recall@1 0, recall@5 1, nDCG@10 (trec_eval's linear gains)
    = (2/log2 3 + 1/log2 4) / (2 + 1/log2 3), AP = (1/2 + 2/3) / 2.
    """
    chunks = _chunks(size)
    report = ragmeter.evaluate(
        GOLD,
        RetrieverSetup(_found_by(chunks), chunks=chunks, documents=DOCS),
        k=10,
        store=store,
        metrics=RANKING_METRICS,
    )
    assert report.run.level == "passage"
    ndcg = (2 / math.log2(3) + 1 / math.log2(4)) / (2 + 1 / math.log2(3))
    assert _metrics(report) == pytest.approx(
        {
            "hit@1": 0.0,
            "hit@5": 1.0,
            "recall@1": 0.0,
            "recall@5": 1.0,
            "recall@10": 1.0,
            "mrr": 0.5,
            "ndcg@10": ndcg,
            "map": (1 / 2 + 2 / 3) / 2,
        }
    )


def test_chunk_level_recall_moves_with_the_chunker_where_passage_level_does_not() -> None:
    """Issue 14.4: the caveat of --level chunk, shown: small chunks split the quotes."""
    recall = {}
    for size in (200, 2000):
        chunks = _chunks(size)
        for level in ("passage", "chunk"):
            report = ragmeter.evaluate(
                GOLD,
                RetrieverSetup(_found_by(chunks), chunks=chunks, documents=DOCS),
                k=10,
                store=Store.memory(),
                level=level,  # type: ignore[arg-type]
                metrics=["recall@2"],
            )
            recall[level, size] = report.metrics["recall@2"]
    # One 2,000-character chunk holds both quotes (1 of 1); at 200, 1 of 2+ relevant chunks.
    assert recall["chunk", 2000] == 1.0 and recall["chunk", 200] < 1.0
    assert recall["passage", 2000] == recall["passage", 200] == 0.5


def test_passage_metrics_are_the_same_with_and_without_the_corpus() -> None:
    """Issue 14.4: --corpus (chunk inventory + documents) changes nothing for text hits."""
    chunks = _chunks(800)
    found = _found_by(chunks, spans=False)  # an outside retriever: text, no spans
    bare = ragmeter.evaluate(GOLD, found, k=10, store=Store.memory())
    with_corpus = ragmeter.evaluate(
        GOLD, RetrieverSetup(found, chunks=chunks, documents=DOCS), k=10, store=Store.memory()
    )
    assert bare.run.level == with_corpus.run.level == "passage"
    names = [m for m in bare.metrics if not m.startswith("latency")]
    assert {m: bare.metrics[m] for m in names} == {m: with_corpus.metrics[m] for m in names}
    assert bare.metrics["recall@5"] == 1.0
    assert bare.warnings == [] and with_corpus.warnings == []


def test_precision_counts_retrieved_chunks_that_cover_an_entry() -> None:
    """Issue 14.4: precision@5 is a property of the list: 2 of the top 5 chunks cover a quote."""
    hits = (
        Hit("x#0", "other.md"),
        Hit("p#0", "policy.md", text=QUOTE_1),
        Hit("p#1", "policy.md", text=QUOTE_1 + " again"),  # covers entry 0 again
        Hit("x#1", "other.md"),
        Hit("x#2", "other.md"),
    )
    scores = score_results(
        GOLD,
        [QuestionResult("q", hits)],
        level="passage",
        k=5,
        metrics=["precision@5", "recall@5", "mrr"],
    )
    assert scores.means == {"precision@5": 2 / 5, "recall@5": 0.5, "mrr": 0.5}


WORKED_FAQ = (
    "Orders ship in two days. Refunds are accepted within 30 days of delivery, with the "
    "receipt. Exchanges are free."
)
WORKED_CUT = WORKED_FAQ.index(" days of delivery")  # the chunker cut after "within 30"


@pytest.mark.parametrize("with_spans", [False, True], ids=["text-only", "spans+corpus"])
def test_worked_example_of_the_docs(with_spans: bool) -> None:
    """Issue 14.4 / 24.3: docs/levels.md's split-quote example, entry by entry (trec_eval over
    entries), the same from the hits' text alone and from their spans read in the corpus."""
    gold = GoldSet.from_records(
        [
            {
                "id": "refund",
                "question": "How long do I have to request a refund?",
                "relevant": [
                    {
                        "doc": "faq.md",
                        "quote": "Refunds are accepted within 30 days of delivery",
                        "grade": 2,
                    },
                    {"doc": "policies/refunds.md"},
                ],
            }
        ]
    )
    docs = {
        "faq.md": Document("faq.md", WORKED_FAQ),
        "shipping.md": Document("shipping.md", "Orders ship in two days."),
        "policies/refunds.md": Document("policies/refunds.md", "Refund policy."),
    }
    spans = [
        ("faq.md#1", "faq.md", WORKED_CUT + 1, len(WORKED_FAQ)),
        ("faq.md#0", "faq.md", 0, WORKED_CUT),
        ("shipping.md#0", "shipping.md", 0, 24),
        ("policies/refunds.md#0", "policies/refunds.md", 0, 14),
    ]
    hits = tuple(
        Hit(ident, doc, start=a, end=b) if with_spans else Hit(ident, doc, text=docs[doc].text[a:b])
        for ident, doc, a, b in spans
    )
    assert [WORKED_FAQ[a:b] for _, _, a, b in spans[:2]] == [  # the texts of the docs' table
        "days of delivery, with the receipt. Exchanges are free.",
        "Orders ship in two days. Refunds are accepted within 30",
    ]
    judgments = Judgments.build(gold, "passage", documents=docs if with_spans else None)
    result = QuestionResult("refund", hits, extra=judgments.annotate(gold["refund"], hits))
    assert result.extra["covers"] == [[], [0], [], [1]]
    scores = score_results(
        gold,
        [result],
        level="passage",
        k=10,
        metrics=[
            "hit@1",
            "recall@2",
            "recall@3",
            "recall@4",
            "precision@3",
            "mrr",
            "ndcg@10",
            "map",
        ],
    )
    # Ranking: hit:faq.md#1 (14 of the quote's 40 folded characters: under 20), entry:0
    # (26 of 40), hit:shipping.md#0, entry:1. Gains are the grades; ideal DCG 2 + 1/log2(3).
    dcg = 2 / math.log2(3) + 1 / math.log2(5)
    assert scores.means == pytest.approx(
        {
            "hit@1": 0.0,
            "recall@2": 0.5,
            "recall@3": 0.5,
            "recall@4": 1.0,
            "precision@3": 1 / 3,
            "mrr": 0.5,
            "ndcg@10": dcg / (2 + 1 / math.log2(3)),
            "map": (1 / 2 + 2 / 4) / 2,
        }
    )


def test_hits_with_only_doc_ids_fall_back_to_doc_level_with_a_warning() -> None:
    """Issue 14.4: quote gold + hits without text or spans: doc level and a stored warning."""

    def ids_only(question: str, k: int) -> list[dict[str, Any]]:
        return [{"doc": "other.md"}, {"doc": "policy.md"}]

    store = Store.memory()
    report = ragmeter.evaluate(GOLD, ids_only, k=10, store=store)
    assert report.run.level == "doc"
    assert store.get_run(report.run.id).level == "doc"
    assert len(report.warnings) == 1 and "scored at doc level" in report.warnings[0]
    assert store.get_run(report.run.id).config["warnings"] == report.warnings
    assert report.metrics["hit@10"] == 1.0 and report.metrics["mrr"] == 0.5
    doc_level = ragmeter.evaluate(GOLD, ids_only, k=10, store=Store.memory(), level="doc")
    names = [m for m in doc_level.metrics if not m.startswith("latency")]
    assert {m: report.metrics[m] for m in names} == {m: doc_level.metrics[m] for m in names}
    assert report.rows[0].first_relevant_rank == 2


def test_some_hits_without_text_are_judged_by_document_with_a_warning(store: Store) -> None:
    """Issue 14.4: a mixed run stays at passage level; text-less hits are judged by document."""

    def mixed(question: str, k: int) -> list[dict[str, Any]]:
        return [
            {"doc": "policy.md", "id": "p#9"},
            {"doc": "policy.md", "id": "p#1", "text": QUOTE_2},
        ]

    report = ragmeter.evaluate(GOLD, mixed, k=10, store=store, metrics=["recall@1", "recall@2"])
    assert report.run.level == "passage"
    assert report.warnings == [
        "1 retrieved hit(s) carried neither text nor character spans: quote entries "
        "were judged by their document for them"
    ]
    # p#9 covers both entries by document (positions 1 and 2, as two chunks would);
    # p#1 covers entry 1 again and is dropped.
    assert (report.metrics["recall@1"], report.metrics["recall@2"]) == (0.5, 1.0)


OUTSIDE_RETRIEVER = '''
"""An outside retriever: its own 600-character chunks, hits with text and no spans."""
from ragmeter.examples import example_corpus_dir
from ragmeter.pipelines.builtin import build_retriever
from ragmeter.pipelines.chunkers import ChunkerConfig

_built = build_retriever(
    "bm25", corpus=example_corpus_dir(), chunker=ChunkerConfig("fixed", size=600)
)


def search(question, k):
    hits = _built.retriever.retrieve(question, k)
    return [{"id": f"uuid-{i}", "doc": h.doc, "text": h.text} for i, h in enumerate(hits)]
'''


@pytest.mark.slow
def test_eval_cli_gives_the_same_metrics_with_and_without_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 14.4: `ragmeter eval --retriever mod:search` on the demo, with and without --corpus."""
    from click.testing import CliRunner

    from ragmeter.cli import main
    from ragmeter.examples import example_corpus_dir, example_gold_path

    (tmp_path / "outside_search.py").write_text(OUTSIDE_RETRIEVER)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    base = ["eval", "--gold", str(example_gold_path()), "--retriever", "outside_search:search"]
    out = {}
    for label, extra in (("bare", []), ("corpus", ["--corpus", str(example_corpus_dir())])):
        result = CliRunner().invoke(main, [*base, *extra, "--json"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert data["run"]["level"] == "passage"
        out[label] = {m: v for m, v in data["metrics"].items() if not m.startswith("latency")}
    assert out["bare"] == out["corpus"]
    assert out["bare"]["hit@10"] > 0.5


def test_labels_beyond_the_gold_set_join_as_chunks_at_passage_level() -> None:
    """Issue 14.4: a judge label on a chunk is one more relevant item; gold doc keys are not."""
    hits = (Hit("x#1", "other.md"), Hit("p#0", "policy.md", text=QUOTE_1))
    scores = score_results(
        GOLD,
        [QuestionResult("q", hits)],
        level="passage",
        k=5,
        metrics=["recall@5", "mrr", "precision@2"],
        qrels={"q": {"x#1": 2, "policy.md": 1}},
    )
    # Relevant: entry 0 (covered at 2), entry 1 (missed), x#1 (judged, at 1): 2 of 3.
    assert scores.means == {"recall@5": 2 / 3, "mrr": 1.0, "precision@2": 1.0}


def test_docstring_examples() -> None:
    """Issue 14.4: the examples in the scoring modules' docstrings hold."""
    import doctest

    from ragmeter.evaluation import passages, versions

    for module in (passages, scoring, versions):
        failures, tried = doctest.testmod(module)
        assert failures == 0 and tried > 0, module.__name__
