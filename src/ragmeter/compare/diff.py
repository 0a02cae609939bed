"""``ragmeter diff``: two stored runs side by side, with honest statistics.

:func:`diff_runs` reads both runs from the store, hands their per-question metric
values to :func:`ragmeter.compare.comparison.compare_runs` (deltas, bootstrap intervals,
randomization tests, per-tag deltas with Holm's correction, flags) and joins the
result with what a person needs to act on it: the questions that were newly
missed or newly found, with their text, tags and the rank of the first relevant
item in each run; the questions only one run has; run-level numbers such as latency;
and a health line for each run. Two runs at different levels or on different gold sets
are refused before any of that (:func:`ragmeter.compare.comparable.check_comparable`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ragmeter.compare.comparable import check_comparable
from ragmeter.compare.comparison import (
    Comparison,
    MetricDelta,
    TagDelta,
    compare_runs,
    question_flips,
)
from ragmeter.compare.health import (
    Health,
    HealthThresholds,
    diagnose,
    health_lines,
    report_ceiling,
)
from ragmeter.compare.judges import JudgeRefusal, JudgeSide, judge_sides, refusals
from ragmeter.compare.markdown import DEFAULT_MAX_FLIPS
from ragmeter.errors import InputError
from ragmeter.evaluation.versions import version_differences
from ragmeter.run import RunInfo

if TYPE_CHECKING:
    from ragmeter.evaluation.report import RunReport
    from ragmeter.store import Store

__all__ = ["DEFAULT_MAX_FLIPS", "DEFAULT_TAG_DROP", "Flip", "RunDiff", "RunLevelDelta", "diff_runs"]

#: A tag that loses this much (absolute, on a 0-1 metric) while the total does not
#: get worse is flagged: one question in ten of the cluster went from found to lost.
DEFAULT_TAG_DROP = 0.1
_HIT = re.compile(r"^hit@(\d+)$")


@dataclass(frozen=True)
class Flip:
    """A question whose hit changed between the runs; ranks are ``None`` when nothing
    relevant came back."""

    id: str
    question: str
    tags: list[str]
    rank_a: int | None
    rank_b: int | None
    error_b: str | None = None


@dataclass(frozen=True)
class RunLevelDelta:
    """A number that exists per run only (latency percentiles): no paired test."""

    metric: str
    value_a: float
    value_b: float
    delta: float


@dataclass(frozen=True)
class RunDiff:
    """Run B compared with run A (``delta = B - A``); see :func:`diff_runs`."""

    a: RunInfo
    b: RunInfo
    comparison: Comparison
    flip_metric: str
    newly_missed: list[Flip]
    newly_found: list[Flip]
    run_level: list[RunLevelDelta]
    gold_differs: bool  # always False since issue 15.2 (refused); kept for JSON readers
    health_a: Health
    health_b: Health
    thresholds: HealthThresholds
    precision_ceilings: tuple[float | None, float | None] = (None, None)
    warnings: list[str] = field(default_factory=list)
    # "a"/"b" -> tag -> {"retrieval", "generation", "ok"}: where answers failed (issue 6)
    blame_by_tag: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    # "a"/"b" -> judge -> who judged; judge metrics not subtracted, and why (issue 17.6)
    judges: dict[str, dict[str, JudgeSide]] = field(default_factory=dict)
    judge_refusals: list[JudgeRefusal] = field(default_factory=list)

    @property
    def metrics(self) -> list[MetricDelta]:
        return self.comparison.metrics

    @property
    def tags(self) -> list[TagDelta]:
        return self.comparison.tags

    @property
    def flagged(self) -> list[TagDelta]:
        """Tags that got worse by at least the threshold while the metric did not."""
        return self.comparison.flagged

    @property
    def n(self) -> int:
        return self.comparison.n

    @property
    def primary(self) -> str:
        """The metric the per-tag table of a report shows (the flip metric if compared)."""
        names = [m.metric for m in self.metrics]
        return self.flip_metric if self.flip_metric in names else (names[0] if names else "")

    def label(self, which: str) -> str:
        run = self.a if which == "a" else self.b
        return f"run {run.id} {run.name}"

    def health_lines(self, which: str = "b") -> list[str]:
        run, ceiling = (self.a, self.precision_ceilings[0])
        if which == "b":
            run, ceiling = (self.b, self.precision_ceilings[1])
        return health_lines(run.metrics, self.thresholds, precision_ceiling=ceiling)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict: runs, metrics, tags, flags, flips, warnings, health."""
        out = self.comparison.to_dict()
        out.update(
            {
                "a": self.a.to_dict(),
                "b": self.b.to_dict(),
                "gold_differs": self.gold_differs,
                "flip_metric": self.flip_metric,
                "newly_missed": [asdict(f) for f in self.newly_missed],
                "newly_found": [asdict(f) for f in self.newly_found],
                "run_level": [asdict(r) for r in self.run_level],
                "warnings": list(self.warnings),
                "versions": {
                    "a": dict(self.a.config.get("versions") or {}),
                    "b": dict(self.b.config.get("versions") or {}),
                },
                "health": {"a": self.health_a.to_dict(), "b": self.health_b.to_dict()},
                "blame_by_tag": self.blame_by_tag,
                "judges": {
                    side: {j: v.to_dict() for j, v in by_judge.items()}
                    for side, by_judge in self.judges.items()
                },
                "judge_refusals": [r.to_dict() for r in self.judge_refusals],
            }
        )
        return out

    def _repr_html_(self) -> str:
        """The metrics table with intervals and the flips, in a notebook (issue 25.1)."""
        from ragmeter.compare.diff_html import diff_section

        return diff_section(self)

    def to_markdown(self, *, max_flips: int = DEFAULT_MAX_FLIPS, heading: str = "###") -> str:
        """A markdown report (GitHub flavoured): metrics, flagged clusters, tags, flips."""
        from ragmeter.compare.markdown import diff_markdown

        return diff_markdown(self, max_flips=max_flips, heading=heading)


