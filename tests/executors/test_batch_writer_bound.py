"""Issue 29.2: the writer's queue is bounded, so a retriever faster than the store never
piles the whole run up in memory; a writer that dies does not leave ``put`` waiting."""

from __future__ import annotations

import threading

import pytest

from _net import wait_until
from ragmeter.executors import writer as batch_writer
from ragmeter.executors.writer import BatchWriter


class Broken(Exception):
    pass


def test_put_waits_for_a_store_that_is_behind() -> None:
    release = threading.Event()
    written: list[int] = []

    def write(batch: list[int]) -> None:
        release.wait()
        written.extend(batch)

    writer: BatchWriter[int] = BatchWriter(write)
    total = batch_writer.WRITER_MAX_QUEUED + batch_writer.WRITER_MAX_BATCH + 50
    sent: list[int] = []

    def produce() -> None:
        for n in range(total):
            writer.put(n)
            sent.append(n)

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    # The writer holds one batch; the queue holds at most WRITER_MAX_QUEUED more.
    wait_until(lambda: writer.queued >= batch_writer.WRITER_MAX_QUEUED, what="a full queue")
    assert len(sent) <= batch_writer.WRITER_MAX_QUEUED + batch_writer.WRITER_MAX_BATCH
    assert producer.is_alive()  # waiting on the store, not queueing everything
    release.set()
    producer.join(timeout=30)
    writer.close()
    assert written == list(range(total))


def test_a_writer_that_dies_releases_a_waiting_put() -> None:
    started = threading.Event()
    fail = threading.Event()

    def write(batch: list[int]) -> None:
        started.set()
        fail.wait()
        raise Broken("disk full")

    writer: BatchWriter[int] = BatchWriter(write)
    writer.put(0)
    wait_until(started.is_set, what="the first write")
    for n in range(batch_writer.WRITER_MAX_QUEUED):
        writer.put(n)
    outcome: list[BaseException] = []

    def blocked_put() -> None:
        try:
            writer.put(-1)
        except Broken as error:
            outcome.append(error)

    waiting = threading.Thread(target=blocked_put, daemon=True)
    waiting.start()
    fail.set()
    waiting.join(timeout=30)
    assert not waiting.is_alive() and isinstance(outcome[0], Broken)
    with pytest.raises(Broken):
        writer.close()


def test_batches_grow_with_throughput_and_stay_at_one_when_values_trickle_in() -> None:
    """Issue 29.2: the writer takes what has queued up as one batch (at most
    WRITER_MAX_BATCH) and writes a value that comes alone after the linger."""
    first = threading.Event()
    batches: list[list[int]] = []

    def write(batch: list[int]) -> None:
        first.wait()
        batches.append(list(batch))

    writer: BatchWriter[int] = BatchWriter(write)
    total = 2 * batch_writer.WRITER_MAX_BATCH + 10
    for n in range(total):  # the store is behind: the values pile up
        writer.put(n)
    first.set()
    wait_until(lambda: writer.written == total, what="everything written")
    assert [n for batch in batches for n in batch] == list(range(total))
    assert all(len(batch) <= batch_writer.WRITER_MAX_BATCH for batch in batches)
    assert len(batches) <= 4  # the first value's batch, then full ones
    assert writer.queued == 0
    batches.clear()
    for n in range(3):  # one at a time: each is written alone
        writer.put(n)
        wait_until(lambda n=n: writer.written == total + n + 1, what="the lone value written")
    writer.close()
    assert batches == [[0], [1], [2]]
