"""Issue 8: the dashboard's pages and JSON API, in-process (ASGI app + httpx client).

The store is built with ``ragmeter.evaluate`` (see ``_web_fixtures``); expected
values come from the library (``build_report``, ``diff_runs``, ``load_candidates``),
so the API is checked against what the CLI prints, not against typed-in numbers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the dashboard needs the [web] extra")

from click.testing import CliRunner  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from _paths import ROOT
from _web_fixtures import (  # noqa: E402
    EVIL_ANSWER,
    EVIL_QUESTION,
    FOUND_BASE,
    FOUND_BETTER,
    build_small,
    write_candidates,
)
from ragmeter.cli.serve import is_loopback, serve  # noqa: E402
from ragmeter.compare.diff import diff_runs  # noqa: E402
from ragmeter.evaluation.report import build_report  # noqa: E402
from ragmeter.gold.review import load_candidates  # noqa: E402
from ragmeter.store import Store  # noqa: E402
from ragmeter.web.app import COOKIE, create_app  # noqa: E402

TOKEN = "s3cret-token"
#: The Host the dashboard answers by default (TestClient's "testserver" is refused).
LOCAL = "http://127.0.0.1"


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("web") / "runs.db"
    with Store.open(path) as store:
        build_small(store)
    return path


@pytest.fixture
def client(store_path: Path, tmp_path: Path) -> Iterator[TestClient]:
    candidates = write_candidates(tmp_path / "candidates.yaml")
    app = create_app(str(store_path), candidates=candidates)
    with TestClient(app, base_url=LOCAL) as test_client:
        yield test_client


def test_runs_api_matches_the_store(client: TestClient, store_path: Path) -> None:
    """Issue 8: /api/runs has every run, its metrics and the delta against the previous run."""
    data = client.get("/api/runs").json()
    with Store.open(store_path) as store:
        runs = store.list_runs()
    assert [r["name"] for r in data["runs"]] == [r.name for r in runs] == ["base", "better"]
    base, better = data["runs"]
    assert better["metrics"]["hit@5"] == pytest.approx(runs[1].metrics["hit@5"])
    assert better["delta"]["hit@5"] == pytest.approx(
        runs[1].metrics["hit@5"] - runs[0].metrics["hit@5"]
    )
    assert all(v is None for v in base["delta"].values())
    assert better["note"] == "+ query rewriting" and better["commit"] == "abc1234"
    assert better["health"]["recall@10"] in ("good", "fair", "poor")


def test_run_api_hit_curve_agrees_with_stored_hit_at_k(client: TestClient) -> None:
    """Issue 8: the hit@k curve computed from first relevant ranks equals the stored hit@k."""
    data = client.get("/api/runs/better").json()
    curve = data["hit_curve"]
    assert len(curve) == data["run"]["k"] == 10
    for k in (1, 5, 10):
        assert curve[k - 1] == pytest.approx(data["metrics"][f"hit@{k}"])
    assert curve == sorted(curve)
    assert curve[-1] == pytest.approx(len(FOUND_BETTER) / 12)
    assert sum(data["latency_histogram"]["counts"]) == 12


def test_run_api_misses_and_tag_filter(client: TestClient, store_path: Path) -> None:
    """Issue 8: misses by tag and by document come from build_report; ?tag= filters."""
    data = client.get("/api/runs/base").json()
    with Store.open(store_path) as store:
        report = build_report(store, "base")
    assert {m["id"] for m in data["misses"]} == {m.id for m in report.misses}
    assert {m["id"] for m in data["misses"]} == {f"q{n:02d}" for n in range(12)} - FOUND_BASE
    assert data["misses_by_doc"] == [{"doc": d, "misses": n} for d, n in report.by_doc]
    typo = client.get("/api/runs/base", params={"tag": "typo"}).json()
    assert typo["questions"] and all("typo" in q["tags"] for q in typo["questions"])
    assert {m["id"] for m in typo["misses"]} == {m.id for m in report.misses if "typo" in m.tags}
    only = client.get("/api/runs/base", params={"misses_only": "true"}).json()
    assert {q["id"] for q in only["questions"]} == {m.id for m in report.misses}


def test_run_api_question_details(client: TestClient) -> None:
    """Issue 8: a question carries its chunks with relevance marks and the answer."""
    data = client.get("/api/runs/base").json()
    q01 = next(q for q in data["questions"] if q["id"] == "q01")
    marks = [h["mark"] for h in q01["retrieved"]]
    assert marks[q01["first_relevant_rank"] - 1] == "gold"
    assert set(marks) == {"gold", "none"}
    assert q01["answer"] == "the fact q01 is here"
    missed = next(q for q in data["questions"] if q["id"] == "q04")
    assert missed["answer"] == EVIL_ANSWER and missed["hit"] is False


def test_diff_api_is_diff_runs(client: TestClient, store_path: Path) -> None:
    """Issue 8: /api/diff returns what ``ragmeter diff`` computes."""
    data = client.get("/api/diff", params={"a": "base", "b": "better"}).json()
    with Store.open(store_path) as store:
        expected = diff_runs(store, "base", "better").to_dict()
    assert [m["metric"] for m in data["metrics"]] == [m["metric"] for m in expected["metrics"]]
    for got, want in zip(data["metrics"], expected["metrics"], strict=True):
        assert got["delta"] == pytest.approx(want["delta"])
        assert got["p_value"] == pytest.approx(want["p_value"])
        assert got["ci_low"] == pytest.approx(want["ci_low"])
    assert {f["id"] for f in data["newly_missed"]} == FOUND_BASE - FOUND_BETTER
    assert {f["id"] for f in data["newly_found"]} == FOUND_BETTER - FOUND_BASE
    assert data["flagged"] == expected["flagged"]
    # Issue 26: billing lost q03 (one of its four questions) while the total improved; that
    # is no evidence, so it is not flagged, and its row says it cannot decide alone.
    assert data["flagged"] == []
    billing = next(
        t for t in data["tags"] if t["tag"] == "billing" and t["metric"] == data["primary"]
    )
    assert billing["delta"] == pytest.approx(-0.25) and billing["detectable"] is None
    assert billing["ci_low"] < -0.25 < billing["ci_high"]


def test_diff_page_shows_tag_intervals_and_detectable_effects(client: TestClient) -> None:
    """Issue 26: the dashboard's diff page shows each tag's interval (the one diff and gate
    use) and what each metric and tag can detect; a tag of four says "none alone"."""
    data = client.get("/api/diff", params={"a": "base", "b": "better"}).json()
    html = client.get("/diff?a=base&b=better").text
    billing = next(
        t for t in data["tags"] if t["tag"] == "billing" and t["metric"] == data["primary"]
    )
    assert f"[{billing['ci_low']:+.3f}, {billing['ci_high']:+.3f}]" in html
    assert ">detectable</th>" in html and "none alone" in html
    first = data["metrics"][0]
    if first["detectable"] is not None:
        assert f'data-value="{first["detectable"]}">{first["detectable"]:.2f}</td>' in html
    assert "Holm-adjusted p &lt; 0.05" in html


def _assert_error(response: Any, status: int) -> str:
    assert response.status_code == status
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"status", "message"}
    assert body["error"]["status"] == status
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return str(body["error"]["message"])


@pytest.mark.parametrize(
    ("method", "path", "status", "needle"),
    [
        ("GET", "/api/runs/999", 404, 'no run "999"'),
        ("GET", "/api/no-such-endpoint", 404, "/api/no-such-endpoint"),
        ("GET", "/api/diff?a=base", 422, "b"),
        ("GET", "/api/diff?a=base&b=better&metric=nonsense@@", 400, "nonsense"),
        ("DELETE", "/api/runs", 405, "Method Not Allowed"),
        ("POST", "/api/review", 422, "item_id"),
    ],
    ids=["unknown-run", "unknown-path", "missing-param", "bad-metric", "wrong-method", "bad-body"],
)
def test_every_api_error_has_one_shape(
    client: TestClient, method: str, path: str, status: int, needle: str
) -> None:
    """Issue 8: every API error is {"error": {"status", "message"}} with the HTTP status."""
    response = client.request(method, path, json={} if method == "POST" else None)
    assert needle in _assert_error(response, status)


class _BrokenStore(Store):
    """A real memory store whose run listing fails with a bug (not a RagmeterError)."""

    def list_runs(self) -> Any:
        raise RuntimeError("boom")


def test_unexpected_error_is_a_500_in_the_same_shape() -> None:
    """Issue 8: a bug answers 500 in the error shape instead of a traceback page."""
    with _BrokenStore("sqlite://") as store:
        client = TestClient(create_app("unused", store=store), base_url=LOCAL)
        message = _assert_error(client.get("/api/runs"), 500)
        assert "RuntimeError: boom" in message
        page = client.get("/")
        assert page.status_code == 500 and "RuntimeError: boom" in page.text


def test_pages_render_and_link_only_local_assets(client: TestClient) -> None:
    """Issue 8: every page renders, and every script, style and link stays on this server."""
    for path in ("/", "/runs/1", "/runs/latest", "/diff?a=1&b=2", "/label", "/review"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert response.headers["content-type"].startswith("text/html")
        for url in re.findall(r'(?:src|href)="([^"]*)"', response.text):
            assert url.startswith(("/", "#", "data:")), (path, url)
    for asset in ("/static/app.js", "/static/style.css"):
        text = client.get(asset).text
        assert "https://" not in text and "@import" not in text and "cdn" not in text.lower()
    missing = client.get("/runs/999")
    assert missing.status_code == 404 and "no run" in missing.text


def test_html_in_gold_and_answers_renders_as_text(client: TestClient) -> None:
    """Issue 8: a question or answer holding <script> and HTML is escaped, also in page JSON."""
    html = client.get("/runs/base").text
    assert "<script>window.__pwned" not in html
    assert "<img src=x" not in html and "<i>not italic</i>" not in html
    # The question table is built by the page's script (textContent); the label page
    # renders questions on the server.
    escaped = "&lt;script&gt;window.__pwned = 1&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;"
    assert escaped in client.get("/label?run=base").text
    # The JSON island: no "</script" or "<" can close the tag early.
    island = html.split('<script type="application/json" id="page-data">', 1)[1]
    island = island.split("</script>", 1)[0]
    assert "<" not in island
    assert json.loads(island)["questions"][0]["question"] == EVIL_QUESTION
    label_page = client.get("/label").text
    assert "<img src=x" not in label_page and "&lt;img src=x" in label_page


def test_review_decisions_are_written_to_the_candidates_file(
    client: TestClient, tmp_path: Path
) -> None:
    """Issue 8: accept / edit / reject from the API land in the candidates file at once."""
    path = tmp_path / "candidates.yaml"
    assert [i["id"] for i in client.get("/api/review").json()["pending"]] == [
        "syn-0",
        "syn-1",
        "syn-2",
    ]
    assert client.post("/api/review", json={"item_id": "syn-0", "decision": "accept"}).is_success
    assert client.post("/api/review", json={"item_id": "syn-1", "decision": "reject"}).is_success
    edited = client.post(
        "/api/review",
        json={
            "item_id": "syn-2",
            "decision": "edit",
            "question": "Where does uv keep its cache?",
            "relevant": ["concepts/cache.md"],
        },
    )
    assert edited.json()["item"]["status"] == "accepted"
    items = {item.id: item for item in load_candidates(path)}
    assert [items[i].status for i in ("syn-0", "syn-1", "syn-2")] == [
        "accepted",
        "rejected",
        "accepted",
    ]
    assert items["syn-2"].question == "Where does uv keep its cache?"
    unknown = client.post("/api/review", json={"item_id": "nope", "decision": "accept"})
    assert "nope" in _assert_error(unknown, 400)
    assert client.get("/api/review").json()["pending"] == []


def test_label_queue_lists_answers(client: TestClient) -> None:
    """Issue 8: the label page offers each answer with its question and context."""
    data = client.get("/api/labels").json()
    assert data["run"]["name"] == "better"
    assert len(data["items"]) == 12
    item = next(i for i in data["items"] if i["item_id"] == "q01")
    assert item["answer"] == "the fact q01 is here" and item["context"]


def test_label_is_written_to_the_store(client: TestClient, store_path: Path) -> None:
    """Issue 8: a label posted from the page is in the store at once (a calibration set)."""
    from ragmeter.web.work import label_set

    response = client.post(
        "/api/labels", json={"run": "better", "item_id": "q01", "supported": True}
    )
    assert response.status_code == 201, response.text
    with Store.open(store_path) as fresh:
        run = fresh.get_run("better")
        assert fresh.labels(label_set(run.id))["q01"] == "supported"
    again = client.post("/api/labels", json={"run": "better", "item_id": "q01", "supported": False})
    assert again.json()["label"]["label"] == "unsupported"
    item = next(i for i in client.get("/api/labels").json()["items"] if i["item_id"] == "q01")
    assert item["label"]["supported"] is False
    unknown = client.post("/api/labels", json={"run": "better", "item_id": "zz", "supported": True})
    assert "zz" in _assert_error(unknown, 400)


# -- token ---------------------------------------------------------------------------


def test_token_guards_every_page_api_and_asset(store_path: Path) -> None:
    """Issue 8: with a token, nothing is served without it; bearer, cookie and ?token= work.

    Issue 19.12: ?token= only opens a page; on /api it is refused."""
    app = create_app(str(store_path), token=TOKEN)
    client = TestClient(app, base_url=LOCAL, follow_redirects=False)
    for path in ("/", "/runs/1", "/api/runs", "/static/app.js", "/label", "/api/nothing"):
        response = client.get(path)
        assert response.status_code == 401, path
        assert response.headers["www-authenticate"] == "Bearer"
    _assert_error(client.get("/api/runs"), 401)
    _assert_error(client.get("/api/runs", headers={"authorization": "Bearer wrong"}), 401)
    ok = client.get("/api/runs", headers={"authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200 and len(ok.json()["runs"]) == 2
    _assert_error(client.get(f"/api/runs?token={TOKEN}"), 401)
    redirect = client.get(f"/runs/1?token={TOKEN}&x=1")
    assert redirect.status_code == 303 and redirect.headers["location"] == "/runs/1?x=1"
    cookie = redirect.headers["set-cookie"]
    assert f"{COOKIE}={TOKEN}" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    client.cookies.set(COOKIE, TOKEN)
    assert client.get("/runs/1").status_code == 200


# -- the serve command ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.1", True),
        ("localhost", True),
        ("::1", True),
        ("0.0.0.0", False),
        ("10.1.2.3", False),
    ],
    ids=["ipv4-loopback", "localhost", "ipv6-loopback", "all-interfaces", "lan"],
)
def test_is_loopback(host: str, expected: bool) -> None:
    """Issue 8: only loopback addresses count as local."""
    assert is_loopback(host) is expected


def test_serve_refuses_a_public_bind_without_token(store_path: Path) -> None:
    """Issue 8: binding anything but loopback without --token is a usage error (exit 2)."""
    result = CliRunner().invoke(serve, ["--store", str(store_path), "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "--token" in str(result.exception) or "--token" in result.output


def test_serve_get_prints_one_response(store_path: Path) -> None:
    """Issue 8: ``serve --get PATH`` answers one request without a server (like Datasette)."""
    runner = CliRunner()
    result = runner.invoke(serve, ["--store", str(store_path), "--get", "/api/runs"])
    assert result.exit_code == 0, result.output
    assert [r["name"] for r in json.loads(result.output)["runs"]] == ["base", "better"]
    missing = runner.invoke(serve, ["--store", str(store_path), "--get", "/api/runs/999"])
    assert missing.exit_code == 2  # issue 13.4: an input error, not 1 ("gate failed")
    assert json.loads(missing.output)["error"]["status"] == 404
    guarded = runner.invoke(
        serve, ["--store", str(store_path), "--token", TOKEN, "--get", "/api/runs"]
    )
    assert guarded.exit_code == 0 and json.loads(guarded.output)["runs"]


# -- issue 15.1: judge verdicts and blame ----------------------------------------------


def test_run_api_shows_judge_verdicts_and_blame(tmp_path: Path) -> None:
    """Issue 15.1: /api/runs/N carries each question's verdict and blame as `ragmeter show`
    reports them (previously `verdict: null, blame: null` for every question)."""
    from _web_fixtures import WRONG_ANSWERS, build_generated

    db = tmp_path / "judged.db"
    with Store.open(db) as store:
        build_generated(store)
        report = build_report(store, "generated")
    with TestClient(create_app(str(db)), base_url=LOCAL) as client:
        data = client.get("/api/runs/generated").json()
        html = client.get("/runs/generated").text
    by_id = {q["id"]: q for q in data["questions"]}
    for row in report.rows:
        assert by_id[row.id]["blame"] == row.blame is not None
        assert by_id[row.id]["verdict"] == row.judge is not None
    assert data["blame"] == report.blame == {"retrieval": 2, "generation": 2, "ok": 8}
    assert data["blame_by_tag"] == report.blame_by_tag
    for item in WRONG_ANSWERS:
        assert by_id[item]["blame"] == "generation"
        assert by_id[item]["verdict"]["unsupported_claims"] == ["the answer is 42 days"]
    assert 'id="blame"' in html and "generation 2" in html


# -- issue 15.5: fit and finish ------------------------------------------------------


def test_pages_are_gzipped_and_assets_cached(client: TestClient) -> None:
    """Issue 15.5: HTML and JSON are gzipped for clients that accept it; static assets are
    linked by content hash and cached for a year."""
    page = client.get("/runs/base", headers={"accept-encoding": "gzip"})
    assert page.headers["content-encoding"] == "gzip"
    api = client.get("/api/runs/base", headers={"accept-encoding": "gzip"})
    assert api.headers["content-encoding"] == "gzip" and api.json()["questions"]
    links = re.findall(r'(?:src|href)="(/static/[^"]+)"', page.text)
    assert len(links) == 2 and all("?v=" in link for link in links)
    for link in links:
        asset = client.get(link)
        assert asset.status_code == 200
        assert "max-age=31536000" in asset.headers["cache-control"]


def test_question_details_come_from_the_api(client: TestClient) -> None:
    """Issue 15.5: the run page carries one small row per question; an expanded row reads
    /api/runs/N/questions/QID, which has the chunks, answer, verdict and blame (and the chunk
    texts, which /api/runs/N carries only with texts=1)."""
    full = client.get("/api/runs/base", params={"texts": "1"}).json()
    one = client.get("/api/runs/base/questions/q04").json()
    # The one-question payload adds each chunk's text split at gold quotes (issue 15.1).
    plain = [{k: v for k, v in hit.items() if k != "segments"} for hit in one["retrieved"]]
    assert {**one, "retrieved": plain} == next(q for q in full["questions"] if q["id"] == "q04")
    assert one["retrieved"] and one["answer"] == EVIL_ANSWER
    _assert_error(client.get("/api/runs/base/questions/nope"), 404)
    html = client.get("/runs/base").text
    island = html.split('<script type="application/json" id="page-data">', 1)[1]
    rows = json.loads(island.split("</script>", 1)[0])["questions"]
    assert [r["id"] for r in rows] == [q["id"] for q in full["questions"]]
    assert "retrieved" not in rows[0] and "answer" not in rows[0]


@pytest.mark.slow
def test_a_2000_question_run_page_is_under_1_mb(tmp_path: Path) -> None:
    """Issue 15.5: a 2,000-question run page was 7 MB of HTML; now under 1 MB (before gzip)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "dashboard_bench", ROOT / "benchmarks" / "dashboard.py"
    )
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    db = tmp_path / "big.db"
    with Store.open(db) as store:
        run_id = bench.build_big_run(store)
    with TestClient(create_app(str(db)), base_url=LOCAL) as client:
        page = client.get(f"/runs/{run_id}", headers={"accept-encoding": "identity"})
        assert page.status_code == 200 and len(page.content) < 1_000_000
        zipped = client.get(f"/runs/{run_id}", headers={"accept-encoding": "gzip"})
        assert int(zipped.headers["content-length"]) < 200_000


