"""A fall of a lower-is-better metric is shaded as better on the runs table and the diff page.

The pages read ``compare.comparison.lower_is_better`` (one definition, as the CLI's diff,
the gate and the static report do), not a list of their own. The store holds
``_web_fixtures.build_levels``'s runs ("base", then "better", then "chunked" at chunk level)
with a per-question ``hallucination`` and run-level latencies that fall from "base" to
"better" (and ``mrr``, which rises), written through ``Store.set_metrics``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

pytest.importorskip("fastapi", reason="the dashboard needs the [web] extra")

from fastapi.testclient import TestClient  # noqa: E402

from _web_fixtures import build_levels  # noqa: E402
from ragmeter.store import Store  # noqa: E402
from ragmeter.web.app import create_app  # noqa: E402

LOCAL = "http://127.0.0.1"
#: hallucination per question and latency per run, in "base" then "better".
HALLUCINATION = (0.5, 0.25, 0.25)
LATENCY_P95 = (50.0, 10.0, 10.0)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    path = tmp_path_factory.mktemp("lower") / "runs.db"
    with Store.open(path) as store:
        build_levels(store)
        names = ("base", "better", "chunked")
        for name, halluc, p95 in zip(names, HALLUCINATION, LATENCY_P95, strict=True):
            run = store.get_run(name)
            per_query = store.question_metrics(run.id)
            items = list(per_query["mrr"])
            per_query["hallucination"] = dict.fromkeys(items, halluc)
            means = dict(run.metrics) | {"hallucination": halluc, "latency_p95_ms": p95}
            store.set_metrics(run.id, means, per_query)
    with TestClient(create_app(str(path)), base_url=LOCAL) as test_client:
        yield test_client


def _delta_class(html: str, pattern: str, stop: str) -> str:
    """The shading of the first delta after ``pattern``, before ``stop`` (its cell or row)."""
    within = f"(?:(?!{re.escape(stop)}).)*?"
    match = re.search(pattern + within + r'<span class="delta ([a-z ]+)">', html, re.S)
    assert match is not None, pattern
    return match.group(1).split()[0]


def test_runs_table_shades_a_fall_in_hallucination_and_latency_as_better(
    client: TestClient,
) -> None:
    """Issue 17.5 (leftover): on the runs table, "better" (B after A) shows hallucination
    and latency_p95_ms falling as better, mrr rising as better; the API names them."""
    data = client.get("/api/runs").json()
    assert {"hallucination", "latency_p95_ms", "latency_p50_ms"} <= set(data["lower_is_better"])
    assert "mrr" not in data["lower_is_better"]
    row = next(r for r in data["runs"] if r["name"] == "better")
    assert row["delta"]["hallucination"] == pytest.approx(-0.25)
    page = client.get("/").text
    better_row = page[page.index('<a href="/runs/2">better</a>') :]
    assert _delta_class(better_row, r'data-col="hallucination"', "</td>") == "better"
    assert _delta_class(better_row, r'data-col="latency_p95_ms"', "</td>") == "better"
    assert _delta_class(better_row, r'data-col="mrr"', "</td>") == "better"


def test_diff_page_shades_a_fall_in_hallucination_and_latency_as_better(
    client: TestClient,
) -> None:
    """Issue 17.5 (leftover): on the diff page, hallucination (per question) and
    latency_p95_ms (per run) falling from A to B are shaded better; the reverse is worse."""
    page = client.get("/diff", params={"a": "base", "b": "better"}).text
    assert _delta_class(page, r"<tr><td>hallucination</td>", "</tr>") == "better"
    assert _delta_class(page, r"<tr><td>latency_p95_ms</td>", "</tr>") == "better"
    reverse = client.get("/diff", params={"a": "better", "b": "base"}).text
    assert _delta_class(reverse, r"<tr><td>hallucination</td>", "</tr>") == "worse"
    assert _delta_class(reverse, r"<tr><td>latency_p95_ms</td>", "</tr>") == "worse"


def test_a_refused_diff_keeps_hallucination_with_the_per_question_means(
    client: TestClient,
) -> None:
    """Issue 17.5 (leftover): a pair that is not compared (another level) lists hallucination
    among the per-question means, not with the run-level latencies as it did when the page
    split them by its own lower-is-better list."""
    data = client.get("/api/diff", params={"a": "better", "b": "chunked"}).json()
    assert data["not_compared"]
    assert "hallucination" in [m["metric"] for m in data["metrics"]]
    assert [r["metric"] for r in data["run_level"]] == ["latency_p50_ms", "latency_p95_ms"]
