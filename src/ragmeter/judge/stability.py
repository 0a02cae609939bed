"""Repeated verdicts: the majority, the agreement across repeats, and expected flips (issue 17.4).

With ``repeats = N`` every judge request is sent N times. The verdict is the majority
label (``supported`` for faithfulness, the grade for relevance); a tie goes to the
*lowest* label (unsupported, the lower grade), the conservative reading. A question's
agreement is the share of its repeats that voted for the majority; any disagreement
makes it *unstable*.

Expected flips with one more repeat, at the observed rate: for each question, each label
``L`` it received ``c_L`` of its ``n`` votes is drawn next with probability ``c_L / n``;
if one more vote for ``L`` would change the majority (with the tie rule above), that
probability counts. The run's figure is the sum over questions: the number of verdicts
expected to change if the judge were asked once more. Stable questions contribute 0.

>>> s = stability([True, True, False])
>>> s.label, s.agreement, s.unstable, round(s.flip_chance, 3)
(True, 0.667, True, 0.333)
>>> stability([True, False]).label  # a tie goes to the lower label
False
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Stability", "expected_flips", "majority", "stability"]

#: Decimal places of a stored agreement (a share of at most a few repeats).
AGREEMENT_DIGITS = 3


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
    """One question's repeats: the votes per label, the majority and its agreement."""

    counts: tuple[tuple[Any, int], ...]
    label: Any
    flip_chance: float

    @property
    def votes(self) -> int:
        return sum(count for _, count in self.counts)

    @property
    def agreement(self) -> float:
        top: int = dict(self.counts)[self.label]
        return round(top / self.votes, AGREEMENT_DIGITS)

    @property
    def unstable(self) -> bool:
        return len(self.counts) > 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "votes": self.votes,
            "agreement": self.agreement,
            "counts": {str(label): count for label, count in self.counts},
            "flip_chance": round(self.flip_chance, AGREEMENT_DIGITS),
        }


def stability(labels: Sequence[Hashable]) -> Stability:
    """The stability of one question's votes (in repeat order)."""
    counts = Counter(labels)
    label = majority(labels)
    n = len(labels)
    chance = 0.0
    for other, count in counts.items():
        if majority([*labels, other]) != label:
            chance += count / n
    return Stability(tuple(sorted(counts.items(), key=lambda kv: str(kv[0]))), label, chance)


def expected_flips(items: Iterable[Stability]) -> float:
    """Verdicts expected to change with one more repeat at the observed rates.

    >>> expected_flips([stability([True, True, False]), stability([1, 1, 1])])
    0.333
    """
    return round(sum(s.flip_chance for s in items), AGREEMENT_DIGITS)
