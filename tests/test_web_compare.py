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
