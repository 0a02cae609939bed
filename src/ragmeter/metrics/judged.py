"""``judged@k``: the share of the top k that carries a judgment.

Essential when a small gold set meets a new retriever: a low value means the other
metrics count many unjudged items as non-relevant.
"""

from __future__ import annotations

from ragmeter.metrics._base import Family, register

JUDGED = register(
    Family(
        name="judged",
        kind="ranking",
        cutoff="required",
        summary=(
            "Items in the top k with a judgment (any grade >= 0; trec_eval reads a negative "
            "grade as in the pool but unjudged) divided by k."
        ),
        formula="judged@k = |{items at rank <= k judged with grade >= 0}| / k",
        citation=(
            "ir_measures `Judged@k`; trec_eval `unj_k` (m_unjudged.c): "
            "judged@k = min(k, num_ret) / k - unj_k"
        ),
        needs="judged",
        ir_measures="Judged@k",
    )
)
