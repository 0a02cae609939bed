"""Candidates for the review-page tests of issue 15.4, from a real query log."""

from __future__ import annotations

from pathlib import Path

from ragmeter.feedback.flywheel import export_candidates
from ragmeter.feedback.querylog import QueryLogger
from ragmeter.gold.review import save_items
from ragmeter.store import Store

COMMENT = "It told me <b>30 days</b>, the policy says 14!"


def write_flywheel_candidates(path: Path) -> Path:
    """Two candidates from a real query log: one asked twice with a comment, one once."""
    with Store.memory() as store:
        with QueryLogger(store) as log:
            hits = [
                {"id": "billing/refunds.md#2", "doc": "billing/refunds.md", "text": "Refunds: 14 days."},
                {"id": "faq.md#0", "doc": "faq.md", "text": "Frequently asked questions."},
            ]  # fmt: skip
            for n in range(2):
                query = log.log("how long is the refund window", hits)
                log.feedback(query, thumbs_up=False, comment=COMMENT if n == 0 else None)
            log.feedback(log.log("export my data", hits[1:]), thumbs_up=False)
        candidates = export_candidates(store)
    save_items(path, candidates)
    return path
