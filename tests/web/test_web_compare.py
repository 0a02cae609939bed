"""Issue 15.2: baselines, levels and side by side in the dashboard, in-process.

The store (``_web_fixtures.build_levels``) holds two doc-level runs of the small gold set
("base", "better"), the same retrieval scored at chunk level ("chunked") and a doc-level
run on a smaller gold set ("fewer"). Expected values come from the store's own metrics.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the dashboard needs the [web] extra")

from fastapi.testclient import TestClient  # noqa: E402

from _web_fixtures import build_levels  # noqa: E402
from ragmeter.store import Store  # noqa: E402
from ragmeter.web.app import create_app  # noqa: E402

LOCAL = "http://127.0.0.1"


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("levels") / "runs.db"
    with Store.open(path) as store:
        build_levels(store)
    return path


@pytest.fixture
def client(store_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(str(store_path)), base_url=LOCAL) as test_client:
        yield test_client


def _by_name(data: dict) -> dict[str, dict]:
    return {row["name"]: row for row in data["runs"]}


def test_runs_deltas_are_against_the_chosen_baseline(client: TestClient, store_path: Path) -> None:
    """Issue 15.2: ?baseline=RUN makes every delta B - baseline, not B - previous run id."""
    with Store.open(store_path) as store:
        better = store.get_run("better").metrics
        base = store.get_run("base").metrics
    rows = _by_name(client.get("/api/runs", params={"baseline": "better"}).json())
    assert rows["better"]["is_baseline"] and rows["better"]["delta"] == {}
    assert rows["base"]["compared_with"] == rows["better"]["id"]
    assert rows["base"]["delta"]["hit@5"] == pytest.approx(base["hit@5"] - better["hit@5"])
    # Without a baseline, each run is against the one before it.
    rows = _by_name(client.get("/api/runs").json())
    assert rows["better"]["delta"]["hit@5"] == pytest.approx(better["hit@5"] - base["hit@5"])
    assert rows["base"]["compared_with"] is None and rows["base"]["delta"] == {}


def test_runs_at_another_level_or_gold_set_get_no_delta(client: TestClient) -> None:
    """Issue 15.2: a run at another level or on another gold set than its reference shows
    no delta, only the reason; the level and gold set are columns of the table."""
    data = client.get("/api/runs", params={"baseline": "base"}).json()
    rows = _by_name(data)
    assert [rows[n]["level"] for n in ("base", "better", "chunked", "fewer")] == [
        "doc", "doc", "chunk", "doc"]  # fmt: skip
    assert rows["fewer"]["gold"]["name"] == "fewer" and rows["base"]["gold"]["name"] == "small"
    assert rows["chunked"]["delta"] == {} and rows["fewer"]["delta"] == {}
    assert rows["chunked"]["not_compared"] == ["different level (chunk vs doc) — not compared"]
    assert rows["fewer"]["not_compared"][0].startswith("different gold set (")
    assert rows["better"]["not_compared"] == [] and rows["better"]["delta"]["hit@5"] is not None
    page = client.get("/", params={"baseline": "base"}).text
    assert "different level (chunk vs doc) — not compared" in page
    assert '<option value="1" selected>' in page
    assert 'href="/compare?a=1&amp;b=3"' in page  # each run links to a side by side with it
    # The previous run is no excuse either: "chunked" follows "better" (doc level).
    rows = _by_name(client.get("/api/runs").json())
    assert rows["chunked"]["delta"] == {} and rows["chunked"]["not_compared"]


def test_health_is_shaded_only_for_shown_metrics(client: TestClient) -> None:
    """Issue 15.2: health is given only for metrics that are columns of the table, and the
    legend names them."""
    data = client.get("/api/runs").json()
    assert data["shaded"] and set(data["shaded"]) <= set(data["metrics"])
    for row in data["runs"]:
        assert set(row["health"]) <= set(data["metrics"])
    assert f'data-shaded="{",".join(data["shaded"])}"' in client.get("/").text


def test_an_unknown_baseline_is_a_404(client: TestClient) -> None:
    """Issue 15.2: a baseline that is no run is an error, not the previous-run table."""
    response = client.get("/api/runs", params={"baseline": "nope"})
    assert response.status_code == 404 and "nope" in response.json()["error"]["message"]


def test_diff_across_levels_is_refused(client: TestClient, store_path: Path) -> None:
    """Issue 15.2: the diff page and API subtract nothing between runs at different levels
    (no delta, interval, p-value, per-tag delta or flip) and say why; each run's own
    means stay."""
    with Store.open(store_path) as store:
        chunked = store.get_run("chunked").metrics
    data = client.get("/api/diff", params={"a": "better", "b": "chunked"}).json()
    assert data["not_compared"] == ["different level (chunk vs doc) — not compared"]
    assert all(m["delta"] is None and m["p_value"] is None for m in data["metrics"])
    hit5 = next(m for m in data["metrics"] if m["metric"] == "hit@5")
    assert hit5["mean_b"] == pytest.approx(chunked["hit@5"])
    assert data["tags"] == data["newly_missed"] == data["newly_found"] == data["flagged"] == []
    page = client.get("/diff", params={"a": "better", "b": "chunked"})
    assert page.status_code == 200
    assert "is not diffed against run A" in page.text and "Flagged clusters" not in page.text
    same = client.get("/api/diff", params={"a": "base", "b": "better"}).json()
    assert same["not_compared"] == [] and same["newly_found"]


def test_compare_pairs_both_rankings_and_the_rank_change(
    client: TestClient, store_path: Path
) -> None:
    """Issue 15.2: /api/compare puts A's and B's chunks side by side with each run's first
    relevant rank (as its run page has it) and the change; "only changed" keeps the moved."""
    from _web_fixtures import FOUND_BASE, FOUND_BETTER

    data = client.get("/api/compare", params={"a": "base", "b": "better"}).json()
    run_a = client.get("/api/runs/base").json()["questions"]
    run_b = client.get("/api/runs/better").json()["questions"]
    assert data["not_compared"] == [] and data["n_questions"] == len(run_a) == 12
    for shown, qa, qb in zip(data["questions"], run_a, run_b, strict=True):
        assert shown["rank_a"] == qa["first_relevant_rank"]
        assert shown["rank_b"] == qb["first_relevant_rank"]
        assert [h["doc"] for h in shown["a"]] == [h["doc"] for h in qa["retrieved"]]
        assert [h["mark"] for h in shown["b"]] == [h["mark"] for h in qb["retrieved"]]
    changed = client.get("/api/compare", params={"a": "base", "b": "better", "changed": 1})
    moved = {q["id"]: q["change"] for q in changed.json()["questions"]}
    assert moved == {
        **{i: "found" for i in FOUND_BETTER - FOUND_BASE},
        **{i: "lost" for i in FOUND_BASE - FOUND_BETTER},
    }
    billing = client.get("/api/compare", params={"a": 1, "b": 2, "changed": 1, "tag": "billing"})
    assert [q["id"] for q in billing.json()["questions"]] == ["q03"]


def test_compare_pages_and_url_state(client: TestClient) -> None:
    """Issue 15.2: the side-by-side page is paginated and rendered from its URL; the filters
    are kept in the pager and export links."""
    page = client.get("/compare", params={"a": 1, "b": 2, "changed": 1, "tag": "typo"}).text
    assert 'id="only-changed" checked' in page and '<option value="typo" selected>' in page
    assert "/api/compare/questions.csv?a=1&amp;b=2&amp;changed=1&amp;tag=typo" in page
    assert page.count('class="side-q ') == 3  # q04, q07, q10: typo questions found by B
    small = client.get("/api/compare", params={"a": 1, "b": 2}).json()
    assert small["pages"] == 1 and len(small["questions"]) == 12


def test_compare_export_is_what_is_shown(client: TestClient) -> None:
    """Issue 15.2: the CSV/JSON export has exactly the shown questions (every page), the CSV
    one line per rank with A's chunk beside B's."""
    import csv
    import io

    params = {"a": 1, "b": 2, "changed": 1}
    shown = client.get("/api/compare", params=params).json()["questions"]
    exported = client.get("/api/compare/questions.json", params=params).json()
    assert exported["questions"] == shown
    lines = list(csv.DictReader(io.StringIO(client.get("/api/compare/questions.csv",
                                                       params=params).text)))  # fmt: skip
    assert list(dict.fromkeys(line["id"] for line in lines)) == [q["id"] for q in shown]
    first = [line for line in lines if line["id"] == shown[0]["id"]]
    assert [line["a_doc"] for line in first] == [h["doc"] for h in shown[0]["a"]]
    assert [line["b_mark"] for line in first] == [h["mark"] for h in shown[0]["b"]]


def test_compare_across_levels_shows_rankings_but_no_change(client: TestClient) -> None:
    """Issue 15.2: two runs at different levels are shown side by side with a warning and no
    change; asking for "only changed" is a clear 400, not an empty or silent list."""
    data = client.get("/api/compare", params={"a": "better", "b": "chunked"}).json()
    assert data["not_compared"] == ["different level (chunk vs doc) — not compared"]
    assert all(q["change"] is None for q in data["questions"]) and data["n_changed"] == 0
    refused = client.get("/api/compare", params={"a": "better", "b": "chunked", "changed": 1})
    assert refused.status_code == 400
    assert "different level" in refused.json()["error"]["message"]
    page = client.get("/compare", params={"a": "better", "b": "chunked"}).text
    assert "no change is computed" in page and 'id="only-changed"  disabled' in page


def test_multi_run_views_for_a_question_and_a_tag(client: TestClient, store_path: Path) -> None:
    """Issue 15.2: /question and /tag show up to 5 runs; a sixth is refused with a message."""
    data = client.get("/api/question", params={"id": "q03", "runs": "1,2,3"}).json()
    assert [c["run"]["id"] for c in data["runs"]] == [1, 2, 3]
    assert [c["question"]["first_relevant_rank"] for c in data["runs"]] == [1, None, None]
    assert data["runs"][2]["not_compared"] == ["different level (chunk vs doc) — not compared"]
    tag = client.get("/api/tag", params={"tag": "billing", "runs": "base,better"}).json()
    with Store.open(store_path) as store:
        from ragmeter.evaluation.report import build_report

        report = build_report(store, "base")
    billing = [row.id for row in report.rows if "billing" in row.tags]
    expected = sum(report.per_query["hit@5"][i] for i in billing) / len(billing)
    assert tag["runs"][0]["n"] == len(billing) == 4
    assert tag["runs"][0]["metrics"]["hit@5"] == pytest.approx(expected)
    too_many = client.get("/api/tag", params={"tag": "billing", "runs": "1,2,3,4,1,2,3,4,5,6"})
    assert too_many.status_code == 400
    assert too_many.json()["error"]["message"].startswith("at most 5 runs side by side, got 6")
    assert client.get("/question", params={"id": "q03", "runs": "1,2,3"}).status_code == 200
    assert "different level" in client.get("/tag", params={"tag": "typo", "runs": "2,3"}).text


@pytest.mark.parametrize(
    ("rank_a", "rank_b", "extra", "expected"),
    [
        (3, 1, {}, "better"),
        (1, 3, {}, "worse"),
        (None, 2, {}, "found"),
        (2, None, {}, "lost"),
        (2, 2, {}, "same"),
        (None, None, {}, "same"),
        (1, None, {"error_b": "timeout"}, "error"),
        (None, 1, {"error_a": "timeout"}, "found"),
        (None, 1, {"in_a": False}, "only B"),
        (1, None, {"in_b": False}, "only A"),
    ],
    ids=[
        "better",
        "worse",
        "found",
        "lost",
        "same",
        "both-missed",
        "b-failed",
        "a-failed",
        "only-b",
        "only-a",
    ],  # fmt: skip
)
def test_rank_change(rank_a: int | None, rank_b: int | None, extra: dict, expected: str) -> None:
    """Issue 15.2: how a question's first relevant rank moved, one kind per case (a failure in
    B is an error, not a plain loss)."""
    from ragmeter.compare.comparable import CHANGES, rank_change

    assert rank_change(rank_a, rank_b, **extra) == expected in CHANGES


def test_docstring_examples_hold() -> None:
    """Issue 15.2: the examples in the new modules' docstrings run and hold."""
    import doctest

    import ragmeter.compare.comparable
    import ragmeter.web.compare
    import ragmeter.web.runs

    for module in (ragmeter.compare.comparable, ragmeter.web.compare, ragmeter.web.runs):
        failures, tried = doctest.testmod(module)
        assert failures == 0 and tried > 0, module.__name__
