"""Rows built when they are read (issue 29.1).

A brief report (:mod:`ragmeter.evaluation.brief`) counts a run from a light record per
question and builds a question's :class:`~ragmeter.evaluation.report.QuestionRow` (or
:class:`~ragmeter.evaluation.report.Miss`) only when someone reads it: ``show`` prints 25
misses of 23,000 and builds 25. :class:`LazyRows` is that sequence: ``len()`` costs nothing,
an index or a slice builds (once) the rows it covers, iterating builds them a page at a time,
and it equals a list of the same rows.

>>> squares = LazyRows(list(range(5)), lambda positions: [p * p for p in positions])
>>> len(squares), squares[2], squares[-1], squares[1:3]
(5, 4, 16, [1, 4])
>>> squares.where(lambda p: p % 2 == 1) == [1, 9]
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar, overload

__all__ = ["LazyRows", "light", "where"]

T = TypeVar("T")

#: Rows built per call when a lazy sequence is iterated whole.
PAGE = 2_000


class LazyRows(Sequence[T], Generic[T]):
    """A sequence whose items are built from light records when first read.

    ``records`` holds one light record per position of the whole sequence (what counting
    and selecting read: attributes named like the row's); ``build(positions)`` returns the
    items at those positions; ``built`` holds items built already, by position.
    ``positions`` selects a subsequence (default: all); the subsequences :meth:`where` and
    :meth:`at` return share the built items."""

    def __init__(
        self,
        records: Sequence[Any],
        build: Callable[[list[int]], list[T]],
        positions: Sequence[int] | None = None,
        *,
        built: dict[int, T] | None = None,
    ) -> None:
        self._records = records
        self._build = build
        self._positions = range(len(records)) if positions is None else positions
        self._built: dict[int, T] = {} if built is None else built

    def _items(self, positions: Sequence[int]) -> list[T]:
        missing = [p for p in positions if p not in self._built]
        if missing:
            self._built.update(zip(missing, self._build(missing), strict=True))
        return [self._built[p] for p in positions]

    def __len__(self) -> int:
        return len(self._positions)

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return self._items(self._positions[index])
        return self._items([self._positions[index]])[0]

    def __iter__(self) -> Iterator[T]:
        for start in range(0, len(self._positions), PAGE):
            yield from self._items(self._positions[start : start + PAGE])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyRows | list | tuple):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # like a list

    def __repr__(self) -> str:
        return repr(list(self))

    @property
    def records(self) -> list[Any]:
        """The light records of this sequence's rows (nothing is built)."""
        if self._positions == range(len(self._records)):  # all of them, in one copy
            return list(self._records)
        return [self._records[p] for p in self._positions]

    def where(self, keep: Callable[[Any], bool]) -> LazyRows[T]:
        """The rows whose light record ``keep`` accepts, still unbuilt."""
        chosen = [p for p in self._positions if keep(self._records[p])]
        return LazyRows(self._records, self._build, chosen, built=self._built)

    def at(self, positions: Sequence[int]) -> LazyRows[T]:
        """The rows at these positions of the whole sequence, still unbuilt."""
        return LazyRows(self._records, self._build, positions, built=self._built)


def light(rows: Sequence[Any]) -> Sequence[Any]:
    """What counting reads of ``rows`` without building them: a lazy sequence's light
    records, or the rows themselves."""
    return rows.records if isinstance(rows, LazyRows) else rows


def where(rows: Sequence[T], keep: Callable[[Any], bool]) -> Sequence[T]:
    """The rows ``keep`` accepts; a lazy sequence stays lazy (``keep`` reads its records)."""
    if isinstance(rows, LazyRows):
        return rows.where(keep)
    return [row for row in rows if keep(row)]
