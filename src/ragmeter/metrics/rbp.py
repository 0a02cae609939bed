"""``rbp(p=...)``: rank-biased precision (binary relevance)."""

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

RBP = register(
    Family(
        name="rbp",
        kind="ranking",
        cutoff="none",
        summary=(
            "Expected rate of gain of a user who reads on from each rank with probability "
            "p: relevant items (grade >= rel) gain 1. The parameter p is required."
        ),
        formula="rbp(p) = (1 - p) * sum_{r : item r relevant} p^(r - 1)",
        citation=(
            "Moffat & Zobel 2008, ACM TOIS 27(1); trec_eval `rbp` (m_rbp.c, binary qrels); "
            "ir_measures `RBP(p=...)`; ranx `rbp.95`"
        ),
        params=(PERSISTENCE, REL, JUDGED_ONLY),
        trec_eval="rbp",
        ir_measures="RBP(p=0.8)",
        ranx="rbp.95",
    )
)