def _canonical(names: Sequence[str]) -> list[str]:
    from ragmeter.metrics import parse_metric

    return list(dict.fromkeys(str(parse_metric(name)) for name in names))


def _ordered(names: Sequence[str], k: int) -> list[str]:
    """The run table's column order (``default_metrics``), then the rest sorted."""
    from ragmeter.evaluation.scoring import default_metrics

    rank = {name: i for i, name in enumerate(default_metrics(k, has_answers=True))}
    return sorted(names, key=lambda name: (rank.get(name, len(rank)), name))


def _flip_metric(
    qa: Mapping[str, Mapping[str, float]], qb: Mapping[str, Mapping[str, float]], k: int
) -> str | None:
    """The hit@N both runs have, with the largest N not above ``k`` (else the smallest)."""
    cutoffs = sorted(
        int(m.group(1)) for name in qa if name in qb and (m := _HIT.match(name)) is not None
    )
    if not cutoffs:
        return None
    within = [c for c in cutoffs if c <= k]
    return f"hit@{within[-1] if within else cutoffs[0]}"


def _flips(
    ra: RunReport, rb: RunReport, metric: str | None, k: int
) -> tuple[str, list[Flip], list[Flip]]:
    rows_a = {row.id: row for row in ra.rows}
    rows_b = {row.id: row for row in rb.rows}
    if metric is not None:
        missed, found = question_flips(ra.per_query, rb.per_query, metric)
    else:
        # No hit@N stored in both runs: judge "hit" by the first relevant rank.
        def hit(rank: int | None) -> bool:
            return rank is not None and rank <= k

        common = sorted(set(rows_a) & set(rows_b))
        pairs = [
            (i, hit(rows_a[i].first_relevant_rank), hit(rows_b[i].first_relevant_rank))
            for i in common
        ]
        missed = [i for i, x, y in pairs if x and not y]
        found = [i for i, x, y in pairs if y and not x]
        metric = f"hit@{k}"

    def flip(item: str) -> Flip:
        row_b, row_a = rows_b.get(item), rows_a.get(item)
        row = row_b or row_a
        return Flip(
            id=item,
            question=row.question if row else "",
            tags=list(row.tags) if row else [],
            rank_a=row_a.first_relevant_rank if row_a else None,
            rank_b=row_b.first_relevant_rank if row_b else None,
            error_b=row_b.error if row_b else None,
        )

    return metric, [flip(i) for i in missed], [flip(i) for i in found]


