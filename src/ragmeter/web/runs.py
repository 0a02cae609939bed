"""The runs table and the diff page's data: deltas against an explicit baseline, never silent.

A row's deltas are against the baseline the person picked (``?baseline=RUN``), or the
run before it when none is picked. A run scored at another level or against another
gold set than that reference gets no delta at all, only the reason
(:func:`ragmeter.compare.comparable.not_comparable`): the two numbers measure
different things (issue 15.2). The diff page refuses the same pairs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any, cast

from ragmeter.compare.comparable import not_comparable
from ragmeter.compare.comparison import lower_is_better
from ragmeter.compare.diff import diff_runs
from ragmeter.compare.health import HealthThresholds, diagnose, health_lines, precision_ceiling
from ragmeter.gold.goldset import GoldSet
from ragmeter.run import RunInfo
from ragmeter.store import Store
from ragmeter.web.views import clean, metric_order

__all__ = ["DEFAULT_COLUMNS", "RUNS_PAGE_SIZE", "diff_view", "runs_page", "runs_view"]

#: Columns shown by default on the runs page; the rest are one click away.
DEFAULT_COLUMNS = ("hit@5", "recall@10", "mrr", "ndcg@10", "precision@5", "latency_p95_ms")
#: Runs per page of the runs page (the newest first); the API returns them all.
RUNS_PAGE_SIZE = 100


def _run_level(metric: str) -> bool:
    """A number per run, not per question: the latency percentiles (as ``diff_runs`` has
    them). Hallucination is better when lower too, but it is a per-question mean."""
    return metric.startswith("latency_")


def _delta(value: float, before: float | None) -> float | None:
    if before is None or not (math.isfinite(value) and math.isfinite(before)):
        return None
    return value - before


class _Ceilings:
    """precision@5's best achievable value per gold set, computed once per gold hash."""

    def __init__(self, store: Store):
        self._store = store
        self._cache: dict[str, float | None] = {}

    def __call__(self, run: RunInfo) -> float | None:
        # Relevant chunks per question are unknown at chunk level (they depend on chunking).
        if run.level != "doc":
            return None
        if run.gold_hash not in self._cache:
            gold = GoldSet.from_records(self._store.load_gold_records(run.gold_hash))
            counts = (
                len(dict.fromkeys(rel.doc_id for rel in item.relevant if rel.grade > 0))
                for item in gold
            )
            self._cache[run.gold_hash] = precision_ceiling(counts)
        return self._cache[run.gold_hash]


def runs_view(
    store: Store,
    thresholds: HealthThresholds | None = None,
    baseline: int | str | None = None,
) -> dict[str, Any]:
    """The runs page: a row per run (oldest first) with level, gold set, metrics, deltas, health.

    ``delta`` is against ``baseline`` (a run id, name or ``latest``) or, without one, the
    previous run; ``compared_with`` names that run and ``not_compared`` says why a row has
    no delta (another level or gold set). ``health`` maps a metric to ``good``/``fair``/
    ``poor`` where a threshold applies; ``shaded`` lists those metrics.

    >>> runs_view(Store.memory())["runs"]
    []
    """
    t = thresholds or HealthThresholds()
    runs = store.list_runs()
    chosen = store.get_run(baseline) if baseline not in (None, "") else None
    names = metric_order([m for run in runs for m in run.metrics])
    gold_names = store.gold_names()
    ceilings = _Ceilings(store)
    rows: list[dict[str, Any]] = []
    previous: RunInfo | None = None
    for run in runs:
        health = diagnose(run.metrics, t, precision_ceiling=ceilings(run))
        reference = chosen if chosen is not None else previous
        refused = not_comparable(reference, run) if reference is not None else []
        deltas: dict[str, float | None] = {}
        if reference is not None and reference.id != run.id and not refused:
            before = reference.metrics
            deltas = {name: _delta(value, before.get(name)) for name, value in run.metrics.items()}
        row = run.to_dict()
        row.update(
            metrics=dict(run.metrics),
            gold={"hash": run.gold_hash, "name": gold_names.get(run.gold_hash, "")},
            compared_with=reference.id if reference is not None else None,
            is_baseline=chosen is not None and chosen.id == run.id,
            not_compared=refused,
            delta=deltas,
            health={c.metric: c.status for c in health.checks if c.metric in names},
        )
        rows.append(row)
        previous = run
    shaded = [m for m in names if any(m in row["health"] for row in rows)]
    return cast(
        dict[str, Any],
        clean(
            {
                "metrics": names,
                "default_columns": [m for m in DEFAULT_COLUMNS if m in names] or names[:6],
                "lower_is_better": [m for m in names if lower_is_better(m)],
                "thresholds": asdict(t),
                "shaded": shaded,
                "baseline": chosen.to_dict() if chosen is not None else None,
                "runs": rows,
            }
        ),
    )


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
    """The diff page: everything ``ragmeter diff`` computes, plus both health lines.

    When B is at another level or on another gold set than A, ``not_compared`` gives the
    reasons and nothing is computed between them: each run's own means, deltas, intervals
    and p-values ``None``, no per-tag deltas, flagged clusters or flips.

    >>> import ragmeter
    >>> store = Store.memory()
    >>> gold = ragmeter.GoldSet.from_records([{"id": "q1", "question": "refunds?",
    ...     "relevant": [{"doc": "refunds.md"}]}])
    >>> for name, doc in (("a", "faq.md"), ("b", "refunds.md")):
    ...     _ = ragmeter.evaluate(gold, lambda q, k, d=doc: [{"doc": d}], store=store,
    ...                           name=name, commit="")
    >>> view = diff_view(store, "a", "b", metrics=["hit@5"])
    >>> [f["id"] for f in view["newly_found"]], view["not_compared"]
    (['q1'], [])
    """
    t = thresholds or HealthThresholds()
    run_a, run_b = store.get_run(a), store.get_run(b)
    refused = not_comparable(run_a, run_b)
    if refused:
        # Checked before any statistics: runs on disjoint gold sets share no question at all.
        return _refused_diff(store, run_a, run_b, refused, t, metrics)
    diff = diff_runs(store, run_a.id, run_b.id, metrics=metrics, thresholds=t)
    out = diff.to_dict()
    out["health_lines"] = {"a": diff.health_lines("a"), "b": diff.health_lines("b")}
    out["primary"] = diff.primary
    out["a"]["metrics"] = dict(diff.a.metrics)
    out["b"]["metrics"] = dict(diff.b.metrics)
    out["not_compared"] = []
    out.update(_blame_table(diff.blame_by_tag))
    return cast(dict[str, Any], clean(out))


