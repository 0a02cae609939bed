"""Issue 4: reciprocal rank fusion and weighted score fusion, checked by hand."""

from __future__ import annotations

import pytest

from ragmeter.documents import Hit
from ragmeter.errors import ConfigError
from ragmeter.pipelines.fusion import normalize, weighted_fusion
from ragmeter.pipelines.hybrid import RRF_K, rrf


def hits(*ids: str, scores: list[float] | None = None) -> list[Hit]:
    return [Hit(i, i, None if scores is None else scores[n]) for n, i in enumerate(ids)]


def test_rrf_scores_by_hand() -> None:
    """Issue 4: RRF k=60: rank 1 in one list and rank 3 in another is 1/61 + 1/63."""
    fused = rrf([hits("a", "b"), hits("c", "d", "a")])
    assert RRF_K == 60
    assert [h.id for h in fused] == ["a", "c", "b", "d"]
    assert fused[0].score == pytest.approx(1 / 61 + 1 / 63)
    assert fused[1].score == pytest.approx(1 / 61)
    assert fused[2].score == pytest.approx(1 / 62) and fused[3].score == pytest.approx(1 / 62)


def test_rrf_ties_break_by_first_appearance_and_empty_inputs() -> None:
    """Issue 4: equal fused scores keep first-appearance order; empty lists fuse to nothing."""
    assert [h.id for h in rrf([hits("x"), hits("y")])] == ["x", "y"]
    assert rrf([]) == [] and rrf([[], []]) == []
    assert [h.id for h in rrf([[], hits("z")])] == ["z"]


def test_normalizations() -> None:
    """Issue 4: min-max and z-score by hand, and degenerate rankings."""
    assert normalize([4.0, 2.0, 0.0]) == [1.0, 0.5, 0.0]
    assert normalize([1.0, 3.0], "zscore") == [-1.0, 1.0]
    assert normalize([5.0, 5.0]) == [1.0, 1.0] and normalize([5.0, 5.0], "zscore") == [0.0, 0.0]
    with pytest.raises(ConfigError, match="minmax, zscore"):
        normalize([1.0], "softmax")


def test_weighted_fusion_by_hand() -> None:
    """Issue 4: 0.3 x minmax(bm25) + 0.7 x minmax(dense); missing hits count as the minimum."""
    bm25 = hits("a", "b", scores=[10.0, 5.0])
    dense = hits("c", "b", "a", scores=[0.9, 0.7, 0.4])
    fused = {h.id: h.score for h in weighted_fusion([bm25, dense], [0.3, 0.7])}
    assert fused["a"] == pytest.approx(0.3 * 1.0 + 0.7 * 0.0)
    assert fused["b"] == pytest.approx(0.3 * 0.0 + 0.7 * 0.6)
    assert fused["c"] == pytest.approx(0.3 * 0.0 + 0.7 * 1.0)
    only_bm25 = weighted_fusion([bm25, dense], [1.0, 0.0])
    assert only_bm25[0].id == "a"


def test_weighted_fusion_bad_weights() -> None:
    """Issue 4: weights must match the rankings and be >= 0."""
    with pytest.raises(ConfigError, match="1 weight"):
        weighted_fusion([hits("a"), hits("b")], [1.0])
    with pytest.raises(ConfigError, match=">= 0"):
        weighted_fusion([hits("a")], [-1.0])
