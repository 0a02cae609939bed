"""Counts per question: ``num_rel``, ``num_rel_ret`` and ``num_ret``.

The mean over questions is reported like every other metric; trec_eval prints
the *sum* over questions for these three (multiply by the number of questions).
"""

from __future__ import annotations

from ragmeter.metrics._base import JUDGED_ONLY, REL, Family, register

NUM_REL = register(
    Family(
        name="num_rel",
        kind="ranking",
        cutoff="none",
        summary="R: the number of judged items of the question with grade >= rel.",
        formula="num_rel = |{judged items with grade >= rel}|",
        citation="trec_eval `num_rel` (m_num_rel.c); ir_measures `NumRel`",
        aliases=("numrel",),
        params=(REL,),
        trec_eval="num_rel",
        ir_measures="NumRel",
    )
)

NUM_REL_RET = register(
    Family(
        name="num_rel_ret",
        kind="ranking",
        cutoff="optional",
        summary="The number of relevant items retrieved (in the top k when a cutoff is given).",
        formula="num_rel_ret@k = |{relevant items at rank <= k}|",
        citation=(
            "trec_eval `num_rel_ret` (m_num_rel_ret.c); ir_measures `NumRet(rel=1)`; ranx `hits@k`"
        ),
        aliases=("numrelret", "hits"),
        params=(REL, JUDGED_ONLY),
        trec_eval="num_rel_ret",
        ir_measures="NumRet(rel=1)",
        ranx="hits@k",
    )
)

NUM_RET = register(
    Family(
        name="num_ret",
        kind="ranking",
        cutoff="none",
        summary="The number of items retrieved for the question (0 when it has no ranking).",
        formula="num_ret = |ranking|",
        citation="trec_eval `num_ret` (m_num_ret.c); ir_measures `NumRet`",
        aliases=("numret",),
        params=(JUDGED_ONLY,),
        needs="retrieved",
        trec_eval="num_ret",
        ir_measures="NumRet",
    )
)
