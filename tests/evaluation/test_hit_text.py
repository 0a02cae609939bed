"""Issue 15.1: every stored hit keeps its text with the run, bounded per chunk, and the
dashboard, ``show --json`` and ``export`` show it with the gold quotes marked."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from ragmeter.documents import Hit
from ragmeter.evaluation.evaluate import evaluate
from ragmeter.evaluation.export import export_stored_run
from ragmeter.evaluation.hit_text import CUT_MARK, HIT_TEXT_MAX_CHARS, highlighted
from ragmeter.evaluation.report import build_report
from ragmeter.gold.goldset import GoldSet
from ragmeter.gold.quotes import covers_quote, quote_segments, quote_spans
from ragmeter.run import QuestionResult
from ragmeter.store import Store

QUOTE = "within 30 days of delivery"
LONG = "x" * (HIT_TEXT_MAX_CHARS + 100)
#: A chunk with markup in it: the page must show it as text.
EVIL = f"<script>alert(1)</script> Refunds are accepted {QUOTE.upper()} & later."


def _gold() -> GoldSet:
    return GoldSet.from_records(
        [
            {
                "id": "q1",
                "question": "refund window?",
                "relevant": [{"doc": "refunds.md", "quote": QUOTE, "grade": 2}],
            }
        ],
        name="texts",
    )


def _search(question: str, k: int) -> list[dict[str, Any]]:
    hits = [{"id": f"noise.md#{n}", "doc": "noise.md", "text": f"noise {n}"} for n in range(4)]
    hits.append({"id": "refunds.md#0", "doc": "refunds.md", "text": EVIL})
    hits.append({"id": "long.md#0", "doc": "long.md", "text": LONG})
    return hits[:k]


@pytest.fixture
def store(store: Store) -> Store:
    """The shared in-memory store holding one run, "texts"."""
    evaluate(_gold(), _search, store=store, name="texts", k=10, commit="")
    return store


def test_every_stored_hit_keeps_its_text_bounded(store: Store) -> None:
    """Issue 15.1: ranks past 3 keep their text (only 3 snippets were kept), a long text is
    cut at HIT_TEXT_MAX_CHARS with a visible mark, and the stored hits carry no text, so a
    re-score never matches quotes against a cut text."""
    report = build_report(store, "texts")
    retrieved = report.rows[0].retrieved
    assert [h["text"] for h in retrieved[:5]] == [*(f"noise {n}" for n in range(4)), EVIL]
    assert retrieved[5]["text"] == "x" * HIT_TEXT_MAX_CHARS + CUT_MARK
    assert [h["text_cut"] for h in retrieved] == [False] * 5 + [True]
    assert {h["text_source"] for h in retrieved} == {"run"}
    assert all(hit.text is None for result in store.results("texts") for hit in result.hits)
    assert report.rows[0].gold == [{"doc": "refunds.md", "quote": QUOTE, "chunk": None, "grade": 2}]


def test_runs_stored_before_keep_their_snippets_or_say_none(store: Store) -> None:
    """Issue 15.1: an older run's first-words snippets still show, marked as snippets; a run
    with no text at all says so instead of an empty string passing for a text."""
    run = store.get_run("texts")
    hits = (Hit("refunds.md#0", "refunds.md"), Hit("noise.md#0", "noise.md"))
    old = QuestionResult("q1", hits, 1.0, extra={"grades": [2, 0], "snippets": ["Refunds are …"]})
    store.add_results(run.id, [old])
    rows = build_report(store, run.id).rows[0].retrieved
    assert [(h["text"], h["text_source"]) for h in rows] == [
        ("Refunds are …", "snippet"),
        ("", "none"),
    ]


def test_question_api_marks_gold_quotes_inside_the_chunk_text(store: Store) -> None:
    """Issue 15.1: /api/runs/N/questions/QID has each chunk's full text with rank, score,
    relevance mark and source, the gold quote marked where it overlaps (case-folded), and
    the per-question metrics; the chunk's markup stays plain text in the pieces."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from ragmeter.web.app import create_app

    with TestClient(create_app("unused", store=store), base_url="http://127.0.0.1") as client:
        one = client.get("/api/runs/texts/questions/q1").json()
    hit = one["retrieved"][4]
    assert (hit["rank"], hit["mark"], hit["grade"], hit["text"]) == (5, "gold", 2, EVIL)
    assert [s for s in hit["segments"] if s["quote"]] == [{"text": QUOTE.upper(), "quote": True}]
    assert "".join(s["text"] for s in hit["segments"]) == EVIL
    assert one["retrieved"][0]["mark"] == "none" and one["retrieved"][0]["segments"] == [
        {"text": "noise 0", "quote": False}
    ]
    assert one["metrics"]["mrr"] == pytest.approx(1 / 5)
    assert one["gold"][0]["quote"] == QUOTE


