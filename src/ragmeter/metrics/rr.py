"""``mrr`` and ``mrr@k``: reciprocal rank of the first relevant item.

The mean over questions is the mean reciprocal rank. With a cutoff, a first
relevant item below rank k scores 0.
"""

from __future__ import annotations

from ragmeter.metrics._base import JUDGED_ONLY, REL, Family, register

RR = register(
    Family(
        name="mrr",
        kind="ranking",
        cutoff="optional",
        summary=(
            "1 / rank of the first relevant item; 0 if there is none (within the top k "
            "when a cutoff is given)."
        ),
        formula="mrr@k = 1 / min{rank r <= k : item at r is relevant}, or 0",
        citation=(
            "trec_eval `recip_rank` (m_recip_rank.c; on a run cut at k for mrr@k); "
            "ir_measures `RR` / `RR@k`"
        ),
        aliases=("rr", "recip_rank"),
        trec_eval="recip_rank",
        ir_measures="RR@k",
        params=(REL, JUDGED_ONLY),
    )
)
