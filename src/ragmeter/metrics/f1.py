"""``f1@k``: harmonic mean of precision@k and recall@k."""

from __future__ import annotations

from ragmeter.metrics._base import JUDGED_ONLY, REL, Family, register

F1 = register(
    Family(
        name="f1",
        kind="ranking",
        cutoff="required",
        summary=(
            "2 * P * R / (P + R) with P = precision@k (divided by k) and R = recall@k; "
            "0 when no relevant item is in the top k."
        ),
        formula="f1@k = 2 * precision@k * recall@k / (precision@k + recall@k)",
        citation="van Rijsbergen 1979; ranx `f1@k`",
        params=(REL, JUDGED_ONLY),
        ranx="f1@k",
    )
)
