"""Issue 2: docs/metrics.md is generated from the metric registry and kept current."""

from __future__ import annotations

from _paths import ROOT
from ragmeter.metrics import families
from ragmeter.metrics._docs import render_metrics_doc

DOC = ROOT / "docs" / "metrics.md"


def test_metrics_doc_is_up_to_date() -> None:
    """Issue 2: regenerate with `python -m ragmeter.metrics._docs > docs/metrics.md`."""
    assert DOC.read_text(encoding="utf-8") == render_metrics_doc()


def test_every_family_is_documented() -> None:
    """Issue 2: every registered metric has a summary, formula and citation."""
    text = render_metrics_doc()
    for family in families().values():
        assert family.summary and family.formula and family.citation
        assert f"## `{family.name}`" in text