def diff_runs(
    store: Store,
    ref_a: int | str,
    ref_b: int | str,
    *,
    metrics: Sequence[str] | None = None,
    tag_drop_threshold: float = DEFAULT_TAG_DROP,
    seed: int = 0,
    thresholds: HealthThresholds | None = None,
) -> RunDiff:
    """Compare run ``ref_b`` with run ``ref_a`` (ids, names or ``latest``) in ``store``.

    ``metrics=None`` compares every per-question metric both runs stored, plus
    run-level numbers (latency percentiles) without a test. Runs at different levels or
    on different gold sets raise :class:`~ragmeter.errors.NotComparableError` (exit 2)
    before any statistics: a delta between them is a wrong number that looks right.

    >>> import ragmeter.evaluation.evaluate as ev
    >>> from ragmeter.gold.goldset import GoldSet
    >>> from ragmeter.store import Store
    >>> gold = GoldSet.from_records([{"id": "q1", "question": "refunds?",
    ...     "relevant": [{"doc": "refunds.md"}], "tags": ["policies"]}])
    >>> store = Store.memory()
    >>> _ = ev.evaluate(gold, lambda q, k: [{"doc": "faq.md"}], store=store, name="a", commit="")
    >>> _ = ev.evaluate(gold, lambda q, k: [{"doc": "refunds.md"}], store=store, name="b",
    ...                 commit="")
    >>> d = diff_runs(store, "a", "b", metrics=["hit@5"])
    >>> d.metrics[0].delta, [f.id for f in d.newly_found]
    (1.0, ['q1'])
    """
    from ragmeter.evaluation.brief import build_brief_report
    from ragmeter.gold.goldset import GoldSet

    run_a, run_b = store.get_run(ref_a), store.get_run(ref_b)
    check_comparable(run_a, run_b)
    # The diff reads no ranking: brief reports decode only the misses' (issue 29.1).
    gold = GoldSet.from_records(store.load_gold_records(run_b.gold_hash), name=run_b.name)
    rb = build_brief_report(store, run_b.id, gold=gold)
    same = run_a.gold_hash == run_b.gold_hash  # parsed once (comparable runs share it)
    ra = build_brief_report(store, run_a.id, gold=gold if same else None)
    labels = (f"A (run {run_a.id} {run_a.name})", f"B (run {run_b.id} {run_b.name})")

    per_question = set(ra.per_query) | set(rb.per_query)
    run_names = [m for m in run_a.metrics if m in run_b.metrics and m not in per_question]
    if metrics is None:
        wanted_q: list[str] = _ordered(
            [m for m in ra.per_query if m in rb.per_query], min(run_a.k, run_b.k)
        )
        wanted_run = _ordered(run_names, min(run_a.k, run_b.k))
    else:
        wanted = _canonical(metrics)
        if not wanted:
            raise InputError("no metric given to compare")
        wanted_q = [m for m in wanted if m in per_question]
        wanted_run = [m for m in wanted if m not in per_question]
        for name in wanted_run:
            if name not in run_names:
                where = "A" if name not in run_a.metrics else "B"
                run = run_a if where == "A" else run_b
                have = ", ".join(sorted(set(run.metrics) | per_question))
                raise InputError(
                    f'run {where} (run {run.id} {run.name}) has no metric "{name}" (it has: {have})'
                )

    # Judge metrics made by different judges are shown side by side, never subtracted.
    sides_a = judge_sides(store, run_a, list(ra.per_query))
    sides_b = judge_sides(store, run_b, list(rb.per_query))
    refused = [r for r in refusals(sides_a, sides_b) if r.metric in wanted_q]
    wanted_q = [m for m in wanted_q if m not in {r.metric for r in refused}]

    tags: dict[str, list[str]] = {row.id: list(row.tags) for row in ra.rows}
    tags.update({row.id: list(row.tags) for row in rb.rows})  # B's gold set is the current one
    if wanted_q == []:
        comparison = _empty_comparison(ra, rb, tag_drop_threshold, seed)
    else:
        comparison = compare_runs(
            ra.per_query,
            rb.per_query,
            tags=tags,
            metrics=wanted_q,
            tag_drop_threshold=tag_drop_threshold,
            seed=seed,
            labels=labels,
        )

    k = min(run_a.k, run_b.k)
    flip_metric, missed, found = _flips(ra, rb, _flip_metric(ra.per_query, rb.per_query, k), k)
    run_level = [
        RunLevelDelta(m, run_a.metrics[m], run_b.metrics[m], run_b.metrics[m] - run_a.metrics[m])
        for m in wanted_run
    ]

    warnings: list[str] = []
    gold_differs = False  # check_comparable refused a pair on different gold sets
    for side, only in (("A", comparison.only_a), ("B", comparison.only_b)):
        if only:
            shown = ", ".join(only[:5]) + (" …" if len(only) > 5 else "")
            warnings.append(f"{len(only)} questions only in run {side}, not compared: {shown}")
    for side, report in (("A", ra), ("B", rb)):
        if report.n_errors:
            warnings.append(
                f"run {side} has {report.n_errors} error rows (scored 0 on every metric)"
            )
    if run_a.k != run_b.k:
        warnings.append(f"the runs used different k ({run_a.k} vs {run_b.k})")
    changed = version_differences(
        run_a.config.get("versions") or {}, run_b.config.get("versions") or {}
    )
    if changed:
        warnings.append(
            "the runs used different versions of libraries that shape the numbers: "
            + ", ".join(changed)
        )

    for r in refused:
        means = (
            f"A {run_a.metrics.get(r.metric, 0.0):.3f}, B {run_b.metrics.get(r.metric, 0.0):.3f}"
        )
        warnings.append(f"{r.message()}: {means}")

    t = thresholds or HealthThresholds()
    ceilings = (report_ceiling(ra), report_ceiling(rb))
    return RunDiff(
        a=run_a,
        b=run_b,
        comparison=comparison,
        flip_metric=flip_metric,
        newly_missed=missed,
        newly_found=found,
        run_level=run_level,
        gold_differs=gold_differs,
        health_a=diagnose(run_a.metrics, t, precision_ceiling=ceilings[0]),
        health_b=diagnose(run_b.metrics, t, precision_ceiling=ceilings[1]),
        thresholds=t,
        precision_ceilings=ceilings,
        warnings=warnings,
        blame_by_tag=(
            {"a": ra.blame_by_tag, "b": rb.blame_by_tag}
            if ra.blame_by_tag or rb.blame_by_tag
            else {}
        ),
        judges={"a": sides_a, "b": sides_b},
        judge_refusals=refused,
    )


def _empty_comparison(ra: RunReport, rb: RunReport, threshold: float, seed: int) -> Comparison:
    """Only run-level metrics were asked for: no per-question statistics to compute."""
    ids_a = {row.id for row in ra.rows}
    ids_b = {row.id for row in rb.rows}
    return Comparison(
        n=len(ids_a & ids_b),
        only_a=sorted(ids_a - ids_b),
        only_b=sorted(ids_b - ids_a),
        metrics=[],
        tags=[],
        confidence=0.95,
        tag_drop_threshold=threshold,
        seed=seed,
    )
