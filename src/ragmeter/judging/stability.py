"""How far to trust a repeated verdict (issue 17.4): its agreement, the chance one more
repeat flips it, and a run's expected flips. The vote itself is the model side's
(:mod:`ragmeter.judge.stability`).

A question's agreement is the share of its repeats that voted for the majority.
Expected flips with one more repeat, at the observed rate: for each question, each label
``L`` it received ``c_L`` of its ``n`` votes is drawn next with probability ``c_L / n``;
if one more vote for ``L`` would change the majority (ties go to the lowest label), that
probability counts. The run's figure is the sum over questions: the number of verdicts
expected to change if the judge were asked once more. Stable questions contribute 0.

>>> from ragmeter.judge.stability import stability
>>> s = stability([True, True, False])
>>> agreement(s), round(flip_chance(s), 3)
(0.667, 0.333)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ragmeter.judge.stability import Stability, majority

__all__ = ["agreement", "expected_flips", "flip_chance", "stability_dict"]

#: Decimal places of a stored agreement (a share of at most a few repeats).
AGREEMENT_DIGITS = 3


def agreement(s: Stability) -> float:
    """The share of the repeats that voted for the majority."""
    top: int = dict(s.counts)[s.label]
    return round(top / s.votes, AGREEMENT_DIGITS)


def flip_chance(s: Stability) -> float:
    """The chance one more repeat, drawn at the observed rates, changes the majority.

    >>> from ragmeter.judge.stability import stability
    >>> flip_chance(stability([1, 1, 1])), flip_chance(stability([3, 2, 3, 2, 3]))
    (0.0, 0.4)
    """
    labels = [label for label, count in s.counts for _ in range(count)]
    n = len(labels)
    return sum(
        (count / n for other, count in s.counts if majority([*labels, other]) != s.label), 0.0
    )


def stability_dict(s: Stability) -> dict[str, Any]:
    """A repeated verdict as a stored verdict keeps it: votes, agreement, counts, flip chance."""
    return {
        "votes": s.votes,
        "agreement": agreement(s),
        "counts": {str(label): count for label, count in s.counts},
        "flip_chance": round(flip_chance(s), AGREEMENT_DIGITS),
    }


def expected_flips(items: Iterable[Stability]) -> float:
    """Verdicts expected to change with one more repeat at the observed rates.

    >>> from ragmeter.judge.stability import stability
    >>> expected_flips([stability([True, True, False]), stability([1, 1, 1])])
    0.333
    """
    return round(sum(flip_chance(s) for s in items), AGREEMENT_DIGITS)
