"""Scaling checks that count work instead of timing it (issue 25.4).

A test that must catch a quadratic blow-up measures Python function calls (a profile hook:
the count is the same on an idle and on a loaded machine) at input sizes n, 2n and 4n;
linear work doubles its increment with each doubling, quadratic work quadruples it. It
sees repeated Python-level work (a loop over every item for each item), not a scan inside
one C call (``x in a_list``). The wall-clock time of the same work is a benchmark's
(``benchmarks/hot_paths.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

#: Allowed growth of the increment per doubling of the input: 2.0 is linear, 4.0 quadratic.
LINEAR_GROWTH = 2.2


def calls_made(work: Callable[[], object], *, named: str | None = None) -> int:
    """Python and C function calls ``work()`` makes (on this thread); with ``named``, only
    the calls of Python functions of that name (``"highlight_regex"``)."""
    count = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if named is None:
            count += event in ("call", "c_call")
        elif event == "call" and frame.f_code.co_name == named:
            count += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(previous)
    return count


def growth(work_of_size: Callable[[int], Callable[[], object]], n: int) -> float:
    """How the call count's increment grows from n..2n to 2n..4n (2.0 when linear)."""
    small, middle, large = (calls_made(work_of_size(size)) for size in (n, 2 * n, 4 * n))
    return (large - middle) / (middle - small)
