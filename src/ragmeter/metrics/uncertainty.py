"""How far to trust a judge's numbers: interval estimators, pure numpy and seeded.

- :func:`wilson_interval` -- the Wilson score interval of a proportion (Wilson 1927), for
  the judge's agreement with people. Unlike ``p +- z * se`` it stays inside [0, 1] and
  keeps its coverage near 0 and 1 and for 20-50 labels (Brown, Cai & DasGupta 2001).
- :func:`labels_for_width` -- how many labels bring that interval under a width.
- :func:`kappa_bootstrap_ci` -- a percentile bootstrap interval of Cohen's kappa,
  resampling labelled items from their confusion table, lightly smoothed (issue 26).
- :func:`ppi_mean` -- prediction-powered inference of a judged mean (Angelopoulos et al.,
  *Science* 2023; ARES, Saad-Falcon et al., NAACL 2024): the judge's mean over every
  question, corrected by the mean human-minus-judge difference on the labelled ones, with
  a normal 95% interval.

They live in the lowest layer so the judge's calibration can use them;
:mod:`ragmeter.compare.stats` re-exports them beside the paired tests. The same inputs
and ``seed`` always give the same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "KAPPA_RESAMPLES",
    "JudgedMean",
    "kappa_bootstrap_ci",
    "labels_for_width",
    "UNIT_RANGE",
    "ppi_mean",
    "wilson_interval",
]

FloatArray = npt.NDArray[np.float64]

#: Bootstrap resamples for the kappa interval: the percentile ends then move by
#: well under 0.01 from one seed to another for 20-500 labels.
KAPPA_RESAMPLES = 2_000

#: A bootstrap resample in which both raters use a single label has no kappa
#: (p_e = 1). When more than this share of resamples has none, the interval is
#: not reported: the percentiles of the rest would describe a different sample.
_MAX_UNDEFINED_SHARE = 0.05

#: ``labels_for_width`` stops searching here (the Wilson width shrinks like 1/sqrt(n)).
_MAX_LABELS = 10_000_000


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson_interval(successes: int, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of the proportion ``successes / n``.

    With ``p = k/n`` and ``z`` the normal quantile of ``(1 + confidence) / 2``::

        centre = (p + z^2 / 2n) / (1 + z^2 / n)
        half   = z / (1 + z^2 / n) * sqrt(p (1 - p) / n + z^2 / 4n^2)

    This is ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``.

    >>> low, high = wilson_interval(17, 20)   # "85% agreement" on 20 labels
    >>> round(low, 3), round(high, 3)
    (0.64, 0.948)
    >>> wilson_interval(0, 10)[0]
    0.0
    """
    if isinstance(successes, bool) or isinstance(n, bool):
        raise ValueError("successes and n must be counts, not booleans")
    if n < 1:
        raise ValueError(f"a proportion needs at least one item, got n = {n}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must lie between 0 and n = {n}, got {successes}")
    z = _z(confidence)
    p = successes / n
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    # At k = 0 or k = n the bound is 0 or 1 in exact arithmetic; keep float noise out.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def labels_for_width(proportion: float, width: float, *, confidence: float = 0.95) -> int:
    """The fewest labels whose Wilson interval is at most ``width`` wide at ``proportion``.

    A planning figure: it assumes the observed proportion stays where it is.

    >>> labels_for_width(0.85, 0.10)
    196
    >>> labels_for_width(0.5, 1.0)
    1
    """
    if not 0.0 <= proportion <= 1.0:
        raise ValueError(f"proportion must lie in [0, 1], got {proportion}")
    if not 0.0 < width <= 1.0:
        raise ValueError(f"width must lie in (0, 1], got {width}")
    z = _z(confidence)

    def wide(n: int) -> float:
        # The Wilson width with a continuous count k = proportion * n.
        p, z2 = proportion, z * z
        return 2.0 * z / (1.0 + z2 / n) * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))

    high = 1
    while wide(high) > width:
        high *= 2
        if high > _MAX_LABELS:
            raise ValueError(f"no sample under {_MAX_LABELS} labels gets the width to {width}")
    low = high // 2
    while low + 1 < high:  # invariant: wide(low) > width >= wide(high), or low == 0
        middle = (low + high) // 2
        if wide(middle) > width:
            low = middle
        else:
            high = middle
    return high


