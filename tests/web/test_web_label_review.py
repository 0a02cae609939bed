"""Issue 15.3/15.4: the label page (generation context, choice, run picker, unlabelled
filter) and the review cards (comment, thumbs-down count, what was retrieved, Accept).

The dashboard runs in-process (ASGI app + httpx client on the loopback Host) over a real
SQLite store; the flywheel candidates come from a real query log through the flywheel.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmeter.gold.review import load_candidates
from ragmeter.store import Store

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from _goldedit_fixtures import COMMENT, write_flywheel_candidates  # noqa: E402
from _web_fixtures import build_generated, build_small  # noqa: E402
from ragmeter.web.app import create_app  # noqa: E402

LOCAL = "http://127.0.0.1"


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("label") / "runs.db"
    with Store.open(path) as store:
        build_small(store)  # runs 1, 2: the retriever answers itself
        build_generated(store)  # run 3: a generator and the lexical judge
    return path


@pytest.fixture
def client(store_path: Path, tmp_path: Path) -> Iterator[TestClient]:
    candidates = write_flywheel_candidates(tmp_path / "candidates.yaml")
    app = create_app(str(store_path), candidates=candidates, corpus_docs=["policies/new.md"])
    with TestClient(app, base_url=LOCAL) as test_client:
        yield test_client


def _review_item(client: TestClient, question: str) -> dict[str, Any]:
    return next(i for i in client.get("/api/review").json()["pending"] if i["question"] == question)


def test_label_queue_shows_the_exact_generation_context(client: TestClient) -> None:
    """Issue 15.3: the label page shows the chunks the answer was generated from, with full
    text, not five retrieved snippets; a run whose retriever answered keeps its hits."""
    data = client.get("/api/labels").json()
    assert data["run"]["id"] == 3
    item = next(i for i in data["items"] if i["item_id"] == "q02")
    assert item["context_source"] == "generation"
    assert [c["id"] for c in item["context"]] == ["noise-0.md", "noise-1.md", "q02.md",
                                                  *(f"noise-{n}.md" for n in range(2, 9))]  # fmt: skip
    assert item["context"][2] == {"id": "q02.md", "doc": "q02.md",
                                  "text": "the fact q02 is here", "mark": "gold"}  # fmt: skip
    page = client.get("/label").text
    assert "The context the answer was generated from (10 chunks" in page
    older = client.get("/api/labels", params={"run": "1"}).json()
    assert older["items"][0]["context_source"] == "generation"  # the retriever's answer


def test_label_page_run_picker_unlabelled_filter_and_choice(client: TestClient) -> None:
    """Issue 15.3: a run picker and an "unlabelled only" filter live in the URL, and the choice
    made is highlighted (aria-pressed) when the page is opened again."""
    page = client.get("/label?run=2").text
    assert re.search(r'<option value="2" selected>2 · better</option>', page)
    assert '<option value="3">3 · generated</option>' in page
    saved = client.post("/api/labels", json={"run": "2", "item_id": "q01", "supported": False})
    assert saved.status_code == 201
    all_items = client.get("/api/labels", params={"run": "2"}).json()
    assert all_items["counts"] == {"answers": 12, "labelled": 1}
    only = client.get("/api/labels", params={"run": "2", "unlabelled": "true"}).json()
    assert len(only["items"]) == 11 and "q01" not in {i["item_id"] for i in only["items"]}
    page = client.get("/label?run=2").text
    card = page[page.index('data-item="q01"') :]
    card = card[: card.index("</article>")]
    assert re.search(
        r'class="choice danger chosen" data-supported="false" aria-pressed="true"', card
    )
    assert 'data-supported="true" aria-pressed="false"' in card
    filtered = client.get("/label?run=2&unlabelled=true").text
    assert 'data-item="q01"' not in filtered and 'id="label-unlabelled" checked' in filtered
    assert client.get("/label?run=").status_code == 200  # "newest with answers"


def test_review_cards_show_comment_thumbs_down_and_retrieved(client: TestClient) -> None:
    """Issue 15.4: a flywheel card shows the user comment (as text), the thumbs-down count and
    what was retrieved; Accept is disabled with the reason while nothing is relevant."""
    item = _review_item(client, "how long is the refund window")
    assert (item["asked"], item["thumbs_down"], item["comments"]) == (2, 2, [COMMENT])
    assert [r["doc"] for r in item["retrieved"]] == ["billing/refunds.md", "faq.md"]
    assert item["can_accept"] is False and "no relevant document yet" in item["accept_reason"]
    page = client.get("/review").text
    assert "It told me &lt;b&gt;30 days&lt;/b&gt;" in page and "<b>30 days</b>" not in page
    assert "2 thumbs down" in page and "Refunds: 14 days." in page
    assert re.search(r'data-decision="accept" disabled title="no relevant document yet', page)
    assert 'data-accept-doc="billing/refunds.md"' in page


def test_review_accepts_a_retrieved_document_and_refuses_unknown_ones(
    client: TestClient, tmp_path: Path
) -> None:
    """Issue 15.4: an edit naming a document that nothing retrieved and the corpus lacks is
    refused with a clear message; a retrieved one (or a corpus one) is accepted."""
    path = tmp_path / "candidates.yaml"
    item = _review_item(client, "how long is the refund window")
    refused = client.post("/api/review", json={
        "item_id": item["id"], "decision": "edit", "relevant": ["billing/refund.md"]})  # fmt: skip
    assert refused.status_code == 400
    message = refused.json()["error"]["message"]
    assert "no document 'billing/refund.md'" in message
    assert "billing/refunds.md, faq.md, policies/new.md" in message and "--corpus" in message
    assert load_candidates(path)[item["id"]].status == "candidate"
    accepted = client.post("/api/review", json={
        "item_id": item["id"], "decision": "accept", "relevant": ["billing/refunds.md"]})  # fmt: skip
    assert accepted.json()["item"]["status"] == "accepted"
    other = _review_item(client, "export my data")
    corpus = client.post("/api/review", json={
        "item_id": other["id"], "decision": "edit", "relevant": ["policies/new.md"]})  # fmt: skip
    assert corpus.status_code == 200
    assert [r.doc for r in load_candidates(path)[other["id"]].relevant] == ["policies/new.md"]
