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
            "trec_eval `unj_k` (m_unjudged.c): judged@k = min(k, num_ret) / k - unj_k. "
            "Not ir_measures' `Judged@k`, which divides by min(k, ranking length), counts "
            "negative grades as judged and breaks score ties by doc id ascending: that "
            "spelling is refused, naming this one"
        ),
        needs="judged",
    )
)