def _codes(a: Sequence[Hashable], b: Sequence[Hashable]) -> tuple[npt.NDArray[np.intp], ...]:
    if len(a) != len(b):
        raise ValueError(f"the raters labelled {len(a)} and {len(b)} items")
    index: dict[Hashable, int] = {}
    for label in [*a, *b]:
        index.setdefault(label, len(index))
    codes_a = np.fromiter((index[x] for x in a), dtype=np.intp, count=len(a))
    codes_b = np.fromiter((index[x] for x in b), dtype=np.intp, count=len(b))
    return codes_a, codes_b, np.arange(len(index), dtype=np.intp)


#: Pseudo-items spread evenly over the cells of the confusion table before resampling
#: (issue 26): twenty labels that happen to agree perfectly no longer give the interval
#: [1, 1]. Two items (half an item per cell of a yes/no table) bring the coverage at 20
#: labels to 0.90-0.98 over prevalences 0.5-0.85 and agreement 0.8-0.95 (0.52-0.94
#: without); see benchmarks/gate_calibration.py.
KAPPA_PSEUDO_ITEMS = 2.0


def _table_kappas(tables: FloatArray) -> FloatArray:
    """Kappa of each ``K x K`` confusion table in ``tables`` (NaN where p_e = 1)."""
    total = tables.sum(axis=(1, 2))
    share = tables / total[:, None, None]
    observed = np.trace(share, axis1=1, axis2=2)
    expected = (share.sum(axis=2) * share.sum(axis=1)).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa: FloatArray = np.where(
            expected < 1.0, (observed - expected) / (1.0 - expected), np.nan
        )
    return kappa


