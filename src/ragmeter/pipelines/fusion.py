"""Weighted score fusion: normalise each ranking's scores, then a weighted sum.

Unlike RRF (``hybrid.py``) this uses the scores themselves, so a confident BM25 match can
outweigh a middling dense one. Scores of different retrievers live on different scales, so
each ranking is normalised first:

- ``minmax``: ``(s - min) / (max - min)`` over the ranking (all equal -> 1.0);
- ``zscore``: ``(s - mean) / std`` over the ranking (std 0 -> 0.0).

An item missing from a ranking gets that ranking's lowest normalised value (0 for
``minmax``): it was not good enough to be retrieved there, but says nothing worse.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from ragmeter.documents import Hit
from ragmeter.errors import ConfigError

__all__ = ["NORMALIZATIONS", "normalize", "weighted_fusion"]

NORMALIZATIONS = ("minmax", "zscore")


def normalize(scores: Sequence[float], method: str = "minmax") -> list[float]:
    """Normalise one ranking's scores.

    >>> normalize([3.0, 2.0, 1.0])
    [1.0, 0.5, 0.0]
    >>> normalize([2.0, 0.0], "zscore")
    [1.0, -1.0]
    """
    if method not in NORMALIZATIONS:
        raise ConfigError(
            f"fusion: unknown normalization {method!r}; choose one of {', '.join(NORMALIZATIONS)}"
        )
    if not scores:
        return []
    if method == "minmax":
        lo, hi = min(scores), max(scores)
        if hi == lo:
            return [1.0 for _ in scores]
        return [(s - lo) / (hi - lo) for s in scores]
    mean = sum(scores) / len(scores)
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    if std == 0:
        return [0.0 for _ in scores]
    return [(s - mean) / std for s in scores]


def weighted_fusion(
    rankings: Sequence[Sequence[Hit]],
    weights: Sequence[float] | None = None,
    normalization: str = "minmax",
) -> list[Hit]:
    """Merge rankings by the weighted sum of their normalised scores (hits matched by ``id``).

    ``weights`` defaults to equal weights; a hit without a score counts as the lowest
    score of its ranking. Ties are broken by first appearance.

    >>> bm25 = [Hit("a", "a", 10.0), Hit("b", "b", 5.0), Hit("c", "c", 0.0)]
    >>> dense = [Hit("c", "c", 0.9), Hit("b", "b", 0.7), Hit("a", "a", 0.4)]
    >>> [(h.id, round(h.score or 0, 3)) for h in weighted_fusion([bm25, dense], [0.3, 0.7])]
    [('c', 0.7), ('b', 0.57), ('a', 0.3)]
    """
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ConfigError(
            f"fusion: {len(weights)} weight(s) for {len(rankings)} ranking(s); give one each"
        )
    if any(not isinstance(w, int | float) or isinstance(w, bool) or w < 0 for w in weights):
        raise ConfigError(f"fusion: weights must be numbers >= 0, got {list(weights)}")
    first: dict[str, Hit] = {}
    parts: list[tuple[dict[str, float], float, float]] = []
    for hits, weight in zip(rankings, weights, strict=True):
        raw = [h.score for h in hits]
        known = [s for s in raw if s is not None]
        floor = min(known) if known else 0.0
        norm = normalize([floor if s is None else s for s in raw], normalization)
        values = {h.id: v for h, v in zip(hits, norm, strict=True)}
        missing = min(norm) if norm else 0.0
        parts.append((values, float(weight), missing))
        for h in hits:
            first.setdefault(h.id, h)
    fused = {
        hid: sum(w * values.get(hid, missing) for values, w, missing in parts) for hid in first
    }
    order = {hid: n for n, hid in enumerate(first)}
    ranked = sorted(first, key=lambda hid: (-fused[hid], order[hid]))
    return [replace(first[hid], score=fused[hid]) for hid in ranked]