# -- issue 15.4: exports of what is shown ----------------------------------------------


def test_question_export_is_the_filtered_sorted_table(client: TestClient) -> None:
    """Issue 15.4: /api/runs/N/questions.csv|json with the page's URL parameters is the
    question table as shown: the tag, search and misses-only filters, then the sort."""
    import csv
    import io

    full = client.get("/api/runs/base").json()["questions"]
    params = {"tag": "typo", "misses": "1", "sort": "-latency"}
    expected = sorted(
        (q for q in full if "typo" in q["tags"] and not q["hit"] and not q["error"]),
        key=lambda q: q["latency_ms"],
        reverse=True,
    )
    assert expected
    got = client.get("/api/runs/base/questions.csv", params=params)
    assert got.headers["content-type"].startswith("text/csv")
    assert "attachment" in got.headers["content-disposition"]
    records = list(csv.DictReader(io.StringIO(got.text)))
    assert [r["id"] for r in records] == [q["id"] for q in expected]
    assert records[0]["question"] == expected[0]["question"]
    assert float(records[0]["latency_ms"]) == pytest.approx(expected[0]["latency_ms"])
    as_json = client.get("/api/runs/base/questions.json", params=params).json()["questions"]
    assert [r["id"] for r in as_json] == [q["id"] for q in expected]
    searched = client.get("/api/runs/base/questions.json", params={"q": "Q01"}).json()
    assert [r["id"] for r in searched["questions"]] == ["q01"]
    ranked = client.get("/api/runs/base/questions.json", params={"sort": "rank"}).json()
    ranks = [r["first_relevant_rank"] for r in ranked["questions"]]
    found = [r for r in ranks if r is not None]
    assert found == sorted(found) and ranks[len(found) :] == [None] * (len(ranks) - len(found))


