"""Issue 27.6 and 27.9: the dashboard's write routes under attack, in-process (ASGI).

- 27.6 CSRF: a page on another port of the same host (SameSite cookies do not separate
  ports), or any site when ``--allowed-host '*'``, posting to /api/labels, /api/review and
  /api/gold-edits of a token-protected dashboard, with the bodies a browser sends without
  a CORS preflight (no Content-Type, text/plain);
- 27.9 a gold-edit quote reaching over the "… (cut)" mark of a stored chunk text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ragmeter
from _web_fixtures import build_small, write_candidates
from ragmeter.evaluation.hit_text import CUT_MARK, HIT_TEXT_MAX_CHARS
from ragmeter.gold.goldset import GoldSet
from ragmeter.store import Store

pytest.importorskip("fastapi", reason="the dashboard needs the [web] extra")

from fastapi.testclient import TestClient  # noqa: E402

from ragmeter.web.app import COOKIE, create_app  # noqa: E402

TOKEN = "t0ken-27-6"
DASHBOARD = "127.0.0.1:8765"
#: What the browser sends from a page it loaded from elsewhere.
ATTACKERS = {
    "another port": "http://127.0.0.1:9911",
    "another scheme": "https://127.0.0.1:8765",
    "another host": "http://evil.example",
}


@pytest.fixture
def dashboard(tmp_path: Path) -> Iterator[tuple[TestClient, Path, Path]]:
    db = tmp_path / "runs.db"
    with Store.open(db) as store:
        build_small(store)
    candidates = write_candidates(tmp_path / "candidates.yaml")
    app = create_app(str(db), token=TOKEN, candidates=candidates, hosts={"*"})
    with TestClient(app, base_url=f"http://{DASHBOARD}") as client:
        client.cookies.set(COOKIE, TOKEN)  # the victim is logged in
        yield client, db, candidates


WRITES = {
    "/api/labels": {"run": "better", "item_id": "q01", "supported": False},
    "/api/review": {"item_id": "syn-0", "decision": "accept"},
    "/api/gold-edits": {"run": "better", "item_id": "q03", "action": "wrong", "doc": "q03.md"},
}


def _written(db: Path, candidates: Path) -> dict[str, Any]:
    with Store.open(db, read_only=True) as store:
        from ragmeter.web.work import label_set

        labels = store.labels(label_set(store.get_run("better").id))
        edits = store.gold_edits()
    return {"labels": labels, "edits": len(edits), "candidates": candidates.read_text()}


@pytest.mark.parametrize("attacker", list(ATTACKERS), ids=list(ATTACKERS))
@pytest.mark.parametrize("content_type", ["none", "text/plain", "application/json"])
def test_finding_06_csrf_on_write_routes_is_refused(
    dashboard: tuple[TestClient, Path, Path], attacker: str, content_type: str
) -> None:
    """Issue 27.6: with the token cookie set and `--allowed-host '*'`, a POST from another
    origin (another port of the same host included) to any write route is 403 whatever
    its body type, and nothing is written."""
    client, db, candidates = dashboard
    before = _written(db, candidates)
    for path, body in WRITES.items():
        headers = {"origin": ATTACKERS[attacker]}
        if content_type != "none":
            headers["content-type"] = content_type
        answer = client.post(path, content=json.dumps(body), headers=headers)
        assert answer.status_code == 403, (path, answer.text)
        assert "Origin" in answer.json()["error"]["message"]
    assert _written(db, candidates) == before


def test_finding_06_every_post_takes_json_only(dashboard: tuple[TestClient, Path, Path]) -> None:
    """Issue 27.6: without an Origin (not a browser, or an old one) a body that does not say
    application/json is 415 on every write route, before it is parsed; the same origin with
    JSON still writes."""
    client, db, candidates = dashboard
    before = _written(db, candidates)
    for path, body in WRITES.items():
        for kind in ("", "text/plain", "application/x-www-form-urlencoded"):
            headers = {"content-type": kind} if kind else {}
            answer = client.post(path, content=json.dumps(body), headers=headers)
            assert answer.status_code == 415, (path, headers, answer.text)
    assert _written(db, candidates) == before
    same = {"origin": f"http://{DASHBOARD}"}
    for path, body in WRITES.items():
        answer = client.post(path, json=body, headers=same)
        assert answer.is_success, (path, answer.text)
    after = _written(db, candidates)
    assert after["edits"] == before["edits"] + 1 and after["labels"] != before["labels"]


def test_finding_06_every_post_route_is_covered(store: Store) -> None:
    """Issue 27.6: the dashboard's own POST routes are exactly the three tested above; the
    rest are the ingest routes mounted in it (JSON-only and Origin-checked: test_web_guard,
    test_ingest; OTLP takes protobuf)."""
    paths = create_app("", store=store).openapi()["paths"]
    posts = {path for path, operations in paths.items() if "post" in operations}
    ingest = {"/api/log", "/api/feedback", "/v1/traces", "/v1/span_annotations"}
    assert posts - ingest == set(WRITES)


# -- 27.9: a quote over the "… (cut)" mark ------------------------------------------------

LONG = "Refunds are accepted within 30 days of delivery. " * 100  # past HIT_TEXT_MAX_CHARS


def test_finding_09_a_quote_over_the_cut_mark_is_refused(
    file_store: Store, store_path: Path
) -> None:
    """Issue 27.9: the run keeps 4,000 characters of a chunk and marks the cut; a quote that
    reaches into the mark is not text of the chunk and is refused (it was stored, applied,
    and then `gold check --corpus` and `eval` stopped). A quote before the mark is taken."""
    assert len(LONG) > HIT_TEXT_MAX_CHARS
    gold = GoldSet.from_records([{"id": "refunds", "question": "How long?",
                                  "relevant": ["faq.md"]}])  # fmt: skip
    hit = {"id": "policy.md#0", "doc": "policy.md", "text": LONG}
    ragmeter.evaluate(gold, lambda q, k: [hit], store=file_store, name="base")
    stored = LONG[:HIT_TEXT_MAX_CHARS] + CUT_MARK
    over = stored[-30:]  # the last words kept and the mark
    inside = LONG[HIT_TEXT_MAX_CHARS - 60 : HIT_TEXT_MAX_CHARS - 10]
    with TestClient(create_app(str(store_path)), base_url="http://127.0.0.1") as client:
        body = {"run": "base", "item_id": "refunds", "action": "relevant", "doc": "policy.md",
                "chunk": "policy.md#0", "grade": 2}  # fmt: skip
        for quote in (over, over.replace("…", "...")[:-3], "(cut)"):
            refused = client.post("/api/gold-edits", json={**body, "quote": quote})
            assert refused.status_code == 400, (quote, refused.text)
            assert "quote" in refused.json()["error"]["message"]
        assert client.get("/api/gold-edits").json()["edits"] == []
        taken = client.post("/api/gold-edits", json={**body, "quote": inside})
        assert taken.status_code == 201, taken.text
