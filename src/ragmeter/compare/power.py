"""What a gold set can detect: small-sample intervals, detectable effects, questions needed.

Pure functions (numbers in, numbers out) behind the gate's three verdicts (issue 26):

- :func:`t_quantile` -- Student's t quantile without scipy (Cornish-Fisher expansion,
  Abramowitz & Stegun 26.7.5, within 0.01 of the exact value from 3 degrees of
  freedom; the closed forms at 1 and 2).
- :func:`mean_interval` -- the t interval of a mean paired difference, its spread taken as
  the larger of the sample's own and a pooled one. A tag of five questions that all kept
  their score has a sample spread of zero; claiming it therefore "cannot have dropped"
  would be a wrong number that looks right, so a tag borrows the run's per-question spread.
- :func:`exact_floor` -- the fewest questions that must all move the same way before the
  exact paired test can reach ``alpha`` (six at 0.05): below that no interval or p-value
  can make a tag fail on its own.
- :func:`detectable_effect` -- the minimum detectable effect (MDE): the smallest true
  change a paired comparison of ``n`` questions finds with ``power`` (80%) at ``alpha``,
  ``(z_(1-alpha/2) + z_power) * sd / sqrt(n)``, never below the exact floor.
- :func:`questions_needed` -- the same formula solved for ``n``; :func:`plan_power` puts
  both together for a gold set and its tags (``ragmeter gold power``).

The normal formula is the textbook one for a paired comparison (e.g. Sakai, *Statistical
Significance, Power, and Sample Sizes*, SIGIR 2016 tutorial); ``benchmarks/gate_calibration.py``
checks its figures against simulated pairs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from ragmeter.gold.goldset import GoldSet
    from ragmeter.store import Store

__all__ = [
    "ASSUMED_SD",
    "DEFAULT_POWER",
    "PowerPlan",
    "detectable_effect",
    "exact_floor",
    "gold_power",
    "mean_interval",
    "plan_power",
    "questions_needed",
    "t_quantile",
]

#: The power the detectable effect is quoted at (the usual planning figure).
DEFAULT_POWER = 0.8
#: Spread of a per-question difference on a 0-1 metric assumed when no run says better:
#: a metric near 0.5 and two runs that agree on half of their per-question variation.
ASSUMED_SD = 0.5


def _z(p: float) -> float:
    return NormalDist().inv_cdf(p)


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom.

    >>> round(t_quantile(0.975, 4), 2), round(t_quantile(0.975, 19), 3)
    (2.78, 2.093)
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must lie in (0, 1), got {p}")
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {df}")
    if math.isinf(df):
        return _z(p)
    if df == 1:  # Cauchy
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2.0 * p - 1.0) / math.sqrt(2.0 * p * (1.0 - p))
    z = _z(p)
    g1 = (z**3 + z) / 4.0
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96.0
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384.0
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160.0
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def mean_interval(
    d: npt.ArrayLike, *, confidence: float = 0.95, pooled_sd: float = 0.0
) -> tuple[float, float]:
    """A t interval of ``mean(d)`` with spread ``max(sd(d), pooled_sd)``.

    >>> mean_interval([0.0] * 5)                       # no spread anywhere: a point
    (0.0, 0.0)
    >>> low, high = mean_interval([0.0] * 5, pooled_sd=0.5)   # the run's spread instead
    >>> round(low, 2), round(high, 2)
    (-0.62, 0.62)
    """
    x = np.asarray(d, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError("a mean interval needs a 1-D array of at least one difference")
    centre = float(x.mean())
    sd = max(float(x.std(ddof=1)) if x.size > 1 else 0.0, pooled_sd)
    if sd == 0.0:
        return centre, centre
    half = t_quantile(0.5 + confidence / 2.0, max(x.size - 1, 1)) * sd / math.sqrt(x.size)
    return centre - half, centre + half


def exact_floor(alpha: float, tests: int = 1) -> int:
    """The fewest questions that must all move one way for a two-sided exact paired test
    to reach ``alpha / tests`` (Holm's first step over ``tests`` tags): ``2 / 2**m < level``.

    >>> exact_floor(0.05), exact_floor(0.05, tests=8)
    (6, 9)
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    level = alpha / max(tests, 1)
    return int(math.floor(math.log2(2.0 / level))) + 1


def _z_sum(alpha: float, power: float, tests: int) -> float:
    """``z_(1 - level/2) + z_power`` with ``level = alpha / tests`` (Holm's first step)."""
    level = alpha / max(tests, 1)
    return _z(1.0 - level / 2.0) + _z(power)


def detectable_effect(
    sd: float,
    n: int,
    *,
    alpha: float = 0.05,
    power: float = DEFAULT_POWER,
    tests: int = 1,
    unit: bool = True,
) -> float | None:
    """The smallest true change ``n`` paired questions detect with ``power`` at ``alpha``.

    ``sd`` is the spread of the per-question difference; ``tests`` the number of tags
    sharing Holm's correction. On a 0-1 metric (``unit``) a change also has to move at
    least :func:`exact_floor` questions, so the effect is never below ``floor / n``; ``None``
    when even losing every question could not be detected (a tag of five at 0.05).

    >>> round(detectable_effect(0.45, 200), 3), round(detectable_effect(0.45, 40), 3)
    (0.089, 0.199)
    >>> detectable_effect(0.45, 5) is None
    True
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    effect = _z_sum(alpha, power, tests) * sd / math.sqrt(n)
    if unit:
        floor = exact_floor(alpha, tests) / n
        if floor > 1.0:
            return None
        effect = max(effect, floor)
        if effect > 1.0:
            return None
    return effect


def questions_needed(
    sd: float,
    effect: float,
    *,
    alpha: float = 0.05,
    power: float = DEFAULT_POWER,
    tests: int = 1,
) -> int:
    """Paired questions needed to detect a true change of ``effect`` with ``power``.

    On a 0-1 metric a change of ``effect`` over ``n`` questions moves at least
    ``effect * n`` of them, which must reach :func:`exact_floor`.

    >>> questions_needed(0.5, 0.10)     # "to detect -0.10 you need ~197 questions"
    197
    >>> questions_needed(0.45, 0.5, tests=8)   # a tag, Holm over eight tags
    18
    """
    if effect <= 0:
        raise ValueError(f"the effect must be > 0, got {effect}")
    n = (_z_sum(alpha, power, tests) * sd / effect) ** 2
    return max(math.ceil(exact_floor(alpha, tests) / min(effect, 1.0)), math.ceil(n))


@dataclass(frozen=True)
class PowerPlan:
    """What a gold set can detect on one metric, and what a target effect would need.

    ``source`` says where the spread came from (a stored run, or the stated assumption).
    """

    metric: str
    n: int
    sd: float
    source: str
    effect: float
    power: float
    alpha: float
    detectable: float | None
    needed: int
    tags: list[dict[str, Any]] = field(default_factory=list)

    def lines(self) -> list[str]:
        """The plan in sentences, for the terminal."""
        can = (
            f"can detect changes of {self.metric} >= {self.detectable:.2f}"
            if self.detectable is not None
            else f"cannot detect any change of {self.metric}"
        )
        out = [
            f"{self.n} questions {can} with {self.power:.0%} power at alpha = {self.alpha:g} "
            f"(spread of a per-question difference {self.sd:.2f}, {self.source})",
            f"to detect -{self.effect:g} in {self.metric} with {self.power:.0%} power you need "
            f"~{self.needed} questions; you have {self.n}",
        ]
        for t in self.tags:
            alone = (
                f"detects >= {t['detectable']:.2f}"
                if t["detectable"] is not None
                else "cannot decide alone (its questions count in the run's test)"
            )
            out.append(
                f"  tag {t['tag']}: {t['n']} questions, {alone}; -{self.effect:g} needs "
                f"~{t['needed']} per tag"
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan_power(
    tag_sizes: Mapping[str, int],
    n: int,
    *,
    metric: str = "hit@5",
    values: npt.ArrayLike | None = None,
    source: str = "",
    effect: float = 0.10,
    power: float = DEFAULT_POWER,
    alpha: float = 0.05,
) -> PowerPlan:
    """What ``n`` questions (and each tag) detect, from a run's per-question ``values``.

    The spread of a paired difference is taken as the run's per-question spread (two runs
    whose per-question scores correlate at 0.5 have exactly that); without ``values`` it is
    :data:`ASSUMED_SD`, and the plan says so.

    >>> plan = plan_power({"colloquial": 5, "policies": 35}, 40)
    >>> plan.needed, round(plan.detectable, 2), plan.tags[0]["detectable"] is None
    (197, 0.22, True)
    """
    if n < 1:
        raise ValueError("the gold set has no questions")
    if not 0.0 < effect <= 1.0:
        raise ValueError(f"the target effect must lie in (0, 1], got {effect}")
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must lie in (0, 1), got {power}")
    if values is None:
        sd, why = ASSUMED_SD, f"assumed: {ASSUMED_SD} is the most a 0-1 metric near 0.5 gives"
    else:
        x = np.asarray(values, dtype=np.float64)
        if x.size < 2:
            raise ValueError("a run needs at least two questions to estimate a spread")
        sd = float(x.std(ddof=1))
        why = f"from {source or 'a run'}, assuming runs correlate at 0.5 per question"
    tests = len(tag_sizes)
    tags = [
        {
            "tag": tag,
            "n": size,
            "detectable": detectable_effect(sd, size, alpha=alpha, power=power, tests=tests),
            "needed": questions_needed(sd, effect, alpha=alpha, power=power, tests=tests),
        }
        for tag, size in sorted(tag_sizes.items())
    ]
    return PowerPlan(
        metric=metric,
        n=n,
        sd=sd,
        source=why,
        effect=effect,
        power=power,
        alpha=alpha,
        detectable=detectable_effect(sd, n, alpha=alpha, power=power),
        needed=questions_needed(sd, effect, alpha=alpha, power=power),
        tags=tags,
    )


def gold_power(
    gold_set: GoldSet,
    store: Store | None,
    run_ref: int | str | None = None,
    *,
    metric: str = "hit@5",
    effect: float = 0.10,
    power: float = DEFAULT_POWER,
    alpha: float = 0.05,
) -> PowerPlan:
    """:func:`plan_power` for a gold set, with the spread of a stored run when one is named.

    >>> from ragmeter.gold.goldset import GoldSet
    >>> gold = GoldSet.from_records([{"id": f"q{i}", "question": "?", "tags": ["faq"],
    ...     "relevant": [{"doc": "a.md"}]} for i in range(40)])
    >>> gold_power(gold, None).lines()[1]
    'to detect -0.1 in hit@5 with 80% power you need ~197 questions; you have 40'
    """
    from ragmeter.errors import InputError
    from ragmeter.metrics import parse_metric

    name = str(parse_metric(metric))
    summary = gold_set.summary()
    values: list[float] | None = None
    source = ""
    if store is not None and run_ref is not None:
        run = store.get_run(run_ref)
        stored = store.question_metrics(run.id, [name]).get(name)
        if not stored:
            have = ", ".join(sorted(store.question_metrics(run.id))) or "none"
            raise InputError(
                f'run {run.id} {run.name} has no per-question values of "{name}" (it has: {have})'
            )
        values = list(stored.values())
        source = f"run {run.id} {run.name}" + (
            "" if run.gold_hash == gold_set.hash else " (evaluated on another version of the set)"
        )
    try:
        return plan_power(
            dict(summary["tags"]),
            int(summary["items"]),
            metric=name,
            values=values,
            source=source,
            effect=effect,
            power=power,
            alpha=alpha,
        )
    except ValueError as error:
        raise InputError(str(error)) from None