def test_diff_page_shows_blame_per_tag_a_to_b(tmp_path: Path) -> None:
    """Issue 15.1: blame counts per tag appear in the diff too (the page and /api/diff), for the
    kinds either run has, as A → B."""
    from _web_fixtures import build_generated, build_small

    db = tmp_path / "judged.db"
    with Store.open(db) as store:
        build_small(store)
        build_generated(store)
        after = build_report(store, "generated")
    with TestClient(create_app(str(db)), base_url=LOCAL) as client:
        data = client.get("/api/diff?a=base&b=generated").json()
        html = client.get("/diff?a=base&b=generated").text
    assert data["blame_by_tag"]["b"] == after.blame_by_tag
    assert data["blame_kinds"] == ["retrieval", "generation", "ok"]
    assert data["blame_tags"] == sorted(after.blame_by_tag)
    assert 'id="diff-blame"' in html
    tag = data["blame_tags"][0]
    counts = after.blame_by_tag[tag]
    row = f"0 → {counts.get('retrieval', 0)}"
    assert row in html


def test_run_page_lists_every_judge_metric_with_how_to_label_it(tmp_path: Path) -> None:
    """Issue 17.2: a claims-judged run's page lists each claim metric beside faithful, each
    "uncalibrated" with the command that exports a random sample to label; /api/runs/N
    carries them as ``judged``, the same figures `ragmeter show` prints."""
    from ragmeter.judging.corrected import corrected_metrics
    from ragmeter.judging.judge_runs import judge_run_claims

    db = tmp_path / "claims.db"
    with Store.open(db) as store:
        from _web_fixtures import build_generated

        build_generated(store)
        run_id = store.get_run("generated").id
        judge_run_claims(store, run_id)  # the offline lexical rule
        expected = corrected_metrics(store, run_id)
    assert "hallucination" in expected and "faithful" in expected
    with TestClient(create_app(str(db)), base_url=LOCAL) as client:
        judged = client.get(f"/api/runs/{run_id}").json()["judged"]
        html = client.get(f"/runs/{run_id}").text
    assert [j["metric"] for j in judged] == list(expected)
    for entry in judged:
        mean = expected[entry["metric"]]
        assert entry["line"] == mean.describe() and entry["status"] == "uncalibrated"
        assert f'data-metric="{entry["metric"]}"' in html
    assert f"ragmeter judge claim-labels export {run_id} --sample 30" in html
    assert f'href="/label?run={run_id}"' in html  # faithful: the label page


