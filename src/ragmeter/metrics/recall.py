"""``recall@k``: the share of all relevant items that made the top k."""

from __future__ import annotations

from ragmeter.metrics._base import JUDGED_ONLY, REL, Family, register

RECALL = register(
    Family(
        name="recall",
        kind="ranking",
        cutoff="required",
        summary=(
            "Relevant items in the top k divided by all relevant items of the question "
            "(0 when the question has none). A document retrieved twice counts once, "
            "so recall never exceeds 1."
        ),
        formula="recall@k = |{relevant items at rank <= k}| / R",
        citation="trec_eval `recall_k` (m_recall.c); ir_measures `R@k`",
        aliases=("r",),
        trec_eval="recall_k",
        ir_measures="R@k",
        params=(REL, JUDGED_ONLY),
    )
)
