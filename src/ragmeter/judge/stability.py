"""Repeated verdicts, the model side: the majority vote over a request's repeats (issue 17.4).

With ``repeats = N`` every judge request is sent N times. The verdict is the majority
label (``supported`` for faithfulness, the grade for relevance); a tie goes to the
*lowest* label (unsupported, the lower grade), the conservative reading. Any disagreement
makes a question *unstable*. How far to trust that vote (its agreement, the chance one
more repeat flips it, the run's expected flips) is judge trust:
:mod:`ragmeter.judging.stability`.

>>> s = stability([True, True, False])
>>> s.label, s.votes, s.unstable
(True, 3, True)
>>> stability([True, False]).label  # a tie goes to the lower label
False
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Stability", "majority", "stability"]


def majority(labels: Iterable[Hashable]) -> Any:
    """The most frequent label; ties go to the lowest (``False`` < ``True``, 0 < 3).

    >>> majority([2, 3, 3]), majority([1, 2])
    (3, 1)
    """
    counts = Counter(labels)
    if not counts:
        raise ValueError("no votes")
    top = max(counts.values())
    return min(label for label, count in counts.items() if count == top)  # type: ignore[type-var]


@dataclass(frozen=True, slots=True)
class Stability:
    """One question's repeats: the votes per label (in label order) and the majority."""

    counts: tuple[tuple[Any, int], ...]
    label: Any

    @property
    def votes(self) -> int:
        return sum(count for _, count in self.counts)

    @property
    def unstable(self) -> bool:
        return len(self.counts) > 1


def stability(labels: Sequence[Hashable]) -> Stability:
    """The majority of one question's votes (in repeat order), with the votes per label."""
    counts = Counter(labels)
    return Stability(tuple(sorted(counts.items(), key=lambda kv: str(kv[0]))), majority(labels))