def test_run_page_shows_faithful_corrected_or_uncalibrated(tmp_path: Path) -> None:
    """Issue 17.2: the dashboard's run page and /api/runs/N carry the judged faithfulness as
    `ragmeter show` does: "uncalibrated" without labels, the corrected estimate with them."""
    from ragmeter.judging.corrected import corrected_faithful, label_set

    db = tmp_path / "judged.db"
    with Store.open(db) as store:
        from _web_fixtures import build_generated

        build_generated(store)
        run_id = store.get_run("generated").id
    with TestClient(create_app(str(db)), base_url=LOCAL) as client:
        plain = client.get(f"/api/runs/{run_id}").json()["faithful_judged"]
        assert plain["status"] == "uncalibrated" and plain["estimate"] is None
        assert "uncalibrated" in client.get(f"/runs/{run_id}").text
        with Store.open(db) as store:  # labelled while the dashboard (and its cache) runs
            items = [row.id for row in build_report(store, run_id).rows]
            store.save_labels(label_set(run_id), {item: "unsupported" for item in items[:3]})
            expected = corrected_faithful(store, run_id, label_set=label_set(run_id))
        assert expected is not None
        judged = client.get(f"/api/runs/{run_id}").json()["faithful_judged"]
        html = client.get(f"/runs/{run_id}").text
    assert judged["status"] == "corrected" and judged["n_labels"] == 3
    assert judged["estimate"] == pytest.approx(expected.estimate)
    assert judged["line"] == expected.describe() and expected.describe() in html


