"""Whether two runs' numbers may be subtracted at all: the same level and the same gold set.

A delta between a run scored at document level and one scored at chunk level, or
between runs judged against different gold sets, is a wrong number that looks right:
recall@10 over documents and recall@10 over passages measure different things. The
dashboard therefore shows no delta for such a pair, only the reason (issue 15.2).
``ragmeter diff`` keeps comparing them, with a warning, for a person who knows why.
"""

from __future__ import annotations

from ragmeter.run import RunInfo

__all__ = ["CHANGES", "NOT_COMPARED", "not_comparable", "rank_change"]

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
    return reasons


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
