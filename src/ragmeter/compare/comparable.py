"""Whether two runs' numbers may be subtracted at all: the same level and the same gold set.

A delta between a run scored at document level and one scored at chunk level, or
between runs judged against different gold sets, is a wrong number that looks right:
recall@10 over documents and recall@10 over passages measure different things. The
dashboard therefore shows no delta for such a pair, only the reason (issue 15.2).
``ragmeter diff`` keeps comparing them, with a warning, for a person who knows why.
"""

from __future__ import annotations

from ragmeter.run import RunInfo

__all__ = ["NOT_COMPARED", "not_comparable"]

#: What a page shows in place of a delta that :func:`not_comparable` refused.
NOT_COMPARED = "not compared"


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
