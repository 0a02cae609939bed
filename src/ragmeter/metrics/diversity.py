"""``compute_diversity``: alpha-nDCG@k from subtopic qrels and a run (plain dicts).

Subtopic qrels are ``{qid: {subtopic: {doc_id: grade}}}`` (read from the TREC Web track
format by :func:`ragmeter.formats.subtopics.read_subtopic_qrels`); a grade > 0 makes the
document relevant to that subtopic. Rankings are ordered as everywhere else (scored:
score descending, ties by document id descending; lists: first occurrence wins; TREC's
ndeval through pyndeval/ir_measures orders tied scores ascending instead), a
question with no ranking scores 0 and stays in the mean, and ``depth=N`` cuts each
ranking first (trec_eval ``-M N``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from ragmeter.errors import InputError, MetricNameError
from ragmeter.metrics._base import Metric
from ragmeter.metrics._depth import cut_run
from ragmeter.metrics._names import parse_metrics
from ragmeter.metrics.compute import EMPTY_QRELS, MetricsResult

__all__ = ["DIVERSITY_FAMILIES", "compute_diversity", "refuse_without_subtopics"]

DIVERSITY_FAMILIES = ("alpha_ndcg",)
SubtopicQrels = Mapping[str, Mapping[str, Mapping[str, int]]]


def refuse_without_subtopics(metrics: Iterable[str | Metric] | str) -> None:
    """An InputError when ``metrics`` hold a diversity metric, before ordinary qrels are read.

    >>> refuse_without_subtopics(["ndcg@10"])  # nothing to refuse
    """
    for metric in parse_metrics(metrics):
        if metric.name in DIVERSITY_FAMILIES:
            raise InputError(
                f"{metric} needs subtopic qrels (qid subtopic docid grade, the TREC Web track "
                "diversity format), not ordinary qrels: pass --subtopic-qrels "
                "(Python: ragmeter.metrics.compute_diversity)"
            )


def _ordered(qid: str, ranking: Any) -> list[str]:
    if isinstance(ranking, Mapping):
        for score in ranking.values():
            if isinstance(score, float) and math.isnan(score):
                raise InputError(f"run query {qid}: a score is NaN")
        return [d for d, _ in sorted(ranking.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]
    if isinstance(ranking, list | tuple) or hasattr(ranking, "tolist"):
        listed = ranking.tolist() if hasattr(ranking, "tolist") else ranking
        return list(dict.fromkeys(listed))
    raise InputError(
        f"run query {qid}: a ranking must be a dict of doc id -> score or a list of "
        f"doc ids, not {type(ranking).__name__}"
    )


def _coverage(qid: str, subtopics: Any) -> dict[str, frozenset[str]]:
    """doc -> the subtopics it is relevant to, refusing ordinary ``{doc: grade}`` qrels."""
    if not isinstance(subtopics, Mapping) or not all(
        isinstance(docs, Mapping) for docs in subtopics.values()
    ):
        raise InputError(
            f"qrels query {qid}: alpha_ndcg needs subtopic qrels "
            "{qid: {subtopic: {doc: grade}}}, not ordinary qrels {qid: {doc: grade}} "
            "(read TREC Web track diversity qrels with read_subtopic_qrels)"
        )
    covers: dict[str, set[str]] = {}
    for subtopic, docs in subtopics.items():
        for doc, grade in docs.items():
            if grade > 0:
                covers.setdefault(doc, set()).add(str(subtopic))
    return {doc: frozenset(found) for doc, found in covers.items()}


def _gains(
    ranked: Iterable[str], covers: Mapping[str, frozenset[str]], alpha: float
) -> list[float]:
    seen: dict[str, int] = {}
    out = []
    for doc in ranked:
        found = covers.get(doc, frozenset())
        out.append(sum((1.0 - alpha) ** seen.get(s, 0) for s in found))
        for s in found:
            seen[s] = seen.get(s, 0) + 1
    return out


def _greedy_ideal(covers: Mapping[str, frozenset[str]], alpha: float, k: int) -> list[str]:
    """The greedy ideal ranking's first k documents (best gain next; ties: largest id).

    Greedy is not optimal, so its tie rule moves the ideal DCG: the largest id first is the
    rule under which these values equal TREC's ndeval (through pyndeval) exactly.
    """
    left = sorted(covers, reverse=True)
    seen: dict[str, int] = {}
    ideal: list[str] = []
    while left and len(ideal) < k:
        best, best_gain = left[0], -1.0
        for doc in left:  # sorted descending: the first of equal gains is the largest id
            gain = sum((1.0 - alpha) ** seen.get(s, 0) for s in covers[doc])
            if gain > best_gain:
                best, best_gain = doc, gain
        ideal.append(best)
        left.remove(best)
        for s in covers[best]:
            seen[s] = seen.get(s, 0) + 1
    return ideal


def _dcg(gains: Iterable[float]) -> float:
    return sum(g / math.log2(r + 1) for r, g in enumerate(gains, 1))


def compute_diversity(
    qrels: SubtopicQrels,
    run: Mapping[str, Any],
    metrics: Iterable[str | Metric] | str,
    *,
    depth: int | None = None,
) -> MetricsResult:
    """alpha-nDCG@k per question from subtopic qrels (Clarke et al. 2008).

    >>> qrels = {"q": {"1": {"a": 1, "b": 1}, "2": {"a": 1, "c": 1}}}
    >>> result = compute_diversity(qrels, {"q": ["b", "a", "c"]}, ["alpha_ndcg@1"])
    >>> result.means  # b covers one subtopic; the ideal first document, a, covers two
    {'alpha_ndcg@1': 0.5}
    """
    wanted = parse_metrics(metrics)
    for metric in wanted:
        if metric.name not in DIVERSITY_FAMILIES:
            raise MetricNameError(
                f"{metric} is not a diversity metric: compute it from ordinary qrels with "
                "compute_metrics (compute_diversity computes alpha_ndcg@k)"
            )
    qids = list(qrels)
    if not qids:
        raise InputError(EMPTY_QRELS)
    if depth is not None:
        run = cut_run(run, depth)
    per_query: dict[str, dict[str, float]] = {str(m): {} for m in wanted}
    missing: list[str] = []
    for qid in qids:
        covers = _coverage(qid, qrels[qid])
        ranking = run.get(qid)
        if ranking is None:
            missing.append(qid)
        ranked = [] if ranking is None else _ordered(qid, ranking)
        for metric in wanted:
            alpha, k = float(metric.param("alpha")), int(metric.k or 0)
            ideal = _dcg(_gains(_greedy_ideal(covers, alpha, k), covers, alpha))
            actual = _dcg(_gains(ranked[:k], covers, alpha))
            per_query[str(metric)][qid] = actual / ideal if ideal > 0 else 0.0
    means = {name: sum(v.values()) / len(qids) for name, v in per_query.items()}
    return MetricsResult(means=means, per_query=per_query, missing=sorted(missing))
