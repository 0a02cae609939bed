"""``infap``: inferred average precision, for qrels that judged a random sample of the pool."""

from __future__ import annotations

from ragmeter.metrics._base import REL, Family, register

INFAP = register(
    Family(
        name="infap",
        kind="ranking",
        cutoff="none",
        summary=(
            "Average precision estimated from a judged random sample of the pool. The qrels "
            "carry the sampling as trec_eval reads it: a document with a negative grade is in "
            "the pool but was not judged, a document absent from the qrels is outside the "
            "pool (counted as non-relevant). With every pooled document judged it is close "
            "to, but not the same as, map."
        ),
        formula=(
            "infap = (1/R) * sum_{relevant r retrieved} E[prec@k_r], E[prec@1] = 1, "
            "E[prec@k] = 1/k + (d/k) * (rel + eps) / (rel + non + 2 eps), with d pooled "
            "items above k, rel / non of them judged relevant / non-relevant, eps = 1e-5"
        ),
        citation=(
            "Yilmaz & Aslam 2006, 'Estimating average precision with incomplete and imperfect "
            "judgments', CIKM; trec_eval `infAP` (m_infap.c); ir_measures `infAP`"
        ),
        params=(REL,),
        needs="pooled",
        trec_eval="infAP",
        ir_measures="infAP",
    )
)
