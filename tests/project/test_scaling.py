"""The counted scaling check the tests use instead of timers tells linear from quadratic work
(issue 25.4)."""

from __future__ import annotations

from collections.abc import Callable

from _scaling import LINEAR_GROWTH, calls_made, growth


def _step() -> None:
    pass


def _linear(n: int) -> Callable[[], object]:
    return lambda: [_step() for _ in range(n)]


def _quadratic(n: int) -> Callable[[], object]:
    return lambda: [_step() for i in range(n) for _ in range(i)]


def test_growth_passes_linear_work_and_catches_quadratic_work() -> None:
    """Issue 25.4: linear work doubles its increment per doubling, quadratic work ~quadruples
    it; the bound sits between, whatever the machine's load."""
    assert growth(_linear, 50) == 2.0
    assert growth(_quadratic, 50) > 3.9 > LINEAR_GROWTH


def test_calls_made_counts_calls_by_name() -> None:
    """Issue 25.4: ``named`` counts only the Python functions of that name."""
    assert calls_made(_linear(7), named="_step") == 7
    assert calls_made(_linear(7)) >= 7
