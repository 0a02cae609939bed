"""The worker threads hand outcomes over instead of queueing on a lock (issue 29.2).

``run_concurrently`` promises: every outcome is delivered exactly once, to one ``on_outcome``
call at a time, and the outcomes waiting for delivery stay bounded when the callback is slower
than the work. The hand-off (``executors.local._ThreadRun._emit``) keeps those promises
without a lock wait per question; these tests check each promise against plain bookkeeping
done in the test, with the callback fast, slow, and failing.
"""

from __future__ import annotations

import _thread
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


def test_ctrl_c_delivers_the_outcomes_already_handed_over() -> None:
    """Ctrl-C while the callback is slow: the outcomes of every call already finished are
    delivered before the run stops (they used to be dropped, up to ``HANDOFF_MAX``), each
    once, one call at a time; the ``KeyboardInterrupt`` is still raised."""
    ledger = Ledger()
    items = list(range(60))

    def on_outcome(outcome: Outcome[int, int]) -> None:
        if not ledger.delivered:
            waited = time.monotonic() + 10
            while ledger.finished < len(items) and time.monotonic() < waited:
                time.sleep(0.005)  # the other 59 calls finish and wait for delivery
            _thread.interrupt_main()  # Ctrl-C, as the main thread receives it
            time.sleep(0.3)  # still delivering this one when the main thread gets it
        ledger.on_outcome(outcome)

    with pytest.raises(KeyboardInterrupt):
        run_concurrently(items, ledger.work, concurrency=4, on_outcome=on_outcome)
    assert ledger.finished == len(items)  # every call had finished: each must be delivered
    assert sorted(outcome.item for outcome in ledger.delivered) == items
    assert ledger.overlaps == 0


def test_ctrl_c_inside_the_work_delivers_the_others_already_finished() -> None:
    """A ``KeyboardInterrupt`` raised by the work itself: every other finished call is
    delivered, the interrupted one is not (it has no outcome)."""
    ledger = Ledger(slow_s=0.02)  # 39 deliveries take 0.8 s

    def work(item: int) -> int:
        if item == 0:
            time.sleep(0.3)  # one worker delivers, the other finishes the rest meanwhile
            raise KeyboardInterrupt
        return ledger.work(item)

    with pytest.raises(KeyboardInterrupt):
        run_concurrently(list(range(40)), work, concurrency=3, on_outcome=ledger.on_outcome)
    assert ledger.finished == 39
    assert sorted(outcome.item for outcome in ledger.delivered) == list(range(1, 40))
    assert ledger.overlaps == 0


def test_a_failed_store_stops_delivery_even_of_what_was_handed_over() -> None:
    """``failed()`` reporting the store's failure stops the run: what waits is not drained
    into a store that has failed."""
    delivered: list[int] = []
    broken: list[BaseException] = []

    def on_outcome(outcome: Outcome[int, int]) -> None:
        delivered.append(outcome.item)
        if len(delivered) == 1:
            broken.append(OSError("disk full"))
            time.sleep(0.6)  # failed() is polled meanwhile; the other calls queue up

    with pytest.raises(OSError, match="disk full"):
        run_concurrently(list(range(60)), lambda x: x, concurrency=4, on_outcome=on_outcome,
                         failed=lambda: broken[0] if broken else None)  # fmt: skip
    assert delivered == [delivered[0]]


def test_ctrl_c_while_workers_start_stops_those_already_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C reaching the main thread while it starts the workers (seen when the first
    worker answered every question before the second had started): the run stops, and the
    worker already started asks nothing more. It used to go on calling the retriever after
    the ``KeyboardInterrupt`` had left ``run_concurrently``."""
    started = 0
    real = local._ThreadRun._start_worker

    def start(run: local._ThreadRun[int, int]) -> None:
        nonlocal started
        started += 1
        if started == 2:
            raise KeyboardInterrupt
        real(run)

    monkeypatch.setattr(local._ThreadRun, "_start_worker", start)
    ledger = Ledger()

    def work(item: int) -> int:
        time.sleep(0.01)
        return ledger.work(item)

    with pytest.raises(KeyboardInterrupt):
        run_concurrently(list(range(200)), work, concurrency=4, on_outcome=ledger.on_outcome)
    time.sleep(0.1)  # the call in flight ends
    asked = ledger.finished
    time.sleep(0.3)
    assert ledger.finished == asked < 200
    assert len(ledger.delivered) <= asked
