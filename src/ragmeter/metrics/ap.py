"""``map`` and ``map@k``: (mean) average precision."""

from __future__ import annotations

from ragmeter.metrics._base import JUDGED_ONLY, REL, Family, register

AP = register(
    Family(
        name="map",
        kind="ranking",
        cutoff="optional",
        summary=(
            "Average of the precision at the rank of each relevant item retrieved (within "
            "the top k when a cutoff is given), divided by all relevant items of the "
            "question, retrieved or not."
        ),
        formula="map@k = (1 / R) * sum_{r <= k, item r relevant} precision@r",
        citation="trec_eval `map` / `map_cut_k` (m_map.c, m_map_cut.c); ir_measures `AP@k`",
        aliases=("ap",),
        trec_eval="map_cut_k",
        ir_measures="AP@k",
        params=(REL, JUDGED_ONLY),
    )
)
