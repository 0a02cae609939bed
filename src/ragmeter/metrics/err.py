"""``err(max_grade=G)@k``: expected reciprocal rank (a cascade user who stops when satisfied)."""

from __future__ import annotations

from ragmeter.metrics._base import JUDGED_ONLY, Family, Param, register

MAX_GRADE = Param(
    "max_grade",
    "int",
    "3",
    "the top grade of the relevance scale (g_max): a grade-g item satisfies the user with "
    "probability (2^g - 1) / 2^g_max. No default: it depends on the scale (ragmeter's gold "
    "sets grade 0-3, so max_grade=3; the TREC Web track's gdeval, which ir_measures' "
    "`ERR@k` runs, uses 4). A judged grade above it is an error, never clipped",
    low=1,
    required=True,
)

ERR = register(
    Family(
        name="err",
        kind="ranking",
        cutoff="optional",
        summary=(
            "Expected reciprocal rank of the item at which a user who reads down the ranking "
            "stops, satisfied by a grade-g item with probability (2^g - 1) / 2^max_grade. "
            "Grades <= 0 never satisfy; max_grade is required."
        ),
        formula=(
            "err@k = sum_{r=1..k} (1/r) * R_r * prod_{i<r} (1 - R_i), "
            "R_r = (2^g_r - 1) / 2^max_grade for g_r > 0, else 0"
        ),
        citation=(
            "Chapelle, Metzler, Zhang & Grinspan 2009, CIKM (eq. 3 and Algorithm 2); "
            "ir_measures `ERR@k` (gdeval; = err(max_grade=4)@k); not in trec_eval or ranx 0.3"
        ),
        params=(MAX_GRADE, JUDGED_ONLY),
        ir_measures="ERR@k (= err(max_grade=4)@k)",
    )
)
