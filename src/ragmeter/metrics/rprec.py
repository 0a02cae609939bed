"""``rprec``: precision at rank R, where R is the number of relevant items."""

from __future__ import annotations

from ragmeter.metrics._base import JUDGED_ONLY, REL, Family, register

RPREC = register(
    Family(
        name="rprec",
        kind="ranking",
        cutoff="none",
        summary=(
            "Relevant items in the top R divided by R, R = all relevant items of the "
            "question (0 when R = 0)."
        ),
        formula="rprec = |{relevant items at rank <= R}| / R",
        citation="trec_eval `Rprec` (m_Rprec.c); ir_measures `Rprec`",
        aliases=("r-prec", "r_prec", "r-precision"),
        ranx="r-precision",
        trec_eval="Rprec",
        ir_measures="Rprec",
        params=(REL, JUDGED_ONLY),
    )
)