def kappa_bootstrap_ci(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    confidence: float = 0.95,
    n_resamples: int = KAPPA_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Smoothed bootstrap interval of Cohen's kappa between two raters.

    The ``n`` labelled items are resampled ``n_resamples`` times from their confusion
    table with :data:`KAPPA_PSEUDO_ITEMS` spread over its cells (a multinomial draw of
    ``n`` items), and the interval is the ``(1 - confidence) / 2`` and
    ``(1 + confidence) / 2`` quantiles of the resampled kappas. The smoothing keeps a
    small sample without disagreement from claiming kappa is exactly 1. ``None`` when
    kappa itself is undefined (both raters use one label) or when more than 5% of the
    resamples have no kappa (too few items of the rarer label to say).

    >>> people = ["y"] * 12 + ["n"] * 8
    >>> judge = ["y"] * 11 + ["n"] + ["n"] * 6 + ["y"] * 2   # kappa = 0.68
    >>> low, high = kappa_bootstrap_ci(people, judge)
    >>> round(low, 2), round(high, 2)
    (0.24, 0.9)
    >>> kappa_bootstrap_ci(["y", "y"], ["y", "y"]) is None
    True
    """
    codes_a, codes_b, labels = _codes(a, b)
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    quantiles = [(1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0]
    _z(confidence)  # validates confidence
    n = codes_a.size
    k = labels.size
    table = np.zeros((k, k), dtype=np.float64)
    np.add.at(table, (codes_a, codes_b), 1.0)
    if n == 0 or np.isnan(_table_kappas(table[None])[0]):
        return None
    smoothed = (table + KAPPA_PSEUDO_ITEMS / (k * k)).ravel()
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, smoothed / smoothed.sum(), size=n_resamples)
    kappas = _table_kappas(draws.reshape(n_resamples, k, k).astype(np.float64))
    defined = kappas[~np.isnan(kappas)]
    if defined.size < (1.0 - _MAX_UNDEFINED_SHARE) * n_resamples:
        return None
    low, high = np.quantile(defined, quantiles)
    return float(low), float(high)


@dataclass(frozen=True, slots=True)
class JudgedMean:
    """A judged metric's mean, corrected by people's labels when there are any.

    ``judge_mean`` is the plain mean over ``n_total`` judged questions. With
    ``n_labels`` > 0, ``estimate`` is the prediction-powered estimate and
    ``interval`` its interval (``None`` below two labels: no variance to estimate).
    Without labels ``estimate`` is ``None`` and :attr:`status` is "uncalibrated".
    """

    judge_mean: float
    n_total: int
    n_labels: int
    estimate: float | None
    interval: tuple[float, float] | None
    confidence: float = 0.95
    #: True when the raw estimate or interval left the metric's range and was cut to it.
    clipped: bool = False

    @property
    def status(self) -> str:
        """``"corrected"`` with labels, ``"uncalibrated"`` without."""
        return "corrected" if self.n_labels else "uncalibrated"

    @property
    def correction(self) -> float | None:
        """``estimate - judge_mean``: minus the judge's bias on the labelled questions."""
        return None if self.estimate is None else self.estimate - self.judge_mean

    def describe(self) -> str:
        """One line for a report.

        >>> ppi_mean([1.0, 1.0, 0.0, 1.0], [], []).describe()
        '0.750 (uncalibrated: no labels)'
        """
        if self.estimate is None:
            return f"{self.judge_mean:.3f} (uncalibrated: no labels)"
        if self.interval is None:
            span = "no interval from one label"
        else:
            span = f"{self.confidence:.0%} interval {self.interval[0]:.3f}-{self.interval[1]:.3f}"
        cut = "; clipped to [0, 1]" if self.clipped else ""
        return (
            f"{self.estimate:.3f} corrected ({span}; judge {self.judge_mean:.3f}, "
            f"{self.n_labels} label{'' if self.n_labels == 1 else 's'}, {self.n_total} judged{cut})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "judge_mean": self.judge_mean,
            "estimate": self.estimate,
            "interval": list(self.interval) if self.interval is not None else None,
            "confidence": self.confidence,
            "n_labels": self.n_labels,
            "n_total": self.n_total,
            "status": self.status,
            "clipped": self.clipped,
        }


#: The range of every judge metric (a share of questions, claims or relevant chunks).
UNIT_RANGE = (0.0, 1.0)


def _finite(values: npt.ArrayLike, name: str) -> FloatArray:
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite (a NaN or inf would silently leave the mean)")
    return x


#: Pseudo-labels added at each end of the residual's range (issue 26): at 10 labels, half a
#: label that overturns the judge upwards and half one that overturns it downwards, like
#: Jeffreys' prior on the two kinds of disagreement; the weight shrinks as
#: ``RESIDUAL_PSEUDO_LABELS * sqrt(10 / n)`` so a hundred labels mostly speak for
#: themselves. Ten labels that happen to agree with a lenient judge (a 20% chance when it is
#: wrong 15% of the time) no longer collapse the interval onto the judge's biased mean;
#: benchmarks/gate_calibration.py measures >= 0.95 coverage at 10 labels for lenient and
#: harsh judges (0.65-0.89 without), and >= 0.93 from 10 to 50 labels.
RESIDUAL_PSEUDO_LABELS = 0.5
_PSEUDO_FULL_WEIGHT_LABELS = 10


def _smoothed_residual_variance(residual: FloatArray, bounds: tuple[float, float] | None) -> float:
    """``var(residual)``, but never below its variance with the pseudo-labels added."""
    plain = float(residual.var(ddof=1))
    if bounds is None:
        return plain
    reach = bounds[1] - bounds[0]  # the largest possible disagreement either way
    c = RESIDUAL_PSEUDO_LABELS * min(1.0, math.sqrt(_PSEUDO_FULL_WEIGHT_LABELS / residual.size))
    weight = residual.size + 2.0 * c
    total = float(residual.sum())  # the pseudo-labels +reach and -reach cancel
    squares = float((residual**2).sum()) + 2.0 * c * reach**2
    return max(plain, (squares - total**2 / weight) / (weight - 1.0))


def ppi_mean(
    judge_all: npt.ArrayLike,
    judge_labelled: npt.ArrayLike,
    human_labelled: npt.ArrayLike,
    *,
    confidence: float = 0.95,
    bounds: tuple[float, float] | None = UNIT_RANGE,
) -> JudgedMean:
    """Prediction-powered estimate of a mean from judge scores and a few human labels.

    ``judge_all`` holds the judge's score on all N questions; ``judge_labelled`` and
    ``human_labelled`` the judge's and the people's scores on the n labelled ones
    (paired, in the same order)::

        estimate = mean(judge_all) + mean(human_labelled - judge_labelled)
        variance = var(judge_all) / N + var(human_labelled - judge_labelled) / n
        interval = estimate +- z * sqrt(variance)

    (sample variances, ``ddof=1``; the residual's variance is never taken below its value
    with up to half a pseudo-label at each end of its range, :data:`RESIDUAL_PSEUDO_LABELS`, so
    a few labels that all agree with the judge do not claim the judge is unbiased). A judge that is 15 points too lenient has a mean
    human-minus-judge of about -0.15, which removes its bias; a perfect judge has none,
    so the estimate is the judge mean. Without labels the plain mean comes back
    "uncalibrated".

    The true mean lies in ``bounds`` (``[0, 1]`` for every judge metric), so an estimate
    or interval end outside it is cut to it and ``clipped`` says so: with few labels the
    correction can overshoot (one label overturning a 0.8 judge gives -0.2). Cutting an
    interval to a range the truth is known to lie in keeps its coverage; ``bounds=None``
    keeps the raw figures.

    >>> judge = [1, 1, 1, 1, 1, 1, 1, 1, 0, 0]          # the judge: 0.8
    >>> r = ppi_mean(judge, [1, 1, 1, 0], [1, 0, 1, 0])  # people overturn 1 of 4: -0.25
    >>> round(r.estimate, 3), [round(x, 3) for x in r.interval], r.n_labels, r.clipped
    (0.55, [0.0, 1.0], 4, True)
    >>> raw = ppi_mean(judge, [1, 1, 1, 0], [1, 0, 1, 0], bounds=None)
    >>> [round(x, 3) for x in raw.interval]
    [-0.005, 1.105]
    >>> ppi_mean(judge, [], []).status
    'uncalibrated'
    >>> one = ppi_mean(judge, [1], [0])                  # one label: -0.2, cut to 0
    >>> one.estimate, one.interval, one.clipped
    (0.0, None, True)
    """
    z = _z(confidence)
    every = _finite(judge_all, "judge_all")
    judged = _finite(judge_labelled, "judge_labelled")
    human = _finite(human_labelled, "human_labelled")
    if every.size == 0:
        raise ValueError("no judged questions: there is no mean to estimate")
    if judged.shape != human.shape:
        raise ValueError(
            f"labelled scores must be paired, got {judged.size} judge and {human.size} human"
        )
    judge_mean = float(every.mean())
    n = human.size
    if n == 0:
        return JudgedMean(judge_mean, every.size, 0, None, None, confidence)
    residual = human - judged
    estimate = judge_mean + float(residual.mean())
    interval: tuple[float, float] | None = None
    if n >= 2 and every.size >= 2:
        spread = _smoothed_residual_variance(residual, bounds)
        variance = float(every.var(ddof=1)) / every.size + spread / n
        half = z * math.sqrt(variance)
        interval = (estimate - half, estimate + half)
    clipped = False
    if bounds is not None:
        low, high = bounds
        raw = (estimate, *(interval or ()))
        estimate = min(max(estimate, low), high)
        if interval is not None:
            interval = (min(max(interval[0], low), high), min(max(interval[1], low), high))
        clipped = raw != (estimate, *(interval or ()))
    return JudgedMean(judge_mean, every.size, n, estimate, interval, confidence, clipped)
