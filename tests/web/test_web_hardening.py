"""Issue 27 (findings 2, 13): the dashboard under attack, served by real uvicorn on loopback.

- 20 review decisions posted at the same moment must all be in the candidates file;
- a token link must never redirect off this origin, whatever the path smuggles.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
import pytest

pytest.importorskip("fastapi")

from _otlp import app_served
from ragmeter.gold.files import load_gold
from ragmeter.gold.goldset import GoldItem
from ragmeter.gold.review import save_items
from ragmeter.store import Store
from ragmeter.web.app import create_app

N_DECISIONS = 20
TOKEN = "s3cret-token"


def _candidates(path: Path, n: int) -> Path:
    save_items(
        path,
        [
            GoldItem(id=f"syn-{k}", question=f"question {k}?", status="candidate",
                     relevant=[{"doc": f"doc{k}.md"}], source="synthetic")
            for k in range(n)
        ],
    )  # fmt: skip
    return path


@pytest.fixture
def dashboard(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    db = tmp_path / "runs.db"
    Store.open(db).close()
    candidates = _candidates(tmp_path / "candidates.yaml", N_DECISIONS)
    with app_served(create_app(str(db), candidates=candidates)) as base:
        yield base, candidates


def test_finding_02_concurrent_review_decisions_are_all_kept(
    dashboard: tuple[str, Path],
) -> None:
    """Issue 27.2: 20 reviewers deciding 20 different candidates at the same moment all got
    200, and 17 of the 20 decisions were lost (each rewrite started from the file it had
    read). Now each decision re-reads the file under its lock: all 20 are kept."""
    base, candidates = dashboard
    start = threading.Barrier(N_DECISIONS)

    def decide(k: int) -> int:
        with httpx.Client(base_url=base, headers={"Origin": base}, timeout=60) as client:
            start.wait()
            body = {"item_id": f"syn-{k}", "decision": "reject" if k % 2 else "accept",
                    "reviewer": f"r{k}"}  # fmt: skip
            return client.post("/api/review", json=body).status_code

    with ThreadPoolExecutor(N_DECISIONS) as pool:
        statuses = list(pool.map(decide, range(N_DECISIONS)))
    assert statuses == [200] * N_DECISIONS
    items = {item.id: item for item in load_gold(candidates)}
    kept = [i for i in items.values() if i.metadata.get("review")]
    assert len(kept) == N_DECISIONS
    for k in range(N_DECISIONS):
        item = items[f"syn-{k}"]
        assert item.status == ("rejected" if k % 2 else "accepted")
        assert item.metadata["review"]["reviewer"] == f"r{k}"
    assert not list(candidates.parent.glob(".candidates.yaml.*.tmp"))


def _browser_target(base: str, location: str) -> str:
    """Where a browser goes: it drops tabs and newlines anywhere in a URL (WHATWG URL
    parsing), then resolves the Location against the page."""
    for char in "\t\n\r":
        location = location.replace(char, "")
    return urljoin(base + "/", location)


@pytest.mark.parametrize(
    "path",
    [
        "/%09/evil.test:9911/landing",
        "/%0A/evil.test/landing",
        "/%09%0D%0A/evil.test",
        "//evil.test/landing",
        "/%5C/evil.test",
        "/%5Cevil.test",
        "/%2F%2Fevil.test",
        "/%20/evil.test",
    ],
    ids=[
        "tab",
        "newline",
        "crlf-tab",
        "double-slash",
        "backslash-slash",
        "backslash",
        "encoded-slashes",
        "space",
    ],  # fmt: skip
)
def test_finding_13_token_link_redirect_stays_on_this_origin(tmp_path: Path, path: str) -> None:
    """Issue 27.13: ``/%09/evil.test:9911/landing?token=T`` answered
    ``Location: /\\t/evil.test:9911/landing``, which Chromium read as ``//evil.test:9911/...``
    and followed off-site. Now every Location is a path of this origin."""
    db = tmp_path / "runs.db"
    Store.open(db).close()
    with (
        app_served(create_app(str(db), token=TOKEN)) as base,
        httpx.Client() as client,
    ):
        # The whole URL, so the client sends the path as it is (no base-path merging).
        answer = client.get(f"{base}{path}?token={TOKEN}&keep=1", follow_redirects=False)
        assert answer.status_code == 303
        location = answer.headers["location"]
        assert location.startswith("/") and not location.startswith(("//", "/\\"))
        assert not any(c in location for c in "\t\n\r \\")
        target = urlsplit(_browser_target(base, location))
        assert f"{target.scheme}://{target.netloc}" == base
        assert target.query == "keep=1"
        # Followed with the cookie it set, it stays here (a page or this origin's 404).
        landed = client.get(base + location, follow_redirects=False)
        assert landed.status_code in (200, 404)
        assert TOKEN not in str(landed.url)


@pytest.mark.slow
def test_finding_13_chromium_does_not_follow_a_token_link_off_site(
    browser: Any, tmp_path: Path
) -> None:
    """Issue 27.13, with the victim the red team had: Chromium opened
    ``/%09/HOST:PORT/landing?token=T`` on a token dashboard and landed on the other site.
    Now it stays on the dashboard, and the other site (a real server on another loopback
    origin) is never asked."""
    from http.server import BaseHTTPRequestHandler

    import _browser
    from _servers import serve_handler

    visits: list[str] = []

    class Landing(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            visits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    db = tmp_path / "runs.db"
    Store.open(db).close()
    candidates = _candidates(tmp_path / "candidates.yaml", 1)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with (
        serve_handler(Landing) as evil,
        _browser.serving(db, candidates, "--token", TOKEN, headers=auth) as base,
    ):
        other = urlsplit(evil).port
        context = browser.new_context()
        page = context.new_page()
        asked: list[str] = []
        page.on("request", lambda request: asked.append(request.url))
        page.goto(f"{base}/%09/localhost:{other}/landing?token={TOKEN}")
        assert page.url.startswith(base + "/"), page.url
        assert all(url.startswith(base) for url in asked), asked
        assert visits == []
        context.close()
