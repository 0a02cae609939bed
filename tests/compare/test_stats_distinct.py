"""Issue 29.1: diff's bootstrap and randomization test over the distinct paired differences.

Resampling how often each distinct difference is drawn (multinomial) is the same
distribution as resampling questions; flipping the signs of count_v copies of each
distinct difference v (binomial) is the same as flipping questions one by one. The
references here are the plain per-question procedures, written out in the test: the
intervals and p-values agree within Monte Carlo error, over several seeded cases.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from _scaling import calls_made
from ragmeter.compare.stats import paired_bootstrap_ci, paired_randomization_test

R = 10_000


def _plain_bootstrap(d: np.ndarray, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    means = np.array([d[rng.integers(0, d.size, d.size)].mean() for _ in range(R)])
    low, high = np.quantile(means, [0.025, 0.975])
    return float(low), float(high)


def _plain_sign_flips(d: np.ndarray, seed: int) -> float:
    rng = np.random.default_rng(seed)
    d = d[d != 0]
    observed = abs(d.sum())
    signs = rng.choice([-1.0, 1.0], size=(R, d.size))
    hits = np.count_nonzero(np.abs(signs @ d) >= observed - 1e-9)
    return float((1 + hits) / (1 + R))


def _case(kind: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if kind == "binary":  # hit@10: B finds 3 points more
        a = (rng.random(n) < 0.60).astype(float)
        b = np.where(rng.random(n) < 0.85, a, (rng.random(n) < 0.66).astype(float))
        return a, b
    # Reciprocal ranks of 1..10 or 0: a handful of distinct values, many distinct deltas.
    ranks_a = rng.integers(1, 14, n)
    ranks_b = np.clip(ranks_a + rng.integers(-2, 2, n), 1, 13)
    rr = lambda r: np.where(r <= 10, 1.0 / r, 0.0)  # noqa: E731
    return rr(ranks_a), rr(ranks_b)


@pytest.mark.parametrize(("kind", "seed"), [("binary", 1), ("binary", 2), ("rr", 3), ("rr", 4)])
def test_intervals_and_p_values_match_the_per_question_procedures(kind: str, seed: int) -> None:
    a, b = _case(kind, 2_000, seed)
    d = b - a
    assert np.unique(d).size * 4 <= d.size  # the distinct-value path is taken
    fast = paired_bootstrap_ci(a, b, seed=seed)
    plain = _plain_bootstrap(d, seed + 100)
    # Monte Carlo error of a 2.5% quantile of 10,000 resamples: ~0.03 bootstrap SDs.
    sd = d.std() / np.sqrt(d.size)
    assert abs(fast[0] - plain[0]) < 0.15 * sd and abs(fast[1] - plain[1]) < 0.15 * sd
    p_fast = paired_randomization_test(a, b, seed=seed).p_value
    p_plain = _plain_sign_flips(d, seed + 100)
    tolerance = 4 * np.sqrt(max(p_plain, 1e-3) * (1 - p_plain) / R) + 2 / R
    assert abs(p_fast - p_plain) < tolerance


def _both(n: int) -> Callable[[], object]:
    a, b = _case("binary", n, 5)
    return lambda: (paired_bootstrap_ci(a, b), paired_randomization_test(a, b))


def test_time_does_not_grow_with_the_questions() -> None:
    """Issue 29.1: the work (counted calls, as the per-question procedures' blocks grow
    with the questions) is the same for 1,000 and 100,000 questions. The time (the
    per-question procedures took ~20 s) is benchmarks/hot_paths.py's."""
    _both(10)()  # numpy's first-use imports
    assert calls_made(_both(100_000)) == calls_made(_both(1_000))
    a, b = _case("binary", 100_000, 5)
    low, high = paired_bootstrap_ci(a, b)
    assert low < float(np.mean(b - a)) < high
