"""``alpha_ndcg(alpha=a)@k``: novelty- and diversity-aware nDCG over subtopic judgments."""

from __future__ import annotations

from ragmeter.metrics._base import Family, Param, register

ALPHA = Param(
    "alpha",
    "float",
    "0.5",
    "how much a subtopic's gain drops each time it is seen again, 0 < alpha < 1 (0.5: the "
    "TREC Web track's ndeval and ir_measures' default)",
    low=0.0,
    high=1.0,
)

ALPHA_NDCG = register(
    Family(
        name="alpha_ndcg",
        kind="ranking",
        cutoff="required",
        summary=(
            "nDCG where a document gains once per subtopic it is relevant to (grade > 0), "
            "discounted by (1 - alpha) for every higher-ranked document already relevant to "
            "that subtopic. Needs subtopic qrels (`qid subtopic docid grade`; "
            "`ragmeter.metrics.compute_diversity`, `ragmeter metrics --subtopic-qrels`); "
            "ordinary qrels are refused. The ideal ranking is built greedily (the exact one "
            "is NP-hard), ties broken by document id descending, as TREC's ndeval breaks them. "
            "A scored run is ordered as everywhere in ragmeter (score descending, ties by "
            "document id descending, as trec_eval); ndeval, through pyndeval and ir_measures, "
            "orders tied scores by document id ascending: the values agree for untied scores "
            "(or a ranked list), and may differ when scores tie."
        ),
        formula=(
            "alpha-DCG@k = sum_{r=1..k} (sum_{subtopic s : doc_r relevant to s} "
            "(1 - alpha)^(c_{s,r-1})) / log2(r + 1), c_{s,r-1} = docs above r relevant to s; "
            "alpha_ndcg@k = alpha-DCG@k / alpha-DCG@k of the greedy ideal ranking"
        ),
        citation=(
            "Clarke, Kolla, Cormack, Vechtomova, Ashkan, Büttcher & MacKinnon 2008, SIGIR, "
            "'Novelty and diversity in information retrieval evaluation'; TREC Web track "
            "ndeval; ir_measures `alpha_nDCG@k`; not in trec_eval or ranx"
        ),
        aliases=("alpha-ndcg", "alpha_ndcg_cut"),
        params=(ALPHA,),
        ir_measures="alpha_nDCG(alpha=0.5)@k",
    )
)
