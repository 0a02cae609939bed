"""The gate's three verdicts (issue 26): *fail*, *pass* or *inconclusive*, per metric and tag.

A drop is judged on evidence, not on its size alone:

- **fail** -- the observed drop is larger than the allowed drop *and* the paired
  randomization test says it is not noise: p < ``alpha`` for the whole run, the
  Holm-adjusted p < ``alpha`` across the tags of a metric. The test is exact when few
  questions changed, so a tag of five can never fail on its own (the smallest p it can
  reach is 0.0625); that is said, not hidden.
- **pass** -- the data rule a drop beyond the allowed one out: the end of the interval of
  the change on the "worse" side lies within the allowed drop (the paired bootstrap
  interval for the run, the pooled-spread t interval for a tag).
- **inconclusive** -- neither: the gold set is too small to tell. The verdict carries the
  minimum detectable effect so the reader knows what the set could have seen.

Why a test for *fail* and an interval for *pass*: ``benchmarks/gate_calibration.py``
measured both (docs/ci.md). Failing only when the whole interval lies beyond the allowed
drop halved the power against a true drop of 0.15 over 200 questions, and the bootstrap
interval of a tag of five is far too narrow to trust (it fails a tag whose five questions
all moved, p = 0.0625). The test against zero, required on top of an observed drop beyond
the allowed one, keeps the A/A false-fail rate under 5% and catches both.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ragmeter.compare.comparison import Comparison, MetricDelta, TagDelta, lower_is_better
from ragmeter.compare.power import exact_floor

__all__ = ["FAIL", "INCONCLUSIVE", "PASS", "Verdict", "decide"]

FAIL, PASS, INCONCLUSIVE = "fail", "pass", "inconclusive"
#: Floats: a drop of exactly the allowed amount passes even if it came out a hair larger.
_ATOL = 1e-12


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """One gated metric, over the whole run (``tag is None``) or one tag.

    ``worse`` is the observed change in the bad direction (a drop, or a rise of a
    lower-is-better metric); ``ci_low``/``ci_high`` bound ``delta = B - A``;
    ``detectable`` is the smallest true change this many questions detect with 80%
    power (``None``: none on their own).
    """

    metric: str
    tag: str | None
    n: int
    verdict: str
    delta: float
    worse: float
    allowed: float
    mean_a: float
    mean_b: float
    ci_low: float
    ci_high: float
    p_value: float
    detectable: float | None
    confidence: float = 0.95

    @property
    def where(self) -> str:
        return f'cluster "{self.tag}"' if self.tag is not None else self.metric

    def interval(self) -> str:
        return f"{self.confidence:.0%} CI [{self.ci_low:+.3f}, {self.ci_high:+.3f}]"

    def can_detect(self, alpha: float, tests: int) -> str:
        """``this tag can only detect drops >= 0.55`` or why it cannot detect any."""
        what = "this tag" if self.tag is not None else "this run"
        if self.detectable is None:
            need = exact_floor(alpha, tests)
            where = f"; its questions count in the run's {self.metric}" if self.tag else ""
            return (
                f"{what} is too small to decide alone: an exact test needs at least {need} "
                f"questions that all got worse, it has {self.n}{where}"
            )
        verb = "rises" if lower_is_better(self.metric) else "drops"
        return f"{what} can only detect {verb} >= {self.detectable:.2f}"

    def line(self, *, alpha: float = 0.05, tests: int = 1) -> str:
        """The sentence a report prints for this verdict."""
        verb = "rose" if lower_is_better(self.metric) else "dropped"
        scope = f"{self.metric} " if self.tag is not None else ""
        p_name = "Holm-adjusted " if self.tag is not None else ""
        means = f"{self.mean_a:.3f} -> {self.mean_b:.3f}"
        if self.verdict == FAIL:
            return (
                f"{self.where}: {scope}{verb} by {self.worse:.3f} ({means}, n = {self.n}; "
                f"{self.interval()}), more than the allowed {self.allowed:g} "
                f"({p_name}{_p(self.p_value)})"
            )
        head = f"{self.where}: {scope}{self.delta:+.3f} on {self.n} questions ({means}; {self.interval()})"
        if self.verdict == PASS:
            change = "rise" if lower_is_better(self.metric) else "drop"
            return f"{head}: a {change} beyond the allowed {self.allowed:g} is ruled out"
        return f"{head}: inconclusive ({p_name}{_p(self.p_value)}); {self.can_detect(alpha, tests)}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _verdict(
    row: MetricDelta | TagDelta,
    tag: str | None,
    allowed: float,
    p_value: float,
    ci: tuple[float, float],
    alpha: float,
    confidence: float,
) -> Verdict:
    bad = -1.0 if lower_is_better(row.metric) else 1.0  # +1: higher is better, a fall is worse
    worse = -bad * row.delta
    worst_end = max(-bad * ci[0], -bad * ci[1])  # the interval's end on the worse side
    if worse > allowed + _ATOL and p_value < alpha:
        verdict = FAIL
    elif worst_end <= allowed + _ATOL:
        verdict = PASS
    else:
        verdict = INCONCLUSIVE
    return Verdict(
        metric=row.metric,
        tag=tag,
        n=row.n,
        verdict=verdict,
        delta=row.delta,
        worse=worse,
        allowed=allowed,
        mean_a=row.mean_a,
        mean_b=row.mean_b,
        ci_low=ci[0],
        ci_high=ci[1],
        p_value=p_value,
        detectable=row.detectable,
        confidence=confidence,
    )


def decide(
    comparison: Comparison,
    *,
    max_drop: Mapping[str, float],
    tag_max_drop: float | None,
    tag_metrics: Collection[str],
    alpha: float = 0.05,
) -> list[Verdict]:
    """A verdict for each metric in ``max_drop`` and each tag of ``tag_metrics``.

    >>> from ragmeter.compare.comparison import compare_runs
    >>> a = {"hit@5": {f"q{i}": 1.0 for i in range(40)}}
    >>> b = {"hit@5": {f"q{i}": float(i >= 30) for i in range(40)}}   # 30 of 40 lost
    >>> c = compare_runs(a, b, tags={}, metrics=["hit@5"], n_resamples=1000)
    >>> [v.verdict for v in decide(c, max_drop={"hit@5": 0.02}, tag_max_drop=None,
    ...                            tag_metrics=())]
    ['fail']
    """
    out: list[Verdict] = []
    conf = comparison.confidence
    rows = {m.metric: m for m in comparison.metrics}
    for metric, allowed in max_drop.items():
        if metric in rows:
            m = rows[metric]
            out.append(_verdict(m, None, allowed, m.p_value, (m.ci_low, m.ci_high), alpha, conf))
    if tag_max_drop is not None:
        for t in comparison.tags:
            if t.metric in tag_metrics:
                span = (t.ci_low, t.ci_high)
                out.append(_verdict(t, t.tag, tag_max_drop, t.p_holm, span, alpha, conf))
    return out
