"""Whether two runs' numbers may be subtracted at all: the same level and the same gold set
(and, above doc level, the same coverage share, ``--min-overlap``).

A delta between a run scored at document level and one scored at chunk level, or
between runs judged against different gold sets, is a wrong number that looks right:
recall@10 over documents and recall@10 over passages measure different things. The
dashboard therefore shows no delta for such a pair, only the reason, and
:func:`check_comparable` -- called by ``diff_runs``, so by ``ragmeter diff``, ``ragmeter
gate``, the pytest plugin's gate and the static report -- refuses it with the same reasons
before any statistics are computed (issue 15.2).
"""

from __future__ import annotations

from ragmeter.errors import NotComparableError
from ragmeter.evaluation.setup import min_overlap_of
from ragmeter.run import RunInfo

__all__ = ["CHANGES", "NOT_COMPARED", "check_comparable", "not_comparable", "rank_change"]

#: What a page shows in place of a delta that :func:`not_comparable` refused.
NOT_COMPARED = "not compared"
#: How one question moved from run A to run B (:func:`rank_change`); all but "same" changed.
CHANGES = ("found", "lost", "better", "worse", "error", "only A", "only B", "same")


def not_comparable(baseline: RunInfo, other: RunInfo) -> list[str]:
    """The reasons ``other`` may not be compared with ``baseline`` (empty: comparable).

    >>> a = RunInfo(1, "a", "2026-01-01T00:00:00Z", "ab12cd34ef56", "bm25", 10, "doc", "complete")
    >>> b = RunInfo(2, "b", "2026-01-02T00:00:00Z", "99ff00aa11bb", "bm25", 10, "chunk",
    ...             "complete")
    >>> not_comparable(a, a)
    []
    >>> not_comparable(a, b)
    ['different level (chunk vs doc) — not compared', 'different gold set (99ff00aa vs ab12cd34) — not compared']
    """
    reasons = []
    if other.level != baseline.level:
        reasons.append(f"different level ({other.level} vs {baseline.level}) — {NOT_COMPARED}")
    if other.gold_hash != baseline.gold_hash:
        reasons.append(
            f"different gold set ({other.gold_hash[:8]} vs {baseline.gold_hash[:8]}) — "
            f"{NOT_COMPARED}"
        )
    # Above doc level, the coverage rule's share decides what counts (issue 24.3).
    share_a, share_b = min_overlap_of(baseline.config), min_overlap_of(other.config)
    if baseline.level != "doc" and share_a != share_b:
        reasons.append(f"different --min-overlap ({share_b} vs {share_a}) — {NOT_COMPARED}")
    return reasons


def check_comparable(baseline: RunInfo, other: RunInfo) -> None:
    """Raise :class:`~ragmeter.errors.NotComparableError` (exit 2) unless the runs compare.

    The message names both runs, gives :func:`not_comparable`'s reasons (the words the
    dashboard shows) and says what to do.

    >>> a = RunInfo(1, "a", "2026-01-01T00:00:00Z", "ab12cd34ef56", "bm25", 10, "doc", "complete")
    >>> b = RunInfo(2, "b", "2026-01-02T00:00:00Z", "ab12cd34ef56", "bm25", 10, "chunk",
    ...             "complete")
    >>> check_comparable(a, a)
    >>> check_comparable(a, b)
    Traceback (most recent call last):
    ...
    ragmeter.errors.NotComparableError: run 2 b cannot be compared with run 1 a: different level (chunk vs doc) — not compared. Score both runs at the same level (--level) on the same gold set.
    """
    reasons = not_comparable(baseline, other)
    if reasons:
        raise NotComparableError(
            f"run {other.id} {other.name} cannot be compared with run {baseline.id} "
            f"{baseline.name}: {'; '.join(reasons)}. Score both runs at the same level "
            "(--level) on the same gold set.",
            reasons,
        )


def rank_change(
    rank_a: int | None,
    rank_b: int | None,
    *,
    error_a: str | None = None,
    error_b: str | None = None,
    in_a: bool = True,
    in_b: bool = True,
) -> str:
    """How a question's first relevant rank moved from run A to run B (one of ``CHANGES``).

    ``None`` ranks mean nothing relevant came back; a question that failed in B but not in
    A is an ``error`` (not a plain ``lost``), and one asked in one run only says so.

    >>> [rank_change(3, 1), rank_change(1, 3), rank_change(None, 2), rank_change(2, None)]
    ['better', 'worse', 'found', 'lost']
    >>> rank_change(2, 2), rank_change(None, None), rank_change(1, None, error_b="timeout")
    ('same', 'same', 'error')
    >>> rank_change(None, 1, in_a=False)
    'only B'
    """
    if not in_a or not in_b:
        return "only B" if in_b else "only A"
    if error_b is not None and error_a is None:
        return "error"
    if rank_a == rank_b:
        return "same"
    if rank_a is None:
        return "found"
    if rank_b is None:
        return "lost"
    return "better" if rank_b < rank_a else "worse"
