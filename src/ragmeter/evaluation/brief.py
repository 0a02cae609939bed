"""A run's report that decodes only the rankings it prints (issue 29.1).

:func:`build_brief_report` reads each question's stored columns and summary
(:func:`~ragmeter.evaluation.summary.row_summary`) and decodes the ranking only of the
questions whose hits a summary shows: the retrieval misses (and unfound questions), the
questions a relevance judge labelled (their coverage needs the items), and rows stored
without a summary (stores written before it). Every other row has ``retrieved == []``;
metrics, hit rate, misses, tags, blame and coverage equal :func:`build_report`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ragmeter.evaluation.report import (
    QuestionRow,
    RunReport,
    _assemble,
    _faithfulness,
    _row,
    _stored_gold,
    _with_generation,
    gold_fields,
    with_answer,
)
from ragmeter.evaluation.summary import judge_labelled

if TYPE_CHECKING:
    from ragmeter.gold.goldset import GoldSet
    from ragmeter.run import QuestionResult, RunInfo
    from ragmeter.store import Store

__all__ = ["brief_report", "build_brief_report"]


def build_brief_report(
    store: Store, run_ref: int | str, *, gold: GoldSet | None = None, per_query: bool = True
) -> RunReport:
    """:func:`~ragmeter.evaluation.report.build_report` without decoding the rankings of
    the rows a summary does not show (``retrieved`` is empty for those); ``per_query=False``
    leaves the per-question metric values out too (``per_query`` is empty)."""
    run = store.get_run(run_ref)
    gold = gold if gold is not None else _stored_gold(store, run)
    brief = {
        result.item_id: (result, summary) for result, summary in store.result_summaries(run.id)
    }
    metrics = store.question_metrics(run.id) if per_query else {}
    return brief_report(store, run, gold, brief, dict(run.metrics), metrics)


def brief_report(
    store: Store,
    run: RunInfo,
    gold: GoldSet,
    brief: Mapping[str, tuple[QuestionResult, dict[str, Any] | None]],
    means: dict[str, float],
    per_query: dict[str, dict[str, float]],
    *,
    results: Mapping[str, QuestionResult] | None = None,
    keep: int | None = None,
) -> RunReport:
    """The brief report of ``run`` from each question's stored columns and summary
    (``brief``: item id -> (result without ranking or extra, summary)) and its metrics;
    ``evaluate()`` passes what it kept in memory (issue 29.2). ``results`` becomes
    ``report.results`` (default: the decoded rows only); ``keep`` limits the hits a
    spelled-out row lists (all by default)."""
    verdicts = _faithfulness(store, run.id)
    labelled = {item_id for item_id, _ in judge_labelled(store, run.id)}

    def shown(item_id: str, result: QuestionResult, summary: dict[str, Any] | None) -> bool:
        if summary is None or item_id in labelled:
            return True
        first = summary["first"]
        return result.error is None and (first is None or first > run.k)

    decoded = store.results_for(run.id, [i for i, (r, s) in brief.items() if shown(i, r, s)])
    rows: list[QuestionRow] = []
    counts: dict[str, tuple[int, int]] = {}
    for item in gold:
        found = brief.get(item.id)
        if found is None or item.id in decoded:
            row = _row(item, decoded.get(item.id), run.k, run.level, keep)
            rows.append(_with_generation(row, item, decoded, verdicts))
            continue
        result, summary = found
        assert summary is not None  # rows without one are decoded
        rows.append(_summary_row(item, result, summary, run.k, verdicts))
        counts[item.id] = (summary["top"], summary["gold"])
    shown_results = decoded if results is None else results
    return _assemble(store, run, rows, means, per_query, shown_results, counts)


def _summary_row(
    item: Any,
    result: QuestionResult,
    summary: dict[str, Any],
    k: int,
    verdicts: dict[str, dict[str, Any]],
) -> QuestionRow:
    expected, gold = gold_fields(item)
    first = summary["first"]
    row = QuestionRow(
        id=item.id,
        question=item.question,
        tags=list(item.tags),
        expected=expected,
        retrieved=[],
        first_relevant_rank=first,
        hit=first is not None and first <= k,
        latency_ms=result.latency_ms,
        error=result.error,
        gold=gold,
    )
    if result.error is not None or "ctx" not in summary:
        return row
    extra = {"generation_error": summary["gen"]} if "gen" in summary else {}
    return with_answer(row, item, result.answer, bool(summary["ctx"]), extra, verdicts)
