"""Issue 29.2: what ``evaluate()`` writes. A fresh run inserts its results without deleting
first (it has no rows to replace), a resumed run still replaces the rows it re-runs, and the
gold set is converted to records once for both its hash and its stored content."""

from __future__ import annotations

import _thread
import hashlib
import json
import threading
import time
from typing import Any

import pytest

import ragmeter
from ragmeter.errors import RetrieverError, StoreError
from ragmeter.gold.goldset import GoldSet
from ragmeter.run import QuestionResult
from ragmeter.store import Store

N = 250  # batches of 200 rows and more go through COPY on PostgreSQL


def _gold() -> GoldSet:
    return GoldSet.from_records(
        [
            {"id": f"q{i}", "question": f"question {i}", "relevant": [{"doc": f"d{i % 7}"}]}
            for i in range(N)
        ]
    )


def _search(question: str, k: int) -> list[dict[str, Any]]:
    i = int(question.split()[1])
    return [{"id": f"d{(i + j) % 7}", "doc": f"d{(i + j) % 7}"} for j in range(k)]


def _result_deletes(seen: list[str]) -> list[str]:
    return [sql for sql in seen if sql.lstrip().upper().startswith("DELETE FROM RESULTS")]


def test_fresh_run_deletes_nothing_and_a_resume_replaces_its_error_rows(store_url: str) -> None:
    seen: list[str] = []
    gold = _gold()
    with Store.open(store_url, tracer=lambda sql, params: seen.append(sql)) as store:

        def failing(question: str, k: int) -> list[dict[str, Any]]:
            if question == "question 230":
                raise KeyboardInterrupt
            if int(question.split()[1]) % 4 == 0:
                raise RetrieverError("backend down")
            return _search(question, k)

        with pytest.raises(KeyboardInterrupt):
            ragmeter.evaluate(gold, failing, k=5, store=store, concurrency=1, name="r")
        run = store.get_run("r")
        assert run.status == "interrupted"
        stored = list(store.results(run.id))
        assert sum(r.error is not None for r in stored) == 58  # q0, q4, ..., q228
        assert _result_deletes(seen) == []  # nothing to replace in a fresh run

        seen.clear()
        resumed = ragmeter.evaluate(gold, _search, k=5, store=store, resume="r")
        # The error rows were re-run: their old rows are deleted, each item keeps one row.
        assert _result_deletes(seen)
        rows = list(store.results(run.id))
        assert sorted(r.item_id for r in rows) == sorted(item.id for item in gold)
        assert all(r.error is None for r in rows)
        assert resumed.n_errors == 0 and resumed.run.status == "complete"

        seen.clear()
        fresh = ragmeter.evaluate(gold, _search, k=5, store=store)
        assert _result_deletes(seen) == []
        assert fresh.per_query == resumed.per_query


def test_an_item_added_twice_without_replace_fails_loudly(store: Store) -> None:
    """``replace=False`` trusts the caller that the rows are new; if they are not, the unique
    key stops the write rather than keeping two rows of one question."""
    gold = _gold()
    report = ragmeter.evaluate(gold, _search, k=5, store=store)
    with pytest.raises(StoreError):
        store.add_results(report.run.id, [QuestionResult("q1")], replace=False)
    assert [r.item_id for r in store.results(report.run.id)].count("q1") == 1


class _CountingGold(GoldSet):
    """A gold set that counts its conversions to records (an injection point, no patching)."""

    conversions = 0

    def to_records(self) -> list[dict[str, Any]]:
        type(self).conversions += 1
        return super().to_records()


def test_gold_set_is_converted_to_records_once_per_run(store: Store) -> None:
    gold = _CountingGold(_gold().items, name="g")
    _CountingGold.conversions = 0
    report = ragmeter.evaluate(gold, _search, k=5, store=store)
    assert _CountingGold.conversions == 1
    # The hash is still the sha256 of the canonical JSON of what is stored.
    records = store.load_gold_records(report.run.gold_hash)
    assert records == _gold().to_records()
    canonical = json.dumps(records, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert report.run.gold_hash == hashlib.sha256(canonical.encode()).hexdigest()
    assert report.run.gold_hash == _gold().hash


def test_ctrl_c_stores_every_question_already_answered() -> None:
    """Ctrl-C while the delivery lags (a slow progress callback): every question whose
    retriever call had returned is stored, as plain bookkeeping in the test counts them, and
    the message says so; the resume then has nothing to ask again. Such questions used to
    be dropped (up to 256 of them) and asked again by the resume."""
    asked: list[str] = []
    lock = threading.Lock()

    def search(question: str, k: int) -> list[dict[str, Any]]:
        with lock:
            asked.append(question)
        return _search(question, k)

    def progress(done: int, total: int, result: QuestionResult) -> None:
        if done == 1:
            waited = time.monotonic() + 10
            while len(asked) < N and time.monotonic() < waited:
                time.sleep(0.005)  # the other questions are answered and wait for delivery
            _thread.interrupt_main()  # Ctrl-C, as the main thread receives it
            time.sleep(0.3)

    store = Store.memory()
    with pytest.raises(KeyboardInterrupt) as stopped:
        ragmeter.evaluate(_gold(), search, k=5, store=store, concurrency=4, name="r",
                          progress=progress)  # fmt: skip
    run = store.get_run("r")
    assert run.status == "interrupted" and len(asked) == N
    assert sorted(store.completed_items(run.id)) == sorted(f"q{i}" for i in range(N))
    assert f"stopped with {N} of {N} questions stored" in str(stopped.value)
    resumed = ragmeter.evaluate(_gold(), search, k=5, store=store, resume="r")
    assert resumed.run.status == "complete" and len(asked) == N  # nothing asked again
