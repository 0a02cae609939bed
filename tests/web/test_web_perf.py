"""Issue 15.5: the dashboard's big-run pages within budget, without changing what they show.

The run view keeps no chunk text (a 2,000-question run with 1 KB chunks holds 20 MB of it);
the texts are read from the store for what is shown: one expanded question, one page of
the side-by-side view, or every question with ``/api/runs/N?texts=1``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the dashboard needs the [web] extra")

from fastapi.testclient import TestClient  # noqa: E402

from ragmeter.evaluation.evaluate import evaluate  # noqa: E402
from ragmeter.evaluation.report import build_report  # noqa: E402
from ragmeter.gold.goldset import GoldSet  # noqa: E402
from ragmeter.store import Store  # noqa: E402
from ragmeter.web.app import create_app  # noqa: E402
from ragmeter.web.views import run_view, with_texts  # noqa: E402

LOCAL = "http://127.0.0.1"
N_QUESTIONS = 12


def _gold() -> GoldSet:
    return GoldSet.from_records(
        [
            {
                "id": f"q{n:02d}",
                "question": f"question {n}?",
                "relevant": [{"doc": f"doc{n}.md", "quote": f"fact {n}"}],
                "tags": ["even" if n % 2 == 0 else "odd"],
            }
            for n in range(N_QUESTIONS)
        ],
        name="perf",
    )


def _search(shift: int) -> Any:
    def search(question: str, k: int) -> list[dict[str, Any]]:
        n = int(question.split()[1].rstrip("?"))
        docs = [f"doc{(n + shift + j) % N_QUESTIONS}.md" for j in range(k)]
        return [
            {"doc": d, "score": 1.0 / (j + 1),
             "text": f"{d} rank {j + 1}: the fact {n} is in {d} {'x' * 200}"}
            for j, d in enumerate(docs)
        ]  # fmt: skip

    return search


@pytest.fixture
def store(store: Store) -> Store:
    """The shared in-memory store holding runs "a" and "b"."""
    run = evaluate(_gold(), _search(0), store=store, name="a", k=5, commit="").run
    evaluate(_gold(), _search(2), store=store, name="b", k=5, commit="")
    # An undefined value (NaN) must reach the page as null, never as NaN (invalid JSON).
    per_query = store.question_metrics(run.id)
    per_query["mrr"]["q00"] = math.nan
    store.set_metrics(run.id, {**run.metrics, "ndcg@5": math.nan}, per_query)
    return store


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app("unused", store=store), base_url=LOCAL) as test_client:
        yield test_client


def _texts(retrieved: list[dict[str, Any]]) -> list[str]:
    return [hit["text"] for hit in retrieved]


def _non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_non_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_non_finite(v) for v in value)
    return False


def test_run_api_carries_chunk_texts_only_when_asked(client: TestClient, store: Store) -> None:
    """Issue 15.5: /api/runs/N carried every chunk's full text (24.5 MB for a 2,000-question
    run with 1 KB chunks) although the page fetches one question at a time; now the chunks
    come without text unless ``texts=1``, which gives the report's texts exactly."""
    plain = client.get("/api/runs/a")
    full = client.get("/api/runs/a", params={"texts": "1"})
    assert plain.status_code == full.status_code == 200
    report = build_report(store, "a")
    for question, row in zip(full.json()["questions"], report.rows, strict=True):
        assert question["id"] == row.id
        assert _texts(question["retrieved"]) == _texts(row.retrieved)
        assert all(len(text) > 200 for text in _texts(question["retrieved"]))
    for question, with_text in zip(
        plain.json()["questions"], full.json()["questions"], strict=True
    ):
        assert all("text" not in hit for hit in question["retrieved"])
        assert [{k: v for k, v in h.items() if k != "text"} for h in with_text["retrieved"]] == (
            question["retrieved"]
        )
        # What a chunk's text is (stored with the run, cut or not) stays in the plain view.
        assert {hit["text_source"] for hit in question["retrieved"]} == {"run"}
    text_chars = sum(len(t) for q in full.json()["questions"] for t in _texts(q["retrieved"]))
    assert len(full.content) - len(plain.content) >= text_chars
    # A filter and texts=1 together: the filter's questions, with their texts.
    odd = client.get("/api/runs/a", params={"texts": "1", "tag": "odd"}).json()["questions"]
    assert [q["id"] for q in odd] == [f"q{n:02d}" for n in range(1, N_QUESTIONS, 2)]
    assert all(_texts(q["retrieved"]) for q in odd)


def test_misses_keep_their_texts_with_texts_1(client: TestClient, store: Store) -> None:
    """Issue 15.5: the misses list follows the same rule as the questions: no text by
    default, the report's top-3 texts with texts=1."""
    plain = client.get("/api/runs/b").json()["misses"]
    full = client.get("/api/runs/b", params={"texts": "1"}).json()["misses"]
    expected = build_report(store, "b").to_dict()["misses"]
    assert plain and [m["id"] for m in plain] == [m["id"] for m in expected]
    assert all("text" not in hit for m in plain for hit in m["retrieved"])
    assert [_texts(m["retrieved"]) for m in full] == [_texts(m["retrieved"]) for m in expected]


