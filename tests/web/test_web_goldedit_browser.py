"""Issue 15.3/15.4 in a real headless Chromium: fix the gold set from a miss, the label page's
filters and choice, the review cards' states.

``ragmeter serve`` runs as a subprocess on a free loopback port over a SQLite store
holding a run with a generator and the lexical judge; the review page works on flywheel
candidates made from a real query log. Playwright drives Debian's Chromium. Screenshots
at 1400 and 400 px go to /tmp/ragmeter-screens/ (``15.3-…``, ``15.4-…``).

Skips when Chromium or playwright is missing, except under CI=true, where it fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from _browser import Served, served_dashboard

WIDTHS = (1400, 400)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The dashboard as ``ana``; the gold file beside the store is ``gold.yaml``."""
    from _goldedit_fixtures import write_flywheel_candidates
    from _web_fixtures import build_generated, small_gold
    from ragmeter.store import Store

    root = tmp_path_factory.mktemp("goldedit")
    store = root / "runs.db"
    with Store.open(store) as opened:
        build_generated(opened)  # run 1: a generator and the lexical judge; q03, q11 missed
    small_gold().save(root / "gold.yaml")
    candidates = write_flywheel_candidates(root / "candidates.yaml")
    with served_dashboard(root, store, candidates, "--user", "ana") as dashboard:
        yield dashboard


@pytest.fixture
def dialogs_are_errors() -> bool:
    """This module never counted a dialog as an error (Playwright dismisses it); kept so."""
    return False


def _shots(page: Any, served: Served, name: str) -> None:
    """Screenshots at 1400 and 400 px, and no sideways page scroll at 400 px."""
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        page.wait_for_function(f"window.innerWidth === {width}")
        served.shot(page, f"{name}-{width}")
        if width == 400:
            overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 0, f"{name} scrolls sideways by {overflow} px at 400 px"
    page.set_viewport_size({"width": 1400, "height": 1000})


def _select(page: Any, selector: str, start: int, end: int) -> None:
    page.evaluate(
        """([selector, start, end]) => {
            const node = document.querySelector(selector).firstChild;
            const range = document.createRange();
            range.setStart(node, start); range.setEnd(node, end);
            const sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range);
        }""",
        [selector, start, end],
    )


def test_mark_a_chunk_relevant_from_a_miss_then_apply_the_edits(page: Any, served: Served) -> None:
    """Issue 15.3: on a missed question, select a passage of a retrieved chunk, mark it
    relevant (grade 3) and an expected document wrong; the edits are in the export and
    `ragmeter gold apply-edits` writes them into the gold file."""
    from ragmeter.cli import main
    from ragmeter.gold.files import load_gold

    page.goto(served.base + "/runs/1?misses=1&open=q03")
    row = page.locator("tr[data-id=q03]")
    panel = row.locator("section.gold-fix")
    panel.wait_for()
    assert row.locator(".gold-mark").count() == 10  # beside each retrieved chunk
    # "nothing useful here": select "useful" inside the first retrieved chunk's text.
    _select(page, "tr[data-id=q03] ol.chunks > li:first-child .chunk-text", 8, 14)
    page.wait_for_function("document.querySelector('.quote-chosen').textContent.includes('useful')")
    # A passage selected in chunk 1 is never silently dropped for another chunk.
    row.locator(".gold-mark[data-chunk='noise-1.md']").get_by_role("button").click()
    panel.locator(".status.err", has_text="the selected passage is in chunk 1, not 2").wait_for()
    first = row.locator(".gold-mark[data-chunk='noise-0.md']")
    first.locator("select").select_option("3")
    first.get_by_role("button", name="Mark relevant").click()
    panel.locator(".status.ok", has_text="saved edit #1").wait_for()
    panel.locator(".expected-doc[data-doc='q03.md']").get_by_role(
        "button", name="Not relevant"
    ).click()
    panel.locator(".status.ok", has_text="saved edit #2").wait_for()
    assert "#1 noise-0.md: relevant, grade 3 (quote “useful”) · ana" in panel.inner_text()
    _shots(page, served, "15.3-run-gold-edit")

    exported = page.request.get(served.base + "/api/gold-edits?run=1").json()["edits"]
    assert [(e["action"], e["doc"], e["grade"], e["quote"], e["user"]) for e in exported] == [
        ("relevant", "noise-0.md", 3, "useful", "ana"),
        ("wrong", "q03.md", None, None, "ana"),
    ]
    gold = served.store.with_name("gold.yaml")
    fixed = gold.with_name("fixed.yaml")
    result = CliRunner().invoke(main, ["gold", "apply-edits", str(gold), "--store",
                                       str(served.store), "--out", str(fixed)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("applied 2 gold edit(s)")
    assert [r.model_dump(exclude_none=True) for r in load_gold(fixed)["q03"].relevant] == [
        {"doc": "noise-0.md", "quote": "useful", "grade": 3},
        {"doc": "q03.md", "grade": 0},
    ]
    page.reload()
    panel.locator("ul.gold-edits li").nth(1).wait_for()  # the stored edits come back


def test_label_page_filters_and_shows_the_choice(page: Any, served: Served) -> None:
    """Issue 15.3: the run picker and "unlabelled only" are in the URL; the context is the
    generation context; the choice is highlighted, also after a reload."""
    page.goto(served.base + "/label")
    card = page.locator("article.card", has_text="q02")
    assert "The context the answer was generated from (10 chunks" in card.inner_text()
    card.get_by_role("button", name="Not supported").click()
    card.locator(".status.ok").wait_for()
    assert card.locator("button.chosen").inner_text().endswith("Not supported")
    page.get_by_label("unlabelled only").check()
    page.wait_for_url("**/label?run=*&unlabelled=true")
    assert page.locator("article.card", has_text="q02").count() == 0
    assert page.locator("article.card").count() == 11
    _shots(page, served, "15.3-label-unlabelled")
    page.goto(served.base + "/label?run=1")
    chosen = page.locator("article.card", has_text="q02").locator("button[aria-pressed=true]")
    assert chosen.inner_text().endswith("Not supported")
    _shots(page, served, "15.3-label")


def test_review_cards_states(page: Any, served: Served) -> None:
    """Issue 15.4: a flywheel card shows the comment, thumbs-down count and what was
    retrieved; Accept is disabled with its reason; an unknown document is refused with a
    message; accepting a retrieved document works."""
    page.goto(served.base + "/review")
    card = page.locator("article.card", has_text="how long is the refund window")
    text = card.inner_text()
    assert "2 thumbs down" in text and "It told me <b>30 days</b>, the policy says 14!" in text
    assert "Refunds: 14 days." in text
    accept = card.get_by_role("button", name="Accept", exact=True)
    assert accept.is_disabled()
    assert "Accept is off: no relevant document yet" in text
    _shots(page, served, "15.4-review")
    card.get_by_role("button", name="Edit…").click()
    card.locator("textarea[name=relevant]").fill("billing/refund.md")
    card.get_by_role("button", name="Save edit and accept").click()
    card.locator(".status.err", has_text="no document 'billing/refund.md'").wait_for()
    card.locator("li[data-doc='billing/refunds.md']").get_by_role("button").click()
    card.locator(".status.ok", has_text="accepted with billing/refunds.md").wait_for()
    _shots(page, served, "15.4-review-done")
