"""Per-question metric values as columns: one list of question ids, one list of values per
metric (issue 29.2).

``compute_metrics`` spells each metric's values out as a ``{qid: value}`` dict; a run of
100,000 questions and 10 metrics makes a million dict entries that the store then reads
back one by one. :class:`Column` is a read-only mapping over a list of values aligned with
the question ids its result shares: reading it in order costs no lookup, and the one
``{qid: position}`` index behind lookups by id is built when first needed, once for every
column of the result.

>>> index = ColumnIndex(["q1", "q2"])
>>> mrr = Column(index, [1.0, 0.5])
>>> mrr["q2"], "q3" in mrr, list(mrr.items()), mrr == {"q1": 1.0, "q2": 0.5}
(0.5, False, [('q1', 1.0), ('q2', 0.5)], True)
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, Sequence, ValuesView

__all__ = ["Column", "ColumnIndex"]


class ColumnIndex:
    """The question ids of a result's columns, and their positions when first looked up."""

    __slots__ = ("_at", "ids")

    def __init__(self, ids: Sequence[str]) -> None:
        self.ids = ids
        self._at: dict[str, int] | None = None

    @property
    def at(self) -> dict[str, int]:
        """``{qid: position}``, built on first use."""
        if self._at is None:
            self._at = dict(zip(self.ids, range(len(self.ids)), strict=True))
        return self._at


class Column(Mapping[str, float]):
    """One metric's values: ``index.ids[i] -> floats[i]`` (a read-only mapping)."""

    __slots__ = ("floats", "index")

    def __init__(self, index: ColumnIndex, floats: Sequence[float]) -> None:
        if len(floats) != len(index.ids):
            raise ValueError(f"{len(floats)} values for {len(index.ids)} question ids")
        self.index = index
        self.floats = floats

    @property
    def ids(self) -> Sequence[str]:
        """The question ids, in the order of :attr:`floats`."""
        return self.index.ids

    def __getitem__(self, qid: str) -> float:
        return self.floats[self.index.at[qid]]

    def __contains__(self, qid: object) -> bool:
        return qid in self.index.at

    def __iter__(self) -> Iterator[str]:
        return iter(self.index.ids)

    def __len__(self) -> int:
        return len(self.floats)

    def items(self) -> ItemsView[str, float]:
        return _Items(self)

    def values(self) -> ValuesView[float]:
        return _Values(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Column) and other.index is self.index:
            return list(self.floats) == list(other.floats)
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # a mapping, equal to dicts: unhashable

    def __repr__(self) -> str:
        return repr(dict(self.items()))


class _Items(ItemsView[str, float]):
    _mapping: Column

    def __iter__(self) -> Iterator[tuple[str, float]]:
        return zip(self._mapping.index.ids, self._mapping.floats, strict=True)


class _Values(ValuesView[float]):
    _mapping: Column

    def __iter__(self) -> Iterator[float]:
        return iter(self._mapping.floats)
