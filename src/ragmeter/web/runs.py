"""The runs page and the diff page: they render the read side (issue 25.1) and compute nothing.

The runs table is :func:`ragmeter.read.runs.read_runs` (deltas against an explicit
baseline, never silent; none between runs at different levels or on different gold sets,
issue 15.2) and the diff page is :func:`ragmeter.read.diff.read_diff`'s JSON, the one
``ragmeter diff --json`` prints; this module pages the one and passes the other on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ragmeter.compare.health import HealthThresholds
from ragmeter.read.diff import read_diff
from ragmeter.read.runs import DEFAULT_COLUMNS, read_runs
from ragmeter.store import Store

__all__ = ["DEFAULT_COLUMNS", "RUNS_PAGE_SIZE", "diff_view", "runs_page", "runs_view"]

#: Runs per page of the runs page (the newest first); the API returns them all.
RUNS_PAGE_SIZE = 100


def runs_view(
    store: Store,
    thresholds: HealthThresholds | None = None,
    baseline: int | str | None = None,
) -> dict[str, Any]:
    """The runs page: :func:`ragmeter.read.runs.read_runs` (a row per run, oldest first).

    >>> runs_view(Store.memory())["runs"]
    []
    """
    return read_runs(store, thresholds, baseline)


def runs_page(data: dict[str, Any], page: int = 1, size: int = RUNS_PAGE_SIZE) -> dict[str, Any]:
    """One page of the runs view: page 1 holds the newest ``size`` runs (oldest first).

    Adds ``page``, ``pages`` and ``n_runs``; deltas stay against the run before each
    row (or the baseline), even when that run is on another page.

    >>> view = {"runs": [{"id": n} for n in range(1, 6)]}
    >>> [r["id"] for r in runs_page(view, 1, size=2)["runs"]], runs_page(view, 3, size=2)["pages"]
    ([4, 5], 3)
    """
    runs = data["runs"]
    pages = max(1, math.ceil(len(runs) / size))
    page = min(max(1, page), pages)
    end = len(runs) - (page - 1) * size
    return {**data, "runs": runs[max(0, end - size) : end], "page": page, "pages": pages,
            "n_runs": len(runs)}  # fmt: skip


def diff_view(
    store: Store,
    a: int | str,
    b: int | str,
    thresholds: HealthThresholds | None = None,
    metrics: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The diff page: :meth:`DiffView.to_dict <ragmeter.read.diff.DiffView.to_dict>`, what
    ``ragmeter diff --json`` prints.

    When B is at another level or on another gold set than A, ``not_compared`` gives the
    reasons and nothing is computed between them (each run's own means, no delta).
    """
    return read_diff(store, a, b, metrics=metrics, thresholds=thresholds).to_dict()