def test_run_view_is_clean_without_walking_it(store: Store) -> None:
    """Issue 15.5: the view's questions are built clean field by field (the walk over every
    value cost a quarter of the run page); an undefined score is still None, nowhere NaN."""
    view = run_view(store, "a")
    assert not _non_finite(view)
    assert view["questions"][0]["metrics"]["mrr"] is None and view["metrics"]["ndcg@5"] is None
    assert view["questions"][1]["metrics"]["mrr"] == 1.0
    with_text = with_texts(store, view["run"]["id"], view["questions"][:1])[0]
    assert not _non_finite(with_text) and with_text["metrics"]["mrr"] is None
    response = TestClient(create_app("unused", store=store), base_url=LOCAL).get("/api/runs/a")
    assert "NaN" not in response.text


def test_compare_page_reads_texts_for_its_page_only(client: TestClient, store: Store) -> None:
    """Issue 15.5: /compare builds both runs' chunks (with their texts) for the questions on
    its page, not for every question; what the page shows is unchanged: each side's chunks
    and texts are that run's own, and the export still has every question's texts."""
    data = client.get("/api/compare", params={"a": "a", "b": "b"}).json()
    rows = {row.id: row for row in build_report(store, "a").rows}
    rows_b = {row.id: row for row in build_report(store, "b").rows}
    assert data["n_questions"] == N_QUESTIONS and data["questions"]
    for shown in data["questions"]:
        assert _texts(shown["a"]) == _texts(rows[shown["id"]].retrieved)
        assert _texts(shown["b"]) == _texts(rows_b[shown["id"]].retrieved)
    one = client.get("/api/compare", params={"a": "a", "b": "b", "page": "2"}).json()
    assert one["page"] == 1  # 12 questions fit one page: the page number is clamped
    exported = client.get("/api/compare/questions.json", params={"a": "a", "b": "b"}).json()
    assert len(exported["questions"]) == N_QUESTIONS
    assert all(_texts(q["a"]) and _texts(q["b"]) for q in exported["questions"])


def test_store_reads_the_extras_of_some_questions(store: Store) -> None:
    """Issue 15.5: ``result_extras`` reads only the rows asked for (one expanded question, one
    page), each the ``extra`` that ``results`` reads; an id the run lacks is left out."""
    run_id = store.get_run("a").id
    every = {r.item_id: r for r in store.results(run_id)}
    some = store.result_extras(run_id, ["q03", "q07", "nope"])
    assert sorted(some) == ["q03", "q07"]
    assert some["q03"] == every["q03"].extra and some["q07"] == every["q07"].extra
    assert some["q03"]["texts"][0].startswith("doc3.md rank 1")
    assert store.result_extras(run_id, []) == {}


def test_page_rows_are_the_question_rows_of_the_whole_view(store: Store) -> None:
    """Issue 15.5: the run page's table rows now come straight from the report's rows, without
    building every whole question first; they are exactly the rows built from the view."""
    from ragmeter.web.cache import RunData
    from ragmeter.web.views import question_rows

    data = RunData(store, "b")
    whole = question_rows(run_view(store, "b"))
    # Issue 29.1: the run is read briefly, so a miss's "got" names the documents of its top
    # 3 hits (what `show` and the misses list print), not of every hit.
    full = {q["id"]: q for q in run_view(store, "b")["questions"]}
    for row in whole:
        if row["got"]:
            row["got"] = list(dict.fromkeys(h["doc"] for h in full[row["id"]]["retrieved"][:3]))
    assert any(len(full[r["id"]]["retrieved"]) > 3 for r in whole if r["got"])
    assert data.rows == whole
    assert data.view() == run_view(store, "b")
    assert data.question("nope") is None


def test_docstring_examples_hold() -> None:
    """Issue 15.5: the examples in the changed modules' docstrings run and hold."""
    import doctest

    import ragmeter.web.cache
    import ragmeter.web.views

    for module in (ragmeter.web.views, ragmeter.web.cache):
        failures, tried = doctest.testmod(module)
        assert failures == 0 and tried > 0, module.__name__


def test_the_dashboard_freezes_its_startup_heap_while_it_runs(store: Store) -> None:
    """Issue 15.5: the garbage collector's full passes walked every object alive since startup,
    a third of a big run page's cold time; while the app runs they are frozen out of those
    passes, and given back when it stops."""
    import gc

    with TestClient(create_app("unused", store=store), base_url=LOCAL) as client:
        assert gc.get_freeze_count() > 0
        assert client.get("/runs/a").status_code == 200
    assert gc.get_freeze_count() == 0
