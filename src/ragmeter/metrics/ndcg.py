"""``ndcg`` and ``ndcg@k``: graded normalised discounted cumulative gain.

Linear gain (the grade itself), log2 discount, and an ideal DCG built from *all*
judged items of the question, not from the retrieved list (a bug several RAG
frameworks have shipped). Grades <= 0 add no gain.
"""

from __future__ import annotations

from ragmeter.metrics._base import Family, register

NDCG = register(
    Family(
        name="ndcg",
        kind="ranking",
        cutoff="optional",
        summary=(
            "DCG of the top k divided by the DCG of the ideal ranking of every judged "
            "item (cut at k); linear gain, log2 discount. Without a cutoff the whole "
            "ranking counts (trec_eval `ndcg`)."
        ),
        formula=(
            "DCG@k = sum_{r=1..k} max(grade_r, 0) / log2(r + 1); "
            "ndcg@k = DCG@k / IDCG@k, IDCG@k = DCG@k of the judged grades sorted "
            "descending (0 when the question has no relevant item)"
        ),
        citation=(
            "trec_eval `ndcg_cut_k` / `ndcg` (m_ndcg_cut.c, m_ndcg.c); "
            "Järvelin & Kekäläinen 2002; ir_measures `nDCG@k`"
        ),
        aliases=("ndcg_cut",),
        trec_eval="ndcg_cut_k",
        ir_measures="nDCG@k",
    )
)