def test_export_carries_the_stored_text_and_says_when_it_was_cut(
    store: Store, tmp_path: Path
) -> None:
    """Issue 15.1: ``ragmeter export`` writes every chunk's stored text (it had the first
    words of 3) and warns that a text was cut rather than passing it off as whole."""
    result, _ = export_stored_run(store, "texts", "jsonl", tmp_path / "run.jsonl")
    row = json.loads((tmp_path / "run.jsonl").read_text(encoding="utf-8"))
    assert [h["text"] for h in row["ranking"]][4] == EVIL
    assert row["ranking"][5]["text_cut"] is True
    assert any("cut at 4000 characters" in w for w in result.warnings)


@pytest.mark.parametrize(
    ("text", "quote", "expected"),
    [
        ("a quote inside", "QUOTE", [(2, 7)]),
        # quote 34 folded, chunk 34: its tail "thirtydaysofdelivery" (20) >= max(17, 16)
        (
            "thirty days of delivery. Keep the receipt",
            "accepted within thirty days of delivery",
            [(0, 23)],
        ),
        # quote 34, chunk 39: its head "refundsareacceptedwithinthirty" (30) >= 17
        (
            "Our policy: refunds are accepted within thirty",
            "refunds are accepted within thirty days",
            [(12, 46)],
        ),
        # the chunk (24 folded) inside the quote (39): 24 >= max(12, 16)
        ("lies wholly inside the quote", "the chunk lies wholly inside the quote, more", [(0, 28)]),
        # the head "refundsare" (10) is under the 16-character floor: not a cover, not marked
        ("a heading: Refunds are", "refunds are accepted within thirty days", []),
        ("Use `uv cache clean` now", "uv cache clean", [(5, 19)]),  # Markdown stripped
        (unicodedata.normalize("NFD", "Le café ouvert"), "café", [(3, 8)]),  # NFD text
    ],
    ids=[
        "whole",
        "runs-over-start",
        "runs-over-end",
        "chunk-inside-quote",
        "short-edge",
        "markdown-stripped-quote",
        "nfd-text",
    ],
)
def test_quote_spans_mark_what_the_coverage_rule_counts(
    text: str, quote: str, expected: list[tuple[int, int]]
) -> None:
    """Issue 15.1 / 24.3: a quote is marked where it is whole in the chunk, over a chunk lying
    inside it, and where it runs over the chunk's start or end, folded and counted as the
    coverage rule counts (before: its own folding and a 24-character rule), so a Markdown
    stripped quote and an NFD chunk are marked, and a short edge is not."""
    assert quote_spans(text, [quote]) == expected
    covered = covers_quote(text, quote)
    assert covered == bool(expected)


def test_highlighting_ignores_other_documents_and_zero_grades() -> None:
    """Issue 15.1: a quote marks only chunks of its own document, and a grade-0 entry (judged
    not relevant) marks nothing."""
    question = {
        "gold": [{"doc": "a.md", "quote": "refund"}, {"doc": "b.md", "quote": "x", "grade": 0}],
        "retrieved": [{"doc": "b.md", "text": "refund x"}, {"doc": "a.md", "text": "refund"}],
    }
    out = highlighted(question)["retrieved"]
    assert out[0]["segments"] == quote_segments("refund x", [])
    assert out[1]["segments"] == [{"text": "refund", "quote": True}]
