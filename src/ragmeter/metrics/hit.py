"""``hit@k``: did any relevant item make the top k?

Many RAG blog posts call this "recall@k"; it is trec_eval's ``success_k`` and
ir_measures' ``Success@k``.
"""

from __future__ import annotations

from ragmeter.metrics._base import JUDGED_ONLY, REL, Family, register

HIT = register(
    Family(
        name="hit",
        kind="ranking",
        cutoff="required",
        summary="1 if any relevant item is in the top k, else 0.",
        formula="hit@k = 1 if |{relevant items at rank <= k}| > 0 else 0",
        citation="trec_eval `success_k` (m_success.c); ir_measures `Success@k`; ranx `hit_rate@k`",
        aliases=("success", "hit_rate"),
        ranx="hit_rate@k",
        trec_eval="success_k",
        ir_measures="Success@k",
        params=(REL, JUDGED_ONLY),
    )
)
