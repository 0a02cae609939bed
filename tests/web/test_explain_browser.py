"""The run page's "Why missed" section in a real Chromium: the cause filter (issue 28)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from _browser import serving, watched_page

pytestmark = pytest.mark.slow


def test_cause_filter_keeps_the_misses_with_that_cause(browser: Any, tmp_path: Path) -> None:
    """Issue 28: picking a cause in the run page's filter hides the other misses' rows."""
    import ragmeter
    from ragmeter.evaluation.explain import ExplainOptions, explain_run
    from ragmeter.store import Store

    gold = ragmeter.GoldSet.from_records([
        {"id": "low", "question": "a?", "relevant": ["d3"]},
        {"id": "none", "question": "b?", "relevant": ["d1"]},
        {"id": "found", "question": "c?", "relevant": ["d1"]},
    ])  # fmt: skip
    ranking = {"a?": ["d1", "d2", "d3"], "b?": ["d2", "d3"], "c?": ["d1"]}

    def search(question: str, k: int) -> list[dict[str, str]]:
        return [{"id": d, "doc": d} for d in ranking[question][:k]]

    path = tmp_path / "runs.db"
    with Store.open(path) as store:
        run = ragmeter.evaluate(gold, search, k=1, store=store).run
        explain_run(store, run.id, ExplainOptions(retriever=search, depth=5, dense=False))
    candidates = tmp_path / "candidates.yaml"
    candidates.write_text(yaml.safe_dump([]), encoding="utf-8")
    with serving(path, candidates) as base, watched_page(browser, base) as page:
        page.goto(f"{base}/runs/{run.id}")
        rows = page.locator("#why-missed tbody tr")
        assert rows.count() == 2
        page.select_option("#cause-filter", "ranked_too_low")
        visible = [r for r in rows.all() if r.is_visible()]
        assert [r.locator("td").first.inner_text() for r in visible] == ["low"]
        page.select_option("#cause-filter", "")
        assert len([r for r in rows.all() if r.is_visible()]) == 2
