"""``dcg`` and ``dcg@k``: unnormalised discounted cumulative gain."""

from __future__ import annotations

from ragmeter.metrics._base import JUDGED_ONLY, Family, register
from ragmeter.metrics.ndcg import DCG as DCG_GAIN
from ragmeter.metrics.ndcg import GAINS

DCG = register(
    Family(
        name="dcg",
        kind="ranking",
        cutoff="optional",
        summary=(
            "The DCG of the top k itself, not divided by the ideal DCG: comparable only "
            "between runs on the same questions. Same gains and discount as `ndcg`."
        ),
        formula="dcg@k = sum_{r=1..k} gain(grade_r) / log2(r + 1)",
        citation="Järvelin & Kekäläinen 2002; ranx `dcg@k` / `dcg_burges@k`",
        params=(DCG_GAIN, GAINS, JUDGED_ONLY),
        ranx="dcg@k, dcg_burges@k",
    )
)
