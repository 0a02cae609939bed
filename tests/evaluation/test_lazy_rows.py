"""Issue 29.1: a brief report's rows are built when read, once each, and behave as a list."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ragmeter.evaluation.lazy_rows import PAGE, LazyRows, light, where


def _squares(n: int) -> tuple[LazyRows[int], list[list[int]]]:
    calls: list[list[int]] = []

    def build(positions: list[int]) -> list[int]:
        calls.append(list(positions))
        return [p * p for p in positions]

    records = [SimpleNamespace(odd=p % 2 == 1) for p in range(n)]
    return LazyRows(records, build), calls


def test_it_reads_like_the_list_and_builds_each_row_once() -> None:
    rows, calls = _squares(10)
    reference = [p * p for p in range(10)]
    assert len(rows) == 10 and not calls
    assert rows[3] == 9 and rows[-1] == 81 and calls == [[3], [9]]
    assert rows[2:5] == reference[2:5] and calls[-1] == [2, 4]  # 3 was built already
    assert rows[::-3] == reference[::-3]
    assert list(rows) == reference and rows == reference and reference == rows
    assert sum(len(c) for c in calls) == 10  # every position built exactly once
    assert rows != reference[:-1] and rows != [*reference[:-1], 0]
    assert repr(rows) == repr(reference)
    with pytest.raises(IndexError):
        rows[10]


def test_a_selection_stays_unbuilt_and_shares_what_was_built() -> None:
    rows, calls = _squares(7)
    odd = rows.where(lambda r: r.odd)
    assert len(odd) == 3 and not calls
    assert odd == [1, 9, 25] and calls == [[1, 3, 5]]
    assert rows.at([5, 0]) == [25, 0] and calls[-1] == [0]
    assert where(rows, lambda r: not r.odd) == [0, 4, 16, 36]
    assert where([1, 2, 3], lambda r: r > 1) == [2, 3]
    assert light(odd) == [SimpleNamespace(odd=True)] * 3 and light([1]) == [1]


def test_iterating_builds_a_page_at_a_time() -> None:
    rows, calls = _squares(PAGE * 2 + 1)
    iterator = iter(rows)
    assert next(iterator) == 0 and [len(c) for c in calls] == [PAGE]
    assert sum(1 for _ in iterator) == PAGE * 2
    assert [len(c) for c in calls] == [PAGE, PAGE, 1]
