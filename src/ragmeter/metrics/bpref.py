"""``bpref``: binary preference, robust to incomplete judgments."""

from __future__ import annotations

from ragmeter.metrics._base import JUDGED_ONLY, REL, Family, register

BPREF = register(
    Family(
        name="bpref",
        kind="ranking",
        cutoff="none",
        summary=(
            "For each relevant item retrieved, the share of the first R judged non-relevant "
            "items (grade 0 <= g < rel) that it is ranked above; summed and divided by R. "
            "Unjudged items (and negative grades) are skipped."
        ),
        formula=(
            "bpref = (1/R) * sum_{relevant r retrieved} "
            "(1 - min(n_r, R) / min(N, R)), n_r = judged non-relevant above r, "
            "N = all judged non-relevant (a term is 1 when n_r = 0)"
        ),
        citation=(
            "Buckley & Voorhees 2004, SIGIR; trec_eval `bpref` (m_bpref.c); "
            "ir_measures `Bpref`; ranx `bpref`"
        ),
        params=(REL, JUDGED_ONLY),
        needs="judged",
        trec_eval="bpref",
        ir_measures="Bpref",
        ranx="bpref",
    )
)
