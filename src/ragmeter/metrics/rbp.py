"""``rbp(p=...)``: rank-biased precision (binary relevance unless ``gain=grade``) and its residual."""

from __future__ import annotations

from ragmeter.metrics._base import JUDGED_ONLY, REL, Family, Param, register

PERSISTENCE = Param(
    "p",
    "float",
    "0.9",
    "the user's persistence, 0 < p < 1; no default: trec_eval uses 0.9, ir_measures 0.8",
    low=0.0,
    high=1.0,
    required=True,
)

GAIN = Param(
    "gain",
    "choice",
    "binary",
    "`binary`: a relevant item gains 1 (Moffat & Zobel, trec_eval on binary qrels, "
    "ir_measures with `rel=`); `grade`: it gains its grade (ranx, whose `rbp.95` is this)",
    choices=("binary", "grade"),
)

RBP = register(
    Family(
        name="rbp",
        kind="ranking",
        cutoff="none",
        summary=(
            "Expected rate of gain of a user who reads on from each rank with probability "
            "p: relevant items (grade >= rel) gain 1. The parameter p is required."
        ),
        formula=(
            "rbp(p) = (1 - p) * sum_{r : item r relevant} gain_r * p^(r - 1), "
            "gain_r = 1 (gain=binary) or grade_r (gain=grade)"
        ),
        citation=(
            "Moffat & Zobel 2008, ACM TOIS 27(1); trec_eval `rbp` (m_rbp.c, binary qrels); "
            "ir_measures `RBP(p=...,rel=1)` (its `RBP(p=...)` without `rel` is a graded RBP "
            "ragmeter does not compute: that spelling is refused); ranx `rbp.95`"
        ),
        params=(PERSISTENCE, REL, GAIN, JUDGED_ONLY),
        trec_eval="rbp",
        ir_measures="RBP(p=0.8,rel=1)",
        ranx="rbp.95 (= rbp(gain=grade,p=0.95))",
    )
)

RBP_RESID = register(
    Family(
        name="rbp_resid",
        kind="ranking",
        cutoff="none",
        summary=(
            "The residual of `rbp(p=...)`: how much RBP could still rise if every unjudged "
            "item in the ranking (no judgment, or a negative grade) and every rank past its "
            "end were relevant. rbp + rbp_resid is the upper bound; a question with no "
            "ranking has residual 1 (nothing is known), not 0. The parameter p is required. "
            "trec_eval 10's `rbp_resid` is the same sum, 1 for a question with no ranking "
            "too, but prints 0 when nothing unjudged was retrieved (leaving out the p^d past "
            "the ranking's end); ragmeter keeps p^d there, so rbp + rbp_resid stays an upper "
            "bound."
        ),
        formula=(
            "rbp_resid(p) = (1 - p) * sum_{r <= d : item r unjudged} p^(r - 1) + p^d "
            "= 1 - (1 - p) * sum_{r <= d : item r judged} p^(r - 1), d = |ranking|"
        ),
        citation=(
            "Moffat & Zobel 2008, ACM TOIS 27(1), section 4 (the residual of an RBP "
            "score, as reported by their rbp_eval); trec_eval 10 `rbp_resid` "
            "(m_rbp_resid.c, equal whenever an unjudged item was retrieved); not in "
            "ir_measures or ranx"
        ),
        aliases=("rbp_residual",),
        params=(PERSISTENCE,),
        needs="judged",
    )
)
