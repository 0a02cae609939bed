"""Two stored runs compared, as people read them (issue 25.1): the one object ``ragmeter
diff`` (text, ``--json``, ``--markdown``) and the dashboard's diff page (and ``/api/diff``)
render.

:func:`read_diff` reads both runs once and computes what every surface shows: the
:class:`~ragmeter.compare.diff.RunDiff` (deltas with intervals, per-tag deltas, flips,
blame), both health lines, and each run's judge metrics corrected by people's labels.
Two runs that may not be subtracted (another level or gold set) get no diff, only the
reasons and each run's own means; ``DiffView.require()`` turns that into the error
``ragmeter diff`` exits 2 with.

>>> import ragmeter
>>> store = ragmeter.Store.memory()
>>> gold = ragmeter.GoldSet.from_records([{"id": "q1", "question": "refunds?",
...     "relevant": [{"doc": "refunds.md"}]}])
>>> for name, doc in (("a", "faq.md"), ("b", "refunds.md")):
...     _ = ragmeter.evaluate(gold, lambda q, k, d=doc: [{"doc": d}], store=store,
...                           name=name, commit="")
>>> view = read_diff(store, "a", "b", metrics=["hit@5"])
>>> data = view.to_dict()
>>> [f["id"] for f in data["newly_found"]], data["not_compared"], data["primary"]
(['q1'], [], 'hit@5')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from ragmeter.compare.comparable import check_comparable, not_comparable
from ragmeter.compare.diff import DEFAULT_TAG_DROP, RunDiff, diff_runs
from ragmeter.compare.health import HealthThresholds, health_lines
from ragmeter.evaluation.blame import FINE_BLAMES
from ragmeter.evaluation.explain import Explanation, stored_explanation
from ragmeter.judging.corrected import corrected_line, run_corrected
from ragmeter.read.questions import clean, metric_order
from ragmeter.read.runs import Ceilings

if TYPE_CHECKING:
    from ragmeter.metrics.uncertainty import JudgedMean
    from ragmeter.run import RunInfo
    from ragmeter.store import Store

__all__ = ["DiffView", "blame_table", "read_diff"]

#: The sides of a diff, in reading order.
SIDES = ("a", "b")


@dataclass(frozen=True)
class DiffView:
    """Run B compared with run A, everything people read about it; build it with
    :func:`read_diff`. ``diff`` is None when the runs may not be subtracted
    (``not_compared`` says why)."""

    a: RunInfo
    b: RunInfo
    diff: RunDiff | None
    not_compared: tuple[str, ...]
    health_lines: Mapping[str, list[str]]
    #: ``{metric: {"a": mean or None, "b": ...}}``: each run's corrected judge metrics.
    judged: Mapping[str, Mapping[str, JudgedMean | None]] = field(default_factory=dict)
    #: Why run B's misses were missed, when ``ragmeter explain`` ran on it (issue 28).
    explanation: Explanation | None = None

    def require(self) -> RunDiff:
        """The diff, or :class:`~ragmeter.errors.NotComparableError` (exit 2) naming why not."""
        if self.diff is None:
            check_comparable(self.a, self.b)
        assert self.diff is not None  # check_comparable raised for every refused pair
        return self.diff

    def judged_lines(self) -> list[str]:
        """Each run's corrected judge metrics as ``diff`` prints them (no interval on the
        difference: each side apart)."""
        return [
            f"{which.upper()} {corrected_line(metric, mean)}"
            for metric, sides in self.judged.items()
            for which, mean in sides.items()
            if mean is not None
        ]

    def to_dict(self) -> dict[str, Any]:
        """The one JSON of a diff: ``ragmeter diff --json`` and ``/api/diff`` print it.

        :meth:`RunDiff.to_dict <ragmeter.compare.diff.RunDiff.to_dict>` plus
        ``health_lines`` (per side), ``primary`` (the per-tag table's metric),
        ``not_compared`` (why there are no deltas; empty when compared), each run's
        ``metrics`` under ``a`` and ``b``, ``blame_tags`` and ``blame_kinds`` (the rows
        and columns of the blame-by-tag table), ``judged_lines`` (each run's corrected judge
        metrics as the text prints them), and ``judged_corrected`` (with
        ``faithful_corrected``) when a run was judged.
        """
        out = self._refused() if self.diff is None else self.diff.to_dict()
        out["a"] = self.a.to_dict(metrics=True)
        out["b"] = self.b.to_dict(metrics=True)
        out["health_lines"] = {side: list(self.health_lines[side]) for side in SIDES}
        out["primary"] = self.diff.primary if self.diff is not None else ""
        out["not_compared"] = list(self.not_compared)
        out["judged_lines"] = self.judged_lines()
        out.update(blame_table(out["blame_by_tag"]))
        both = {
            metric: {w: j.to_dict() for w, j in sides.items() if j is not None}
            for metric, sides in self.judged.items()
        }
        if both:
            out["judged_corrected"] = both
        if both.get("faithful"):
            out["faithful_corrected"] = both["faithful"]
        return cast(dict[str, Any], clean(out))

    def _refused(self) -> dict[str, Any]:
        """Each run's own means, no delta: what a page shows of runs it may not subtract."""
        a, b = self.a, self.b
        names = metric_order([m for m in a.metrics if m in b.metrics])
        rows = [
            {"metric": m, "mean_a": a.metrics[m], "mean_b": b.metrics[m], "delta": None,
             "ci_low": None, "ci_high": None, "p_value": None, "exact": True, "n": None,
             "sd": None, "detectable": None}
            for m in names if not _run_level(m)
        ]  # fmt: skip
        run_level = [
            {"metric": m, "value_a": a.metrics[m], "value_b": b.metrics[m], "delta": None}
            for m in names
            if _run_level(m)
        ]
        return {
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
            "flip_metric": "",
            "gold_differs": a.gold_hash != b.gold_hash,
            "blame_by_tag": {},
        }


def blame_table(by_side: Mapping[str, Mapping[str, Mapping[str, int]]]) -> dict[str, Any]:
    """The blame-by-tag table of a diff: its tags and the kinds either run has, in report
    order (issue 15.1).

    >>> blame_table({"a": {"t": {"ok": 1}}, "b": {"t": {"retrieval": 1}}})
    {'blame_tags': ['t'], 'blame_kinds': ['retrieval', 'ok']}
    """
    sides = [by_side.get("a", {}), by_side.get("b", {})]
    tags = sorted({tag for side in sides for tag in side})
    seen = {kind for side in sides for counts in side.values() for kind in counts}
    kinds = [k for k in FINE_BLAMES if k in seen] + sorted(seen - set(FINE_BLAMES))
    return {"blame_tags": tags, "blame_kinds": kinds}


def _run_level(metric: str) -> bool:
    """A number per run, not per question: the latency percentiles (as ``diff_runs`` has
    them). Hallucination is better when lower too, but it is a per-question mean."""
    return metric.startswith("latency_")


def read_diff(
    store: Store,
    ref_a: int | str,
    ref_b: int | str,
    *,
    metrics: Sequence[str] | None = None,
    tag_drop_threshold: float = DEFAULT_TAG_DROP,
    seed: int = 0,
    thresholds: HealthThresholds | None = None,
) -> DiffView:
    """Compare run ``ref_b`` with run ``ref_a`` (ids, names or ``latest``) and read what
    people read about the comparison (see the module doc). Only reads.

    Runs that may not be subtracted are checked before any statistics (runs on disjoint
    gold sets share no question at all): their view has no diff and no judge metrics.
    """
    t = thresholds or HealthThresholds()
    run_a, run_b = store.get_run(ref_a), store.get_run(ref_b)
    refused = not_comparable(run_a, run_b)
    if refused:
        ceilings = Ceilings(store)
        lines = {
            side: health_lines(run.metrics, t, precision_ceiling=ceilings(run))
            for side, run in zip(SIDES, (run_a, run_b), strict=True)
        }
        return DiffView(run_a, run_b, None, tuple(refused), lines)
    diff = diff_runs(
        store, run_a.id, run_b.id, metrics=metrics, tag_drop_threshold=tag_drop_threshold,
        seed=seed, thresholds=t,
    )  # fmt: skip
    lines = {side: diff.health_lines(side) for side in SIDES}
    judged = run_corrected(store, run_a.id, run_b.id)  # issue 17.2: every judge metric
    explained = stored_explanation(store, run_b.id)
    return DiffView(diff.a, diff.b, diff, (), lines, judged, explained)
