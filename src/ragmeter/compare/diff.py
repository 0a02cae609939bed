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
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ragmeter.compare.comparable import check_comparable
from ragmeter.compare.comparison import Comparison, MetricDelta, TagDelta, compare_paired
from ragmeter.compare.health import (
    Health,
    HealthThresholds,
    diagnose,
    gold_ceiling,
    health_lines,
)
from ragmeter.compare.markdown import DEFAULT_MAX_FLIPS
from ragmeter.compare.stored import StoredPairs, first_ranks
from ragmeter.errors import InputError
from ragmeter.evaluation.versions import version_differences
from ragmeter.judging.judge_sides import JudgeRefusal, JudgeSide, judge_sides, refusals
from ragmeter.run import RunInfo

if TYPE_CHECKING:
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


def _flip_metric(qa: Collection[str], qb: Collection[str], k: int) -> str | None:
    """The hit@N both runs have, with the largest N not above ``k`` (else the smallest)."""
    cutoffs = sorted(
        int(m.group(1)) for name in qa if name in qb and (m := _HIT.match(name)) is not None
    )
    if not cutoffs:
        return None
    within = [c for c in cutoffs if c <= k]
    return f"hit@{within[-1] if within else cutoffs[0]}"


def _flips(
    store: Store,
    run_a: RunInfo,
    run_b: RunInfo,
    items: Sequence[Any],
    pairs: StoredPairs,
    k: int,
) -> tuple[str, list[Flip], list[Flip]]:
    """Questions newly missed and newly found, on the flip metric (a hit@N both runs have)
    or, without one, on each question's first relevant rank within ``k``."""
    by_id = {item.id: item for item in items}
    if pairs.flips is not None:
        x, y, ids = pairs.flips.a, pairs.flips.b, pairs.flips.items
        missed = [ids[i] for i in np.flatnonzero((x > 0) & (y == 0)).tolist()]
        found = [ids[i] for i in np.flatnonzero((x == 0) & (y > 0)).tolist()]
        ranks_a = first_ranks(store, run_a, missed + found)
        ranks_b = first_ranks(store, run_b, missed + found)
        metric = pairs.flips.metric
    else:
        # No hit@N stored in both runs: judge "hit" by the first relevant rank.
        every = sorted(by_id)
        ranks_a, ranks_b = first_ranks(store, run_a, every), first_ranks(store, run_b, every)

        def hit(rank: int | None) -> bool:
            return rank is not None and rank <= k

        pairs_ = [(i, hit(ranks_a[i][0]), hit(ranks_b[i][0])) for i in every]
        missed = [i for i, x_, y_ in pairs_ if x_ and not y_]
        found = [i for i, x_, y_ in pairs_ if y_ and not x_]
        metric = f"hit@{k}"

    def flip(item: str) -> Flip:
        gold = by_id.get(item)
        return Flip(
            id=item,
            question=gold.question if gold is not None else "",
            tags=list(gold.tags) if gold is not None else [],
            rank_a=ranks_a[item][0],
            rank_b=ranks_b[item][0],
            error_b=ranks_b[item][1],
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
    from ragmeter.compare.stored import read_pairs
    from ragmeter.gold.stored import stored_items

    run_a, run_b = store.get_run(ref_a), store.get_run(ref_b)
    check_comparable(run_a, run_b)  # so both runs share one gold set
    # The diff reads each metric as two columns and no ranking (issue 29.1).
    items = stored_items(store.load_gold_records(run_b.gold_hash), name=run_b.name)
    labels = (f"A (run {run_a.id} {run_a.name})", f"B (run {run_b.id} {run_b.name})")
    names_a = store.question_metric_names(run_a.id)
    names_b = store.question_metric_names(run_b.id)

    per_question = set(names_a) | set(names_b)
    run_names = [m for m in run_a.metrics if m in run_b.metrics and m not in per_question]
    if metrics is None:
        wanted_q: list[str] = _ordered([m for m in names_a if m in names_b], min(run_a.k, run_b.k))
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
    sides_a = judge_sides(store, run_a, names_a)
    sides_b = judge_sides(store, run_b, names_b)
    refused = [r for r in refusals(sides_a, sides_b) if r.metric in wanted_q]
    wanted_q = [m for m in wanted_q if m not in {r.metric for r in refused}]

    k = min(run_a.k, run_b.k)
    flip_name = _flip_metric(names_a, names_b, k)
    pairs = read_pairs(store, run_a, run_b, (names_a, names_b), wanted_q, flip_metric=flip_name,
                       labels=labels, explicit=True)  # fmt: skip
    tags: dict[str, list[str]] = {item.id: list(item.tags) for item in items}
    if wanted_q == []:
        comparison = _empty_comparison([item.id for item in items], tag_drop_threshold, seed)
    else:
        comparison = compare_paired(pairs.columns, n=len(pairs.common), only_a=pairs.only_a,
                                    only_b=pairs.only_b, tags=tags, labels=labels,
                                    tag_drop_threshold=tag_drop_threshold, seed=seed)  # fmt: skip

    flip_metric, missed, found = _flips(store, run_a, run_b, items, pairs, k)
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
    for side, run in (("A", run_a), ("B", run_b)):
        answered = store.completed_items(run.id, include_errors=False)
        n_errors = sum(item.id not in answered for item in items)  # failed or not evaluated
        if n_errors:
            warnings.append(f"run {side} has {n_errors} error rows (scored 0 on every metric)")
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
    expected = [len({r.doc_id for r in item.relevant if r.grade > 0}) for item in items]
    ceilings = (gold_ceiling(run_a.level, expected), gold_ceiling(run_b.level, expected))
    blame = {side: _blame_by_tag(store, run, items) for side, run in (("a", run_a), ("b", run_b))}
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
        blame_by_tag=blame if blame["a"] or blame["b"] else {},
        judges={"a": sides_a, "b": sides_b},
        judge_refusals=refused,
    )


def _blame_by_tag(store: Store, run: RunInfo, items: Sequence[Any]) -> dict[str, dict[str, int]]:
    """Where answers failed, per tag (empty for a run without answers)."""
    if not store.has_answers(run.id):
        return {}
    from ragmeter.evaluation.brief import build_brief_report

    return build_brief_report(store, run.id, gold=items, per_query=False).blame_by_tag


def _empty_comparison(ids: list[str], threshold: float, seed: int) -> Comparison:
    """Only run-level metrics were asked for: no per-question statistics to compute (both
    runs have a row for every question of their shared gold set)."""
    return Comparison(
        n=len(set(ids)),
        only_a=[],
        only_b=[],
        metrics=[],
        tags=[],
        confidence=0.95,
        tag_drop_threshold=threshold,
        seed=seed,
    )
