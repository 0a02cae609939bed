"""trec_eval's ``-M N``: evaluate only the top N documents of each ranking.

trec_eval sorts a query's documents (score descending, ties by document id
descending), keeps the first N and only then evaluates: ``num_ret`` is at most N,
a relevant document below rank N counts as not retrieved, and ``judged_only`` drops
unjudged documents from the N kept (the cut comes first).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from typing import Any

from ragmeter.errors import InputError

__all__ = ["cut_run", "check_depth"]


def check_depth(depth: object) -> int:
    """``depth`` as a positive int, or an InputError that says what was given.

    >>> check_depth(100)
    100
    """
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise InputError(
            f"depth (trec_eval -M) must be a positive integer, not {depth!r}: it is the "
            "number of top-ranked documents per question that are evaluated"
        )
    return depth


def _top(ranking: Any, depth: int) -> Any:
    if isinstance(ranking, Mapping):
        if len(ranking) <= depth or any(
            isinstance(s, float) and math.isnan(s) for s in ranking.values()
        ):
            return ranking  # a NaN score is refused by the ranker, with the query's id
        items = heapq.nlargest(depth, ranking.items(), key=lambda kv: (kv[1], kv[0]))
        return dict(items)
    if isinstance(ranking, list | tuple) or hasattr(ranking, "tolist"):
        listed = ranking.tolist() if hasattr(ranking, "tolist") else ranking
        return list(dict.fromkeys(listed))[:depth]  # repeats dropped first, as when ranking
    return ranking  # not a ranking: compute_metrics names the query and the type


def cut_run(run: Mapping[str, Any], depth: int) -> dict[str, Any]:
    """Each ranking cut to its top ``depth`` documents in trec_eval order (``-M depth``).

    >>> cut_run({"q": {"a": 1.0, "b": 3.0, "c": 3.0}, "r": ["x", "x", "y", "z"]}, 2)
    {'q': {'c': 3.0, 'b': 3.0}, 'r': ['x', 'y']}
    """
    top = check_depth(depth)
    return {qid: _top(ranking, top) for qid, ranking in run.items()}