#: The blame kinds in reading order; the claim judge's finer kinds sit beside the coarse ones.
BLAME_ORDER = ("retrieval", "generation: hallucination", "generation: noise", "generation", "ok")


def _blame_table(by_side: Mapping[str, Mapping[str, Mapping[str, int]]]) -> dict[str, Any]:
    """The diff page's blame-per-tag table: its tags and the kinds either run has (issue 15.1).

    >>> _blame_table({"a": {"t": {"ok": 1}}, "b": {"t": {"retrieval": 1}}})
    {'blame_tags': ['t'], 'blame_kinds': ['retrieval', 'ok']}
    """
    sides = [by_side.get("a", {}), by_side.get("b", {})]
    tags = sorted({tag for side in sides for tag in side})
    seen = {kind for side in sides for counts in side.values() for kind in counts}
    kinds = [k for k in BLAME_ORDER if k in seen] + sorted(seen - set(BLAME_ORDER))
    return {"blame_tags": tags, "blame_kinds": kinds}


def _refused_diff(
    store: Store,
    run_a: RunInfo,
    run_b: RunInfo,
    refused: list[str],
    t: HealthThresholds,
    metrics: Sequence[str] | None,
) -> dict[str, Any]:
    """The diff page for two runs that may not be subtracted: each run's own means, no delta."""
    names = metric_order([m for m in run_a.metrics if m in run_b.metrics])
    if metrics is not None:
        names = [m for m in names if m in set(metrics)]
    ceilings = _Ceilings(store)
    side = {"a": (run_a, ceilings(run_a)), "b": (run_b, ceilings(run_b))}
    rows = [
        {"metric": m, "mean_a": run_a.metrics[m], "mean_b": run_b.metrics[m], "delta": None,
         "ci_low": None, "ci_high": None, "p_value": None, "exact": True, "n": None,
         "sd": None, "detectable": None}
        for m in names if not _run_level(m)
    ]  # fmt: skip
    run_level = [
        {"metric": m, "value_a": run_a.metrics[m], "value_b": run_b.metrics[m], "delta": None}
        for m in names
        if _run_level(m)
    ]
    out = {
        "a": run_a.to_dict(metrics=True),
        "b": run_b.to_dict(metrics=True),
        "not_compared": refused,
        "n": 0,
        "metrics": rows,
        "run_level": run_level,
        "tags": [],
        "flagged": [],
        "newly_missed": [],
        "newly_found": [],
        "warnings": [],
        "notes": [],
        "confidence": 0.95,
        "alpha": 0.05,
        "seed": 0,
        "tag_drop_threshold": None,
        "primary": "",
        "flip_metric": "",
        "gold_differs": run_a.gold_hash != run_b.gold_hash,
        "blame_by_tag": {},
        "blame_tags": [],
        "blame_kinds": [],
        "health_lines": {
            key: health_lines(run.metrics, t, precision_ceiling=ceiling)
            for key, (run, ceiling) in side.items()
        },
    }
    return cast(dict[str, Any], clean(out))
