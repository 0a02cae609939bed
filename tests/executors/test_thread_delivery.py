"""The worker threads hand outcomes over instead of queueing on a lock (issue 29.2).

``run_concurrently`` promises: every outcome is delivered exactly once, to one ``on_outcome``
call at a time, and the outcomes waiting for delivery stay bounded when the callback is slower
than the work. The hand-off (``executors.local._ThreadRun._emit``) keeps those promises
without a lock wait per question; these tests check each promise against plain bookkeeping
done in the test, with the callback fast, slow, and failing.
"""

from __future__ import annotations

import threading
import time

import pytest

from ragmeter.executors import local
from ragmeter.executors.local import Outcome, run_concurrently


class Ledger:
    """What the test sees: calls finished by the work, outcomes delivered, and any
    ``on_outcome`` call that started while another was running."""

    def __init__(self, slow_s: float = 0.0) -> None:
        self.slow_s = slow_s
        self.lock = threading.Lock()
        self.in_callback = threading.Lock()
        self.finished = 0
        self.delivered: list[Outcome[int, int]] = []
        self.overlaps = 0
        self.most_waiting = 0

    def work(self, item: int) -> int:
        with self.lock:
            self.finished += 1
        return item * 7 + 1

    def on_outcome(self, outcome: Outcome[int, int]) -> None:
        if not self.in_callback.acquire(blocking=False):
            self.overlaps += 1  # another delivery is running right now
            self.in_callback.acquire()
        try:
            with self.lock:
                waiting = self.finished - len(self.delivered) - 1
                self.most_waiting = max(self.most_waiting, waiting)
            if self.slow_s:
                time.sleep(self.slow_s)
            self.delivered.append(outcome)
        finally:
            self.in_callback.release()


@pytest.mark.parametrize("timeout", [None, 30.0], ids=["no-timeout", "timeout"])
@pytest.mark.parametrize("slow_s", [0.0, 0.0005], ids=["fast-callback", "slow-callback"])
def test_every_outcome_is_delivered_once_one_call_at_a_time(
    slow_s: float, timeout: float | None
) -> None:
    items = list(range(1500))
    ledger = Ledger(slow_s)
    run_concurrently(
        items, ledger.work, concurrency=8, timeout=timeout, on_outcome=ledger.on_outcome
    )
    assert ledger.overlaps == 0
    assert sorted(outcome.item for outcome in ledger.delivered) == items
    for outcome in ledger.delivered:
        assert outcome.error is None
        assert outcome.value == outcome.item * 7 + 1
        assert outcome.elapsed_ms is not None and outcome.elapsed_ms >= 0


def test_a_slow_callback_bounds_what_waits_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Instant work and a slow callback: the workers stop and deliver themselves once
    ``HANDOFF_MAX`` outcomes wait, so at most that many (plus one per worker, each
    finishing its call) are ever held."""
    monkeypatch.setattr(local, "HANDOFF_MAX", 5)
    ledger = Ledger(slow_s=0.001)
    concurrency = 4
    run_concurrently(
        list(range(400)), ledger.work, concurrency=concurrency, on_outcome=ledger.on_outcome
    )
    assert len(ledger.delivered) == 400 and ledger.overlaps == 0
    assert 0 < ledger.most_waiting <= 5 + 1 + concurrency


def test_outcomes_waiting_when_the_callback_fails_are_not_delivered() -> None:
    """A failing callback stops the run: nothing queued behind it is delivered after it."""
    delivered: list[int] = []

    def on_outcome(outcome: Outcome[int, int]) -> None:
        delivered.append(outcome.item)
        if len(delivered) == 50:
            raise RuntimeError("store full")
        time.sleep(0.0005)  # slower than the work: outcomes queue up behind the callback

    with pytest.raises(RuntimeError, match="store full"):
        run_concurrently(list(range(2000)), lambda x: x, concurrency=8, on_outcome=on_outcome)
    assert len(delivered) == 50
