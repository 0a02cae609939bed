"""What ``promptness.py`` and ``hot_paths.py`` share: timing a case beside its peer.

Each case is timed in interleaved rounds with its named peer or floor (the same work without
the fault, the deadline it must stop at, the library call underneath), and the best round of
each is kept: on a shared machine whose load swings, a burst slows both sides alike, so the
ratio is like for like. The budget a test used to assert (issue 25.4 moved them here) is
printed beside it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def seconds(work: Callable[[], object]) -> float:
    """Wall time of one call of ``work``."""
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


@dataclass
class Row:
    case: str
    took: float
    peer: str
    peer_took: float
    budget: str  # what the test asserted before issue 25.4

    @property
    def ratio(self) -> float:
        return self.took / self.peer_took if self.peer_took else float("inf")


def side_by_side(
    case: str,
    work: Callable[[], object],
    peer: str,
    peer_work: Callable[[], object] | float,
    budget: str,
    *,
    rounds: int,
) -> Row:
    """Best of ``rounds`` interleaved timings of ``work`` and ``peer_work`` (a number: a
    fixed floor, such as a deadline, that is not run)."""
    best, best_peer = float("inf"), float("inf")
    for _ in range(rounds):
        best = min(best, seconds(work))
        if callable(peer_work):
            best_peer = min(best_peer, seconds(peer_work))
    if not callable(peer_work):
        best_peer = float(peer_work)
    row = Row(case, best, peer, best_peer, budget)
    show(row)
    return row


def header() -> None:
    print(f"{'case':<52} {'time':>9}  {'peer or floor':<34} {'time':>9} {'ratio':>7}  test budget")
    print("-" * 130)


def _time(t: float) -> str:
    if t < 0.001:
        return f"{t * 1e6:>6.1f} us"
    return f"{t * 1000:>6.2f} ms" if t < 0.1 else f"{t:>7.3f} s"


def show(row: Row) -> None:
    print(
        f"{row.case:<52} {_time(row.took)}  {row.peer:<34} {_time(row.peer_took)} "
        f"{row.ratio:>6.3g}x  {row.budget}",
        flush=True,
    )


def footer() -> None:
    print(f"(best of each side's rounds; load average {os.getloadavg()[0]:.1f})")
