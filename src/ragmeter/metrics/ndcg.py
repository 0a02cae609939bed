"""``ndcg`` and ``ndcg@k``: graded normalised discounted cumulative gain.

Linear gain (the grade itself), log2 discount, and an ideal DCG built from *all*
judged items of the question, not from the retrieved list (a bug several RAG
frameworks have shipped). Grades <= 0 add no gain.
"""

from __future__ import annotations

from ragmeter.metrics._base import JUDGED_ONLY, Family, Param, register

DCG = Param(
    "dcg",
    "choice",
    "log2",
    "gain of a grade g: `log2` is g (trec_eval, ir_measures' default), `exp-log2` is "
    "2^g - 1 (Burges et al. 2005; ranx `ndcg_burges`, ir_measures `dcg='exp-log2'`)",
    choices=("log2", "exp-log2"),
)
GAINS = Param(
    "gains",
    "gains",
    "",
    "a custom gain per grade, `{1:1,2:3}` (trec_eval `ndcg.1=1,2=3`); grades not listed "
    "gain their own value, grades <= 0 gain 0",
)

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
        aliases=(),
        params=(DCG, GAINS, JUDGED_ONLY),
        ranx="ndcg@k, ndcg_burges@k",
        trec_eval="ndcg_cut_k",
        ir_measures="nDCG@k",
    )
)
