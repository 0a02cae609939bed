"""Compare two runs question by question: metric deltas, per-tag regressions, flips.

Pure functions over per-question metric values (``metric -> item_id -> value``), so
``ragmeter diff`` and ``ragmeter gate`` only have to load two runs from the store
and hand them over. The statistics come from :mod:`ragmeter.compare.stats`:

- per metric: mean A, mean B, delta, a paired bootstrap confidence interval and a
  paired randomization test;
- per tag (cluster): n, means, delta, a t interval of the delta whose spread is at least
  the run's per-question spread (a tag of five borrows it, :func:`~ragmeter.compare.power.mean_interval`)
  and p, with Holm's correction across the tags of each metric, and a flag when a tag got
  worse by at least ``tag_drop_threshold`` *with evidence* (Holm-adjusted p < ``alpha``)
  although the metric as a whole did not get worse -- the regression an average hides;
- the minimum detectable effect of the run and of each tag (issue 26).

Only questions present in both runs are compared; the others are listed in
``only_a`` and ``only_b`` so a report can say so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ragmeter.compare.power import detectable_effect, mean_interval
from ragmeter.compare.stats import holm_adjust, paired_bootstrap_ci, paired_randomization_test
from ragmeter.errors import InputError
from ragmeter.metrics import lower_is_better

__all__ = [
    "Comparison",
    "MetricDelta",
    "Paired",
    "TagDelta",
    "compare_paired",
    "compare_runs",
    "paired_column",
    "question_flips",
]


PerQuery = Mapping[str, Mapping[str, float]]

#: Deltas are differences of means of floats; a tag that dropped by exactly the
#: threshold (0.1) must not escape the flag because it came out as -0.09999999999999998.
_FLAG_ATOL = 1e-12

CORRECTION_NOTE = (
    "per-tag p-values are Holm-adjusted across the tags of each metric; a tag's interval "
    "uses at least the run's per-question spread"
)


@dataclass(frozen=True, slots=True)
class MetricDelta:
    """One metric over the questions both runs share; ``delta = mean_b - mean_a``."""

    metric: str
    mean_a: float
    mean_b: float
    delta: float
    ci_low: float
    ci_high: float
    p_value: float
    exact: bool
    n: int = 0
    #: Spread (sd) of the per-question difference, and the smallest true change this many
    #: questions detect with 80% power (``None``: none at all), issue 26.
    sd: float = 0.0
    detectable: float | None = None


@dataclass(frozen=True, slots=True)
class TagDelta:
    """One metric within one tag (cluster); ``p_holm`` is adjusted across tags.

    ``ci_low``/``ci_high`` bound the delta (a t interval whose spread is at least the
    run's); ``detectable`` is the smallest true change the tag detects with 80% power
    after Holm's correction, ``None`` when it cannot detect any on its own.
    """

    tag: str
    metric: str
    n: int
    mean_a: float
    mean_b: float
    delta: float
    p_value: float
    p_holm: float
    flagged: bool
    ci_low: float = 0.0
    ci_high: float = 0.0
    detectable: float | None = None


@dataclass(frozen=True)
class Comparison:
    """The result of :func:`compare_runs`; ``to_dict()`` is ready for ``json.dumps``."""

    n: int
    only_a: list[str]
    only_b: list[str]
    metrics: list[MetricDelta]
    tags: list[TagDelta]
    confidence: float
    tag_drop_threshold: float
    seed: int
    correction: str = "holm"
    alpha: float = 0.05
    labels: tuple[str, str] = ("A", "B")
    notes: list[str] = field(default_factory=lambda: [CORRECTION_NOTE])

    @property
    def flagged(self) -> list[TagDelta]:
        """The tags that got worse by at least the threshold, with evidence (Holm-adjusted
        p < ``alpha``), while the total did not."""
        return [t for t in self.tags if t.flagged]

    def metric(self, name: str) -> MetricDelta:
        """The row of one metric, by its name as given to :func:`compare_runs`."""
        for row in self.metrics:
            if row.metric == name:
                return row
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict: plain lists, strings, numbers and booleans."""
        return {
            "labels": list(self.labels),
            "n": self.n,
            "only_a": list(self.only_a),
            "only_b": list(self.only_b),
            "confidence": self.confidence,
            "correction": self.correction,
            "tag_drop_threshold": self.tag_drop_threshold,
            "seed": self.seed,
            "alpha": self.alpha,
            "notes": list(self.notes),
            "metrics": [asdict(m) for m in self.metrics],
            "tags": [asdict(t) for t in self.tags],
            "flagged": [
                {
                    "tag": t.tag,
                    "metric": t.metric,
                    "delta": t.delta,
                    "ci_low": t.ci_low,
                    "ci_high": t.ci_high,
                    "p_holm": t.p_holm,
                }
                for t in self.flagged
            ],
        }


def _item_ids(run: PerQuery) -> set[str]:
    ids: set[str] = set()
    for values in run.values():
        ids.update(values)
    return ids


def _column(
    run: PerQuery, label: str, metric: str, items: Sequence[str]
) -> npt.NDArray[np.float64]:
    """The values of one metric for ``items``, with an error naming what is missing."""
    if metric not in run:
        raise InputError(f'run {label}: no values for metric "{metric}"')
    values = run[metric]
    out = np.empty(len(items), dtype=np.float64)
    for i, item in enumerate(items):
        if item not in values:
            raise InputError(f'run {label} item {item}: no value for metric "{metric}"')
        value = float(values[item])
        if not math.isfinite(value):
            raise InputError(f'run {label} item {item}: metric "{metric}" is {value}')
        out[i] = value
    return out


def compare_runs(
    per_query_a: PerQuery,
    per_query_b: PerQuery,
    *,
    tags: Mapping[str, Sequence[str]],
    metrics: Sequence[str] | None = None,
    tag_drop_threshold: float = 0.1,
    seed: int = 0,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    n_permutations: int = 10_000,
    labels: tuple[str, str] = ("A", "B"),
    alpha: float = 0.05,
) -> Comparison:
    """Compare run B with run A on the questions they share.

    ``per_query_a`` and ``per_query_b`` map metric -> item id -> value; ``tags`` maps
    item id -> its tags. ``metrics=None`` compares every metric present in both runs.
    Questions are taken in sorted id order, so the seeded statistics do not depend on
    dict order. ``labels`` name the runs in error messages. A tag is flagged only when its
    Holm-adjusted p is below ``alpha``: a flag is evidence, not noise (issue 26).

    >>> a = {"hit@5": {"q1": 1.0, "q2": 0.0, "q3": 1.0}}
    >>> b = {"hit@5": {"q1": 1.0, "q2": 1.0, "q4": 1.0}}
    >>> c = compare_runs(a, b, tags={"q2": ["colloquial"]}, metrics=["hit@5"])
    >>> c.n, c.only_a, c.only_b
    (2, ['q3'], ['q4'])
    >>> row = c.metric("hit@5")
    >>> row.mean_a, row.mean_b, row.delta, row.p_value
    (0.5, 1.0, 0.5, 1.0)
    >>> [(t.tag, t.delta, t.flagged) for t in c.tags]
    [('colloquial', 1.0, False)]
    """
    if tag_drop_threshold < 0:
        raise ValueError(f"tag_drop_threshold must be >= 0, got {tag_drop_threshold}")
    ids_a, ids_b = _item_ids(per_query_a), _item_ids(per_query_b)
    common = sorted(ids_a & ids_b)
    if not common:
        raise InputError(
            f"runs {labels[0]} and {labels[1]} have no questions in common; "
            "were they evaluated on the same gold set?"
        )
    explicit = metrics is not None
    if metrics is None:
        metrics = [m for m in per_query_a if m in per_query_b]
    if not metrics:
        raise InputError(f"runs {labels[0]} and {labels[1]} have no metric in common")
    columns = [
        column
        for metric in metrics
        if (column := paired_column(per_query_a, per_query_b, metric, common, labels, explicit))
        is not None
    ]
    return compare_paired(
        columns,
        n=len(common),
        only_a=sorted(ids_a - ids_b),
        only_b=sorted(ids_b - ids_a),
        tags=tags,
        tag_drop_threshold=tag_drop_threshold,
        seed=seed,
        confidence=confidence,
        n_resamples=n_resamples,
        n_permutations=n_permutations,
        labels=labels,
        alpha=alpha,
    )


@dataclass(frozen=True)
class Paired:
    """One metric's values in both runs on the questions compared for it (``items``, in
    sorted order; ``a[i]`` and ``b[i]`` belong to ``items[i]``)."""

    metric: str
    items: Sequence[str]
    a: npt.NDArray[np.float64]
    b: npt.NDArray[np.float64]


def paired_column(
    per_query_a: PerQuery,
    per_query_b: PerQuery,
    metric: str,
    common: Sequence[str],
    labels: tuple[str, str],
    explicit: bool,
) -> Paired | None:
    """``metric``'s paired values on the ``common`` questions (sorted) that have it.

    A metric defined for some questions only (answer_in_context@k needs answer_contains) is
    compared where both runs have it; a value present in one run and missing in the other is
    an error (:func:`_column` names it). None: the metric has no value on any common question
    (an error when the metric was asked for by name)."""
    items = [
        item
        for item in common
        if item in per_query_a.get(metric, {}) or item in per_query_b.get(metric, {})
    ]
    if not items and metric in per_query_a and metric in per_query_b:
        if explicit:
            raise InputError(
                f'runs {labels[0]} and {labels[1]}: metric "{metric}" has no value '
                "for any question they share"
            )
        return None
    items = items or list(common)  # let _column name the run that lacks the metric
    a = _column(per_query_a, labels[0], metric, items)
    b = _column(per_query_b, labels[1], metric, items)
    return Paired(metric, items, a, b)


def compare_paired(
    columns: Sequence[Paired],
    *,
    n: int,
    only_a: list[str],
    only_b: list[str],
    tags: Mapping[str, Sequence[str]],
    tag_drop_threshold: float = 0.1,
    seed: int = 0,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    n_permutations: int = 10_000,
    labels: tuple[str, str] = ("A", "B"),
    alpha: float = 0.05,
) -> Comparison:
    """:func:`compare_runs` on metric columns already paired (:class:`Paired`): the
    statistics per metric and per tag. ``n`` questions were compared; ``only_a`` and
    ``only_b`` are the ids one run lacks. A tag index is built once for columns that share
    their ``items`` (the same sequence object), so 100,000 questions cost one pass."""
    metric_rows: list[MetricDelta] = []
    tag_rows: list[TagDelta] = []
    groups: tuple[Sequence[str], dict[str, npt.NDArray[np.intp]]] | None = None
    for column in columns:
        metric, items, a, b = column.metric, column.items, column.a, column.b
        mean_a, mean_b = float(a.mean()), float(b.mean())
        delta = float(np.mean(b - a))
        low, high = paired_bootstrap_ci(
            a, b, confidence=confidence, n_resamples=n_resamples, seed=seed
        )
        test = paired_randomization_test(a, b, n_permutations=n_permutations, seed=seed)
        d = b - a
        sd = float(d.std(ddof=1)) if d.size > 1 else 0.0
        unit = bool(np.all((a >= 0.0) & (a <= 1.0) & (b >= 0.0) & (b <= 1.0)))
        mde = detectable_effect(sd, a.size, alpha=alpha, unit=unit)
        metric_rows.append(
            MetricDelta(
                metric, mean_a, mean_b, delta, low, high, test.p_value, test.exact, a.size, sd, mde
            )
        )
        if groups is None or groups[0] is not items:
            groups = (items, _tag_index(items, tags))
        raw: list[tuple[str, int, float, float, float, float, tuple[float, float]]] = []
        for tag, idx in groups[1].items():
            ta, tb = a[idx], b[idx]
            p = paired_randomization_test(ta, tb, n_permutations=n_permutations, seed=seed)
            span = mean_interval(tb - ta, confidence=confidence, pooled_sd=sd)
            if unit:  # B's mean lies in [0, 1], so the change lies in [-mean A, 1 - mean A]
                t_mean = float(ta.mean())
                span = (max(span[0], -t_mean), min(span[1], 1.0 - t_mean))
            raw.append(
                (
                    tag,
                    idx.size,
                    float(ta.mean()),
                    float(tb.mean()),
                    float(np.mean(tb - ta)),
                    p.p_value,
                    span,
                )
            )
        adjusted = holm_adjust([r[5] for r in raw])
        tests = len(raw)
        for (tag, size, t_a, t_b, t_delta, p_value, span), p_holm in zip(
            raw, adjusted, strict=True
        ):
            # A cluster that got worse, with evidence, while the total did not; for
            # hallucination and noise worse is up.
            sign = -1.0 if lower_is_better(metric) else 1.0
            flagged = (
                sign * delta >= 0.0
                and sign * t_delta <= -tag_drop_threshold + _FLAG_ATOL
                and p_holm < alpha
            )
            tag_mde = detectable_effect(sd, size, alpha=alpha, tests=tests, unit=unit)
            tag_rows.append(
                TagDelta(
                    tag, metric, size, t_a, t_b, t_delta, p_value, p_holm, flagged, *span, tag_mde
                )
            )

    return Comparison(
        n=n,
        only_a=only_a,
        only_b=only_b,
        metrics=metric_rows,
        tags=tag_rows,
        confidence=confidence,
        tag_drop_threshold=tag_drop_threshold,
        seed=seed,
        labels=labels,
        alpha=alpha,
    )


def _tag_index(
    items: Sequence[str], tags: Mapping[str, Sequence[str]]
) -> dict[str, npt.NDArray[np.intp]]:
    """Tag -> positions in ``items`` of its questions, tags sorted (a tag listed twice for
    one question counts once)."""
    by_tag: dict[str, list[int]] = {}
    for i, item in enumerate(items):
        for tag in dict.fromkeys(tags.get(item, ())):
            by_tag.setdefault(tag, []).append(i)
    return {tag: np.asarray(by_tag[tag]) for tag in sorted(by_tag)}


def question_flips(
    per_query_a: PerQuery,
    per_query_b: PerQuery,
    metric: str,
    *,
    labels: tuple[str, str] = ("A", "B"),
) -> tuple[list[str], list[str]]:
    """Questions newly missed (score > 0 in A, 0 in B) and newly found (0 in A, > 0 in B).

    Only questions present in both runs count; ids come back sorted. For ``hit@k``
    this is exactly "the right context left / entered the top k".

    >>> a = {"hit@5": {"q1": 1.0, "q2": 0.0, "q3": 1.0}}
    >>> b = {"hit@5": {"q1": 0.0, "q2": 1.0, "q3": 1.0}}
    >>> question_flips(a, b, "hit@5")
    (['q1'], ['q2'])
    """
    common = sorted(_item_ids(per_query_a) & _item_ids(per_query_b))
    a = _column(per_query_a, labels[0], metric, common)
    b = _column(per_query_b, labels[1], metric, common)
    missed = [item for item, x, y in zip(common, a, b, strict=True) if x > 0 and y == 0]
    found = [item for item, x, y in zip(common, a, b, strict=True) if x == 0 and y > 0]
    return missed, found
