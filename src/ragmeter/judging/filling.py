"""Ranking metrics over gold + extra grades: the judge's, or people's in its place.

``ragmeter judge relevance --fill-with-judge`` rescores a run with the judge's grades for
the chunks the gold set does not label; the corrected estimate of those metrics (issue
17.2, :mod:`ragmeter.judging.corrected_relevance`) rescores the labelled questions with
people's grades instead. Both build their judgments here, so the two can only differ by the
grades they were given:

- gold labels win: a grade for a key the gold set already grades is ignored;
- a doc-level run maps each chunk to its document, and a document takes the highest grade
  of its chunks;
- passage and chunk levels keep chunk ids (``score_results`` turns a graded chunk that
  covers no gold entry into a relevant item of its own).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ragmeter.evaluation.scoring import Scores, score_results
from ragmeter.gold.goldset import GoldSet
from ragmeter.run import QuestionResult, RunInfo

__all__ = ["filled_qrels", "filled_scores", "ranking_metrics"]


def ranking_metrics(names: Iterable[str]) -> list[str]:
    """The ranking metrics among a run's metric names (the ones extra grades change).

    >>> ranking_metrics(["hit@5", "faithful", "latency_p50_ms", "hallucination"])
    ['hit@5']
    """
    from ragmeter.errors import MetricNameError
    from ragmeter.metrics import parse_metric

    out = []
    for name in names:
        try:
            if parse_metric(name).kind == "ranking":
                out.append(name)
        except MetricNameError:  # a stored name no metric spells is not rescored
            continue
    return out


def filled_qrels(
    gold: GoldSet,
    results: Sequence[QuestionResult],
    level: str,
    grades: Mapping[tuple[str, str], int],
) -> dict[str, dict[str, int]]:
    """Gold judgments plus ``grades`` (``(item id, chunk id) -> 0-3``) where gold is silent.

    >>> from ragmeter.documents import Hit
    >>> gold = GoldSet.from_records([{"id": "q", "question": "?", "relevant": [{"doc": "a"}]}])
    >>> hits = (Hit("a#0", "a"), Hit("b#0", "b"), Hit("b#1", "b"))
    >>> filled_qrels(gold, [QuestionResult("q", hits)], "doc",
    ...              {("q", "a#0"): 0, ("q", "b#0"): 1, ("q", "b#1"): 2})
    {'q': {'a': 1, 'b': 2}}
    """
    gold_qrels = gold.qrels()
    qrels = {item_id: dict(g) for item_id, g in gold_qrels.items()}
    docs = {(r.item_id, h.id): h.doc for r in results for h in r.hits}
    for (item_id, chunk_id), grade in grades.items():
        key = docs.get((item_id, chunk_id), chunk_id) if level == "doc" else chunk_id
        item_grades = qrels.setdefault(item_id, {})
        # Gold labels win; extra grades only fill gaps.
        if key not in gold_qrels.get(item_id, {}):
            item_grades[key] = max(item_grades.get(key, 0), grade)
    return qrels


def filled_scores(
    gold: GoldSet,
    results: Sequence[QuestionResult],
    run: RunInfo,
    grades: Mapping[tuple[str, str], int],
    metrics: Sequence[str],
) -> Scores:
    """``metrics`` of ``run`` scored over gold + ``grades`` (see :func:`filled_qrels`).

    >>> from ragmeter.documents import Hit
    >>> gold = GoldSet.from_records([{"id": "q", "question": "?", "relevant": [{"doc": "a"}]}])
    >>> run = RunInfo(id=1, name="r", created="", gold_hash="", retriever="", k=2,
    ...               level="doc", status="complete")
    >>> result = QuestionResult("q", (Hit("b#0", "b"), Hit("a#0", "a")))
    >>> filled_scores(gold, [result], run, {("q", "b#0"): 2}, ["mrr"]).means
    {'mrr': 1.0}
    """
    qrels = filled_qrels(gold, results, run.level, grades)
    return score_results(gold, results, level=run.level, k=run.k, metrics=metrics, qrels=qrels)
