"""Reciprocal rank fusion (RRF), the ``hybrid`` retriever's merge step, and nothing else.

RRF (Cormack, Clarke and Büttcher, SIGIR 2009) scores each item by the sum over the input
rankings of ``1 / (k + rank)``, rank counted from 1, with ``k = 60``. It needs no score
calibration, which is why it is the default way to put BM25 beside embeddings. Weighted
score fusion lives in ``fusion.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ragmeter.documents import Hit

__all__ = ["RRF_K", "rrf"]

#: The constant of the original paper; large enough that rank 1 does not dominate.
RRF_K = 60


def rrf(rankings: Sequence[Sequence[Hit]], k: int = RRF_K) -> list[Hit]:
    """Merge ranked hit lists by reciprocal rank fusion; hits are matched by ``id``.

    The merged hit keeps the fields of its first appearance and gets the fused score.
    Ties are broken by first appearance (earlier list, then higher rank), so the output
    is deterministic.

    >>> a = [Hit("x", "x"), Hit("y", "y")]
    >>> b = [Hit("z", "z"), Hit("w", "w"), Hit("x", "x")]
    >>> fused = rrf([a, b])
    >>> [h.id for h in fused][:2], fused[0].score == 1 / 61 + 1 / 63
    (['x', 'z'], True)
    """
    if k < 0:
        raise ValueError(f"rrf: k must be >= 0, got {k}")
    scores: dict[str, float] = {}
    first: dict[str, Hit] = {}
    for hits in rankings:
        for rank, hit in enumerate(hits, start=1):
            if hit.id not in first:
                first[hit.id] = hit
                scores[hit.id] = 0.0
            scores[hit.id] += 1.0 / (k + rank)
    order = {hid: n for n, hid in enumerate(first)}
    ranked = sorted(first, key=lambda hid: (-scores[hid], order[hid]))
    return [replace(first[hid], score=scores[hid]) for hid in ranked]
