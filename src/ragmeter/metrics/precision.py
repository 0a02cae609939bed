"""``precision@k``: the share of the top k that is relevant."""

from __future__ import annotations

from ragmeter.metrics._base import JUDGED_ONLY, REL, Family, register

PRECISION = register(
    Family(
        name="precision",
        kind="ranking",
        cutoff="required",
        summary=(
            "Relevant items in the top k divided by k, even when fewer than k items were retrieved."
        ),
        formula="precision@k = |{relevant items at rank <= k}| / k",
        citation="trec_eval `P_k` (m_P.c); ir_measures `P@k`",
        aliases=("p",),
        trec_eval="P_k",
        of_retrieved=True,
        ir_measures="P@k",
        params=(REL, JUDGED_ONLY),
    )
)