def test_question_quote_marks_follow_the_runs_coverage_rule(tmp_path: Path) -> None:
    """Issue 24.3: the dashboard marks a quote inside a chunk where the coverage rule counts it,
    folded as the rule folds (a quote with Markdown, a chunk without), at the run's own
    --min-overlap. The chunk holds the quote's head, 30 of its 44 folded characters, and folds
    to 35: at 0.5 that covers (needs 18) and is marked; at 0.9 it does not (needs 32) and is not.
    """
    import ragmeter

    quote = "Refunds are accepted within `thirty days` of delivery."
    chunk = "Intro. Refunds are accepted within thirty"
    gold = ragmeter.GoldSet.from_records(
        [{"id": "q", "question": "refunds?", "relevant": [{"doc": "a.md", "quote": quote}]}]
    )
    path = tmp_path / "runs.db"
    with Store.open(path) as store:
        for name, share in (("loose", 0.5), ("strict", 0.9)):
            ragmeter.evaluate(
                gold,
                lambda q, k: [{"id": "a.md#0", "doc": "a.md", "text": chunk}],
                store=store,
                name=name,
                min_overlap=share,
                commit="",
            )
    with TestClient(create_app(str(path)), base_url=LOCAL) as client:
        loose = client.get("/api/runs/loose/questions/q").json()["retrieved"][0]["segments"]
        strict = client.get("/api/runs/strict/questions/q").json()["retrieved"][0]["segments"]
    assert loose == [
        {"text": "Intro. ", "quote": False},
        {"text": "Refunds are accepted within thirty", "quote": True},
    ]
    assert strict == [{"text": chunk, "quote": False}]
