"""Honest small-sample statistics for comparing two runs question by question.

Everything here is pure (numpy in, numbers out) and seeded, so the same inputs
always give the same interval and the same p-value.

Two runs over the same questions give *paired* scores ``a[i]`` and ``b[i]``;
what we care about is the per-question difference ``d = b - a``:

- :func:`paired_bootstrap_ci` -- a percentile bootstrap interval for ``mean(d)``,
  resampling questions with replacement (Efron & Tibshirani 1993, ch. 13).
- :func:`paired_randomization_test` -- the paired sign-flip test of
  ``mean(d) == 0`` (Fisher 1935; Smucker, Allan & Carterette, CIKM 2007, who
  recommend it for IR evaluation). Exact when few questions differ.
- :func:`holm_adjust` -- Holm (1979) step-down adjusted p-values, for the
  per-tag family of tests.

The judge's uncertainty (issue 17) is re-exported from :mod:`ragmeter.metrics.uncertainty`,
which sits in the lowest layer so the judge's calibration can use it:
:func:`wilson_interval`, :func:`labels_for_width`, :func:`kappa_bootstrap_ci` and
:func:`ppi_mean` (prediction-powered inference of a judged mean, :class:`JudgedMean`).

Why the percentile interval and not BCa: metric deltas are bounded and often
take a handful of values (hit@k deltas are -1, 0 or 1), where BCa's jackknife
acceleration is itself noisy for 30-200 questions; the percentile interval keeps
its nominal coverage in our simulations (``tests/compare/test_stats.py``) and is easy to
explain in a report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ragmeter.metrics.uncertainty import (
    KAPPA_RESAMPLES,
    JudgedMean,
    kappa_bootstrap_ci,
    labels_for_width,
    ppi_mean,
    wilson_interval,
)

__all__ = [
    "KAPPA_RESAMPLES",
    "MAX_EXACT_THRESHOLD",
    "JudgedMean",
    "RandomizationResult",
    "holm_adjust",
    "kappa_bootstrap_ci",
    "labels_for_width",
    "paired_bootstrap_ci",
    "paired_randomization_test",
    "ppi_mean",
    "wilson_interval",
]

FloatArray = npt.NDArray[np.float64]

#: Work on at most this many matrix cells at a time (8 MB of float64), so
#: 10,000 resamples of 10,000 questions do not need 800 MB.
_CHUNK_CELLS = 1_000_000

#: Resample the distinct differences (multinomial / binomial counts) instead of the
#: questions when there are at most 1/_FEW_DISTINCT as many: a binary metric has three
#: (-1, 0, +1), so a 100k-question diff costs what a 30-question one does (issue 29.1).
_FEW_DISTINCT = 4

#: Exact enumeration visits 2**m sign patterns; past 2**24 (16.7 M) Monte Carlo
#: with 10,000+ permutations is as good and far cheaper.
MAX_EXACT_THRESHOLD = 24

#: Two sign patterns whose sums are equal in exact arithmetic can differ by float
#: rounding (~m * 2.2e-16 relative to sum|d|); count values within this relative
#: distance of the observed statistic as ties. Distinct sums of metric deltas
#: differ by far more than this.
_TIE_RTOL = 1e-10


@dataclass(frozen=True, slots=True)
class RandomizationResult:
    """The outcome of :func:`paired_randomization_test`.

    ``exact`` is true when all ``n_permutations`` = 2**m sign patterns of the m
    non-zero differences were enumerated; otherwise ``n_permutations`` random
    patterns were drawn and ``p_value`` includes the +1 correction.
    """

    p_value: float
    exact: bool
    n_permutations: int


def _paired(a: npt.ArrayLike, b: npt.ArrayLike) -> FloatArray:
    """Validate two paired score vectors and return ``b - a``."""
    xa = np.asarray(a, dtype=np.float64)
    xb = np.asarray(b, dtype=np.float64)
    if xa.ndim != 1 or xb.ndim != 1:
        raise ValueError(f"scores must be 1-D arrays, got shapes {xa.shape} and {xb.shape}")
    if xa.shape != xb.shape:
        raise ValueError(
            f"paired scores need the same number of questions, got {xa.size} and {xb.size}"
        )
    if xa.size == 0:
        raise ValueError("no questions to compare")
    if not (np.all(np.isfinite(xa)) and np.all(np.isfinite(xb))):
        raise ValueError("scores must be finite (a NaN or inf would silently leave the mean)")
    d: FloatArray = xb - xa
    return d


def _chunks(total: int, width: int) -> list[int]:
    """Row counts of successive blocks of a ``total x width`` matrix."""
    rows = max(1, _CHUNK_CELLS // max(width, 1))
    return [min(rows, total - start) for start in range(0, total, rows)]


def paired_bootstrap_ci(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of ``mean(b - a)``.

    Questions are resampled with replacement, keeping each question's pair
    together, ``n_resamples`` times; the interval is the ``(1 - confidence) / 2``
    and ``(1 + confidence) / 2`` quantiles of the resampled mean differences.
    The same ``seed`` always gives the same interval.

    >>> a = [0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    >>> b = [1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0]
    >>> paired_bootstrap_ci(a, b)   # mean(b - a) = 0.375
    (0.125, 0.75)
    >>> paired_bootstrap_ci(a, a)
    (0.0, 0.0)
    """
    d = _paired(a, b)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    n = d.size
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples, dtype=np.float64)
    start = 0
    values, counts = np.unique(d, return_counts=True)
    if values.size * _FEW_DISTINCT <= n:
        # How often each distinct difference is drawn in n draws with replacement is
        # multinomial: the same distribution of the mean, in time independent of n.
        for rows in _chunks(n_resamples, values.size):
            drawn = rng.multinomial(n, counts / n, size=rows)
            means[start : start + rows] = (drawn @ values) / n
            start += rows
    else:
        for rows in _chunks(n_resamples, n):
            idx = rng.integers(0, n, size=(rows, n))
            means[start : start + rows] = d[idx].mean(axis=1)
            start += rows
    alpha = 1.0 - confidence
    low, high = np.quantile(means, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(low), float(high)


def _sign_flip_sums(d: FloatArray, flips: npt.NDArray[np.uint8]) -> FloatArray:
    """``|sum(s * d)|`` for each row of 0/1 flip indicators (1 = flip the sign)."""
    # sum(s * d) = sum(d) - 2 * sum(d[flipped]); one BLAS mat-vec per block.
    flipped: FloatArray = flips.astype(np.float64) @ d
    out: FloatArray = np.abs(d.sum() - 2.0 * flipped)
    return out


def paired_randomization_test(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    n_permutations: int = 10_000,
    seed: int = 0,
    exact_threshold: int = 16,
) -> RandomizationResult:
    """Two-sided paired sign-flip (randomization) test of ``mean(b - a) == 0``.

    Under the null hypothesis each question's difference ``d = b - a`` is as
    likely to have had the opposite sign, so the observed ``|mean(d)|`` is
    compared with its values under sign flips. Questions with ``d == 0`` do not
    change under a flip and are dropped. With ``m`` non-zero differences:

    - ``m <= exact_threshold``: all ``2**m`` flips are enumerated and
      ``p = #{|stat| >= observed} / 2**m`` (exact);
    - otherwise ``n_permutations`` random flips and
      ``p = (1 + #{|stat| >= observed}) / (1 + n_permutations)``, which never
      reports ``p = 0`` and is a valid p-value (Phipson & Smyth 2010).

    Values within a tiny relative tolerance of the observed statistic count as
    ties, so float rounding cannot move a tie either way. Identical runs give
    ``p = 1``. This is the test ``scipy.stats.permutation_test`` performs with
    ``permutation_type="samples"`` on the statistic ``mean(b - a)``.

    >>> a = [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    >>> b = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    >>> r = paired_randomization_test(a, b)
    >>> r.p_value, r.exact, r.n_permutations   # 2 of 32 flips are as extreme
    (0.0625, True, 32)
    >>> paired_randomization_test(a, a).p_value
    1.0
    """
    d_all = _paired(a, b)
    if n_permutations < 1:
        raise ValueError(f"n_permutations must be at least 1, got {n_permutations}")
    if not 0 <= exact_threshold <= MAX_EXACT_THRESHOLD:
        raise ValueError(
            f"exact_threshold must be between 0 and {MAX_EXACT_THRESHOLD}, got {exact_threshold}"
        )
    d = d_all[d_all != 0.0]
    m = d.size
    if m == 0:
        return RandomizationResult(p_value=1.0, exact=True, n_permutations=1)
    observed = abs(float(d.sum()))
    # Ties: see _TIE_RTOL. A sum over sign flips never exceeds sum|d|, so this
    # scale bounds the rounding error of every statistic we compute.
    cutoff = observed - _TIE_RTOL * float(np.abs(d).sum())

    if m <= exact_threshold:
        total = 1 << m
        bit = np.arange(m, dtype=np.int64)
        hits = 0
        start = 0
        for rows in _chunks(total, m):
            codes = np.arange(start, start + rows, dtype=np.int64)
            flips = ((codes[:, None] >> bit) & 1).astype(np.uint8)
            hits += int(np.count_nonzero(_sign_flip_sums(d, flips) >= cutoff))
            start += rows
        return RandomizationResult(p_value=hits / total, exact=True, n_permutations=total)

    rng = np.random.default_rng(seed)
    values, counts = np.unique(d, return_counts=True)
    if values.size * _FEW_DISTINCT <= m:
        # The flipped questions' sum is sum(v * Binomial(count_v, 1/2)) over the distinct
        # differences v: the same distribution, in time independent of m.
        hits = 0
        for rows in _chunks(n_permutations, values.size):
            flipped = rng.binomial(counts, 0.5, size=(rows, values.size)) @ values
            hits += int(np.count_nonzero(np.abs(d.sum() - 2.0 * flipped) >= cutoff))
        p = (1 + hits) / (1 + n_permutations)
        return RandomizationResult(p_value=p, exact=False, n_permutations=n_permutations)
    n_bytes = (m + 7) // 8
    hits = 0
    for rows in _chunks(n_permutations, m):
        # One random byte gives eight fair coin flips.
        packed = rng.integers(0, 256, size=(rows, n_bytes), dtype=np.uint8)
        flips = np.unpackbits(packed, axis=1, count=m)
        hits += int(np.count_nonzero(_sign_flip_sums(d, flips) >= cutoff))
    p = (1 + hits) / (1 + n_permutations)
    return RandomizationResult(p_value=p, exact=False, n_permutations=n_permutations)


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni step-down adjusted p-values, in the input order.

    With ``p_(1) <= ... <= p_(k)`` sorted, the adjusted value of ``p_(i)`` is
    ``min(1, max_{j <= i} (k - j + 1) * p_(j))``: monotone in the raw p-values and
    capped at 1. Rejecting every hypothesis whose adjusted p is ``<= alpha``
    controls the family-wise error rate at ``alpha`` (Holm 1979).

    >>> holm_adjust([0.01, 0.04, 0.03])
    [0.03, 0.06, 0.06]
    >>> holm_adjust([])
    []
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError("p_values must be a flat sequence")
    if p.size == 0:
        return []
    if not np.all((p >= 0.0) & (p <= 1.0)):
        raise ValueError(f"p-values must lie in [0, 1], got {p_values!r}")
    k = p.size
    order = np.argsort(p, kind="stable")
    scaled = (k - np.arange(k)) * p[order]
    stepped = np.minimum(np.maximum.accumulate(scaled), 1.0)
    adjusted = np.empty(k, dtype=np.float64)
    adjusted[order] = stepped
    # Round away the float noise of k * p (3 * 0.01 = 0.030000000000000002) so
    # reports show 0.03; 15 significant digits is far below any decision.
    return [float(f"{x:.15g}") for x in adjusted]
