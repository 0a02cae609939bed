"""Judge-filled ranking metrics corrected by people's grades (issue 17.2).

A run rescored with ``judge relevance --fill-with-judge`` (``labels = "gold+judge"``) has
ranking metrics that are partly the judge's opinion. With people's grades for the chunks the
judge graded on some questions (``judge relevance-labels export`` / ``import``), each metric
gets a prediction-powered estimate (:func:`ragmeter.metrics.uncertainty.ppi_mean`):

- judge values ``j``: the run's stored per-question values (gold + judge grades);
- people's values ``h`` on the fully labelled questions: the same metric recomputed with
  gold + people's grades in place of the judge's
  (:func:`ragmeter.judging.filling.filled_scores`, the code ``--fill-with-judge`` uses).

The labelled questions are a random sample of the S questions the judge graded chunks for,
not of all N: on the other questions people's value *is* the judge's (there is no judge
grade to replace), so the mean correction over the run is ``S/N`` times the mean over the
sample::

    estimate = mean(j over N) + (S/N) * mean(h - j over n)
    variance = var(j over N) / N + (S/N)^2 * var(h - j over n) / n

With S = N this is ``ppi_mean`` itself; it is computed by ``ppi_mean`` with the residuals
scaled by S/N. Metrics whose values are shares (hit, recall, nDCG, ...) are cut to [0, 1];
counts and DCG are not cut.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.errors import EvaluationError, RunNotFoundError
from ragmeter.gold.goldset import GoldSet
from ragmeter.judging.filling import filled_scores, ranking_metrics
from ragmeter.judging.relevance_labels import judge_grades, people_grades
from ragmeter.metrics import parse_metric
from ragmeter.metrics.uncertainty import UNIT_RANGE, JudgedMean, ppi_mean

__all__ = ["SHARE_FAMILIES", "corrected_relevance", "stratified_ppi"]

#: Ranking families whose per-question value is a share in [0, 1]; the estimate and its
#: interval are cut to it. Others (counts, DCG, RBP with graded gains, alpha-nDCG's greedy
#: ideal) keep their raw figures.
SHARE_FAMILIES = frozenset(
    {
        "hit",
        "recall",
        "precision",
        "mrr",
        "ndcg",
        "map",
        "rprec",
        "f1",
        "bpref",
        "infap",
        "err",
        "judged",
        "rbp_resid",
    }
)

# Stored and recomputed judge values must agree to this (they come from the same code).
_STALE_TOLERANCE = 1e-9


def stratified_ppi(
    judge_all: Sequence[float],
    judged_share: float,
    judge_labelled: Sequence[float],
    human_labelled: Sequence[float],
    *,
    bounds: tuple[float, float] | None = UNIT_RANGE,
) -> JudgedMean:
    """``ppi_mean`` when the labels sample only a share of the questions (the rest exact).

    ``judged_share`` = S/N, the share of the questions the labels were drawn from; on the
    others people and judge agree by construction, so the correction is scaled by it.

    >>> full = stratified_ppi([1.0, 1.0, 0.0, 1.0], 1.0, [1.0, 1.0], [0.0, 1.0])
    >>> full == ppi_mean([1.0, 1.0, 0.0, 1.0], [1.0, 1.0], [0.0, 1.0])
    True
    >>> round(stratified_ppi([1.0, 1.0, 0.0, 1.0], 0.5, [1.0, 1.0], [0.0, 1.0]).estimate, 3)
    0.5
    """
    if not 0.0 < judged_share <= 1.0:
        raise ValueError(f"judged_share must lie in (0, 1], got {judged_share}")
    scaled = [
        j + judged_share * (h - j) for j, h in zip(judge_labelled, human_labelled, strict=True)
    ]
    return ppi_mean(judge_all, list(judge_labelled), scaled, bounds=bounds)


def _bounds(name: str, values: Sequence[float]) -> tuple[float, float] | None:
    low, high = UNIT_RANGE
    if parse_metric(name).family.name in SHARE_FAMILIES and all(low <= v <= high for v in values):
        return UNIT_RANGE
    return None


def corrected_relevance(store: Any, run_id: int) -> dict[str, JudgedMean]:
    """Each judge-filled ranking metric of a run, corrected by people's grades.

    ``{}`` unless the run was rescored with ``--fill-with-judge``; a metric is
    "uncalibrated" until some question is fully labelled. Stops with ``EvaluationError``
    when the stored metric no longer matches the stored judge grades (re-judged since
    the fill): the correction would subtract the wrong numbers.

    >>> from ragmeter.store import Store
    >>> with Store.memory() as store:
    ...     corrected_relevance(store, 1)
    {}
    """
    try:
        run = store.get_run(run_id)
    except RunNotFoundError:  # nothing stored, nothing to correct (as for faithful)
        return {}
    if run.config.get("labels") != "gold+judge":
        return {}
    judged = judge_grades(store, run.id)
    people = people_grades(store, run.id, judged)
    names = ranking_metrics(run.metrics)
    stored = store.question_metrics(run.id, names)
    human: Mapping[str, dict[str, float]] = {}
    if people:
        gold = GoldSet.from_records(store.load_gold_records(run.gold_hash), name=run.name)
        results = [r for r in store.results(run.id) if r.item_id in people]
        _check_fresh(run, stored, filled_scores(gold, results, run, _pairs(judged), names), people)
        human = filled_scores(gold, results, run, _pairs(people), names).per_query
    out: dict[str, JudgedMean] = {}
    for name in names:
        values = stored.get(name) or {}
        if not values:
            continue
        labelled = [q for q in people if q in values]
        share = sum(1 for q in values if judged.get(q)) / len(values)
        j = [values[q] for q in labelled]
        h = [human[name][q] for q in labelled]
        bounds = _bounds(name, [*values.values(), *h])
        if share == 0.0:
            out[name] = ppi_mean(list(values.values()), [], [], bounds=bounds)
        else:
            out[name] = stratified_ppi(list(values.values()), share, j, h, bounds=bounds)
    return out


def _pairs(grades: Mapping[str, Mapping[str, int]]) -> dict[tuple[str, str], int]:
    return {(q, c): g for q, chunks in grades.items() for c, g in chunks.items()}


def _check_fresh(
    run: Any,
    stored: Mapping[str, Mapping[str, float]],
    recomputed: Any,
    questions: Mapping[str, Any],
) -> None:
    for name, values in recomputed.per_query.items():
        for question in questions:
            was, now = stored.get(name, {}).get(question), values.get(question)
            if was is None or now is None or abs(was - now) > _STALE_TOLERANCE:
                raise EvaluationError(
                    f"run {run.id} ({run.name}): the stored {name} of question {question!r} "
                    f"({was}) is not what the stored judge grades give ({now}); the run was "
                    f"re-judged after --fill-with-judge: run `ragmeter judge relevance "
                    f"{run.id} --fill-with-judge` again"
                )
