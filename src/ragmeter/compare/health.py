"""A one-line health check of a run and what to try next.

Thresholds from practice (configurable under ``[health]`` in ``ragmeter.toml``):

==================  =========  ==========================
metric              good       poor
==================  =========  ==========================
precision@5         >= 0.7     < 0.5: noisy context
recall@10           >= 0.8     < 0.6: missing answers
mrr                 >= 0.7     below: the answer ranks low
ndcg@5              >= 0.7     below
latency_p95_ms      < 500 ms   at or above: slow
==================  =========  ==========================

and the two diagnoses people act on: high precision with low recall means the
retriever is right when it finds something but often finds nothing -- widen the
search or change the chunk size; high recall with low precision means the answer
is there but buried -- add a re-ranker.

precision@5 cannot exceed (relevant items, at most 5) / 5: a question with one
relevant document scores at most 0.2. When the gold set has fewer than five
relevant items per question, pass ``precision_ceiling`` (see
:func:`precision_ceiling`) and precision is judged against what is achievable.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from operator import attrgetter
from typing import Any, Literal

from ragmeter.errors import ConfigError

__all__ = [
    "Check",
    "Health",
    "HealthThresholds",
    "diagnose",
    "format_health",
    "gold_ceiling",
    "health_lines",
    "precision_ceiling",
    "report_ceiling",
]

Status = Literal["good", "fair", "poor"]

#: Means are averages of floats: 140 * 0.2 / 200 must count as 0.14, not fall short.
_EPS = 1e-9


@dataclass(frozen=True)
class HealthThresholds:
    """Where good and poor start for each health metric.

    >>> HealthThresholds.from_mapping({"recall_good": 0.9}).recall_good
    0.9
    """

    precision_metric: str = "precision@5"
    precision_good: float = 0.7
    precision_noisy: float = 0.5
    recall_metric: str = "recall@10"
    recall_good: float = 0.8
    recall_low: float = 0.6
    mrr_metric: str = "mrr"
    mrr_good: float = 0.7
    ndcg_metric: str = "ndcg@5"
    ndcg_good: float = 0.7
    latency_metric: str = "latency_p95_ms"
    latency_p95_ms: float = 500.0

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> HealthThresholds:
        """Thresholds from a ``[health]`` table; unknown keys and bad types are errors."""
        known = {f.name: f for f in fields(cls)}
        out: dict[str, Any] = {}
        for key, value in values.items():
            if key not in known:
                raise ConfigError(f'unknown key "{key}" (known: {", ".join(known)})')
            if key.endswith("_metric"):
                if not isinstance(value, str) or not value:
                    raise ConfigError(f'"{key}" must be a metric name, got {value!r}')
                from ragmeter.metrics import parse_metric

                out[key] = str(parse_metric(value))
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(f'"{key}" must be a number, got {value!r}')
            if not math.isfinite(value) or value < 0:
                raise ConfigError(f'"{key}" must be a finite number >= 0, got {value!r}')
            out[key] = float(value)
        made = cls(**out)
        if made.precision_noisy > made.precision_good:
            raise ConfigError("precision_noisy must not exceed precision_good")
        if made.recall_low > made.recall_good:
            raise ConfigError("recall_low must not exceed recall_good")
        return made


@dataclass(frozen=True)
class Check:
    """One metric against its thresholds: ``label`` is what the health line says."""

    metric: str
    value: float
    status: Status
    label: str
    ceiling: float | None = None


@dataclass(frozen=True)
class Health:
    """The checks that could be made (metrics the run has) and the hints they lead to."""

    checks: list[Check] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)

    def check(self, metric: str) -> Check | None:
        return next((c for c in self.checks if c.metric == metric), None)

    def to_dict(self) -> dict[str, Any]:
        return {"checks": [asdict(c) for c in self.checks], "hints": list(self.hints)}


def precision_ceiling(relevant_counts: Iterable[int], k: int = 5) -> float | None:
    """The best precision@k achievable: mean of ``min(relevant, k) / k`` over questions.

    >>> precision_ceiling([1, 1, 2, 6])   # (0.2 + 0.2 + 0.4 + 1.0) / 4
    0.45
    >>> precision_ceiling([]) is None
    True
    """
    counts = list(relevant_counts)
    if not counts:
        return None
    # Each distinct count's share worked out once, summed in the questions' order (29.1).
    share = {c: min(max(c, 0), k) / k for c in set(counts)}
    return round(sum(map(share.__getitem__, counts)) / len(counts), 12)


def _value(metrics: Mapping[str, float | None], name: str) -> float | None:
    value = metrics.get(name)
    if value is None or not math.isfinite(float(value)):
        return None
    return float(value)


def diagnose(
    metrics: Mapping[str, float | None],
    thresholds: HealthThresholds | None = None,
    *,
    precision_ceiling: float | None = None,
) -> Health:
    """Judge a run's metric means against ``thresholds`` and say what to try next.

    Metrics the run does not have are left out (a run at k=5 has no recall@10).

    >>> h = diagnose({"precision@5": 0.8, "recall@10": 0.4})
    >>> [(c.metric, c.label) for c in h.checks]
    [('precision@5', 'good'), ('recall@10', 'missing answers')]
    >>> h.hints[0].startswith("high precision, low recall")
    True
    """
    t = thresholds or HealthThresholds()
    checks: list[Check] = []
    hints: list[str] = []

    precision = _value(metrics, t.precision_metric)
    judged_precision: float | None = None
    if precision is not None:
        ceiling = precision_ceiling if precision_ceiling and precision_ceiling < 1.0 else None
        judged_precision = min(precision / ceiling, 1.0) if ceiling else precision
        if judged_precision >= t.precision_good - _EPS:
            checks.append(Check(t.precision_metric, precision, "good", "good", ceiling))
        elif judged_precision < t.precision_noisy - _EPS:
            checks.append(Check(t.precision_metric, precision, "poor", "noisy", ceiling))
        else:
            checks.append(Check(t.precision_metric, precision, "fair", "fair", ceiling))

    recall = _value(metrics, t.recall_metric)
    if recall is not None:
        if recall >= t.recall_good - _EPS:
            checks.append(Check(t.recall_metric, recall, "good", "good"))
        elif recall < t.recall_low - _EPS:
            checks.append(Check(t.recall_metric, recall, "poor", "missing answers"))
        else:
            checks.append(Check(t.recall_metric, recall, "fair", "fair"))

    mrr = _value(metrics, t.mrr_metric)
    if mrr is not None:
        good = mrr >= t.mrr_good - _EPS
        label = "good" if good else f"below {t.mrr_good:g}"
        checks.append(Check(t.mrr_metric, mrr, "good" if good else "poor", label))

    ndcg = _value(metrics, t.ndcg_metric)
    if ndcg is not None:
        good = ndcg >= t.ndcg_good - _EPS
        label = "good" if good else f"below {t.ndcg_good:g}"
        checks.append(Check(t.ndcg_metric, ndcg, "good" if good else "poor", label))

    latency = _value(metrics, t.latency_metric)
    if latency is not None:
        fast = latency < t.latency_p95_ms
        checks.append(
            Check(t.latency_metric, latency, "good" if fast else "poor", "good" if fast else "slow")
        )

    if judged_precision is not None and recall is not None:
        if judged_precision >= t.precision_good - _EPS and recall < t.recall_low - _EPS:
            hints.append(
                "high precision, low recall: what comes back is right, but too often the "
                "answer does not come back at all -- widen the search (larger k, hybrid or "
                "query rewriting) or change the chunk size"
            )
        elif recall >= t.recall_good - _EPS and judged_precision < t.precision_noisy - _EPS:
            hints.append(
                "high recall, low precision: the answer is retrieved but buried in noise -- "
                "add a re-ranker"
            )
        elif recall < t.recall_low - _EPS and judged_precision < t.precision_noisy - _EPS:
            hints.append(
                "low recall and low precision: start with the basics -- chunking, the "
                "retriever's fields and tokenization, and whether the gold documents are "
                "in the corpus"
            )
    if (
        recall is not None
        and mrr is not None
        and recall >= t.recall_low - _EPS
        and mrr < t.mrr_good - _EPS
    ):
        hints.append(
            f"the right context is found but ranks low (mrr {mrr:.2f}): a re-ranker moves it up"
        )
    if latency is not None and latency >= t.latency_p95_ms:
        hints.append(
            f"retrieval p95 {latency:.0f} ms is at or above {t.latency_p95_ms:g} ms: cache, "
            "shrink the candidate set or tune the index"
        )
    return Health(checks, hints)


def _format(check: Check, thresholds: HealthThresholds) -> str:
    if check.metric == thresholds.latency_metric:
        return f"p95 {check.value:.0f} ms {check.label}"
    of = f" (max {check.ceiling:.2f})" if check.ceiling is not None else ""
    return f"{check.metric} {check.value:.2f}{of} {check.label}"


def health_lines(
    metrics: Mapping[str, float | None],
    thresholds: HealthThresholds | None = None,
    *,
    precision_ceiling: float | None = None,
) -> list[str]:
    """The health line of a run and one line per hint (empty when nothing applies).

    >>> for line in health_lines({"precision@5": 0.3, "recall@10": 0.9, "mrr": 0.75,
    ...                           "ndcg@5": 0.72, "latency_p95_ms": 120.0}):
    ...     print(line)
    health: precision@5 0.30 noisy · recall@10 0.90 good · mrr 0.75 good · ndcg@5 0.72 good · p95 120 ms good
    hint: high recall, low precision: the answer is retrieved but buried in noise -- add a re-ranker
    """
    t = thresholds or HealthThresholds()
    return format_health(diagnose(metrics, t, precision_ceiling=precision_ceiling), t)


def format_health(health: Health, thresholds: HealthThresholds | None = None) -> list[str]:
    """The lines of a :class:`Health` already made: what ``show`` prints of the same checks
    that ``--json`` gives (issue 25.1: printing and JSON cannot disagree).

    >>> format_health(diagnose({"precision@5": 0.2}, precision_ceiling=0.2))
    ['health: precision@5 0.20 (max 0.20) good']
    """
    t = thresholds or HealthThresholds()
    if not health.checks:
        return []
    lines = ["health: " + " · ".join(_format(c, t) for c in health.checks)]
    lines += [f"hint: {hint}" for hint in health.hints]
    return lines


def report_ceiling(report: Any) -> float | None:
    """The precision ceiling of a report's gold set at doc level; None at chunk level, where
    the relevant chunks per question depend on the chunking and are not known.

    >>> from types import SimpleNamespace as NS
    >>> report_ceiling(NS(run=NS(level="doc"), rows=[NS(expected=["a.md", "b.md"])]))
    0.4
    """
    from ragmeter.evaluation.lazy_rows import light  # a brief report's rows stay unbuilt

    level = getattr(report.run, "level", None)
    if level != "doc":
        return None
    return gold_ceiling(level, map(len, map(attrgetter("expected"), light(report.rows))))


def gold_ceiling(level: str | None, relevant_counts: Iterable[int]) -> float | None:
    """:func:`precision_ceiling` of a gold set's relevant documents per question, at doc
    level; None at chunk or passage level.

    >>> gold_ceiling("doc", [2, 1]), gold_ceiling("passage", [2, 1])
    (0.3, None)
    """
    if level != "doc":
        return None
    return precision_ceiling(relevant_counts)
