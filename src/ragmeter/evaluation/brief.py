"""A run's report that decodes only the rankings it prints (issue 29.1).

:func:`build_brief_report` reads each question's stored columns and summary
(:func:`~ragmeter.evaluation.summary.row_summary`) and decodes the ranking only of the
questions whose hits a summary shows: the retrieval misses (and unfound questions), the
questions a relevance judge labelled (their coverage needs the items), and rows stored
without a summary (stores written before it). Every other row has ``retrieved == []``;
metrics, hit rate, misses, tags, blame and coverage equal :func:`build_report`'s.

The counts come from a light record per question (:mod:`ragmeter.evaluation.tallies`), and a
``QuestionRow`` or ``Miss`` is built only when it is read (``report.rows``, ``misses`` and
``errors`` are :class:`~ragmeter.evaluation.lazy_rows.LazyRows`); a miss's top hits are
decoded then. ``show`` of 100,000 questions builds the rows it prints, not 100,000.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from itertools import compress, repeat
from operator import attrgetter, is_
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from ragmeter.errors import EvaluationError
from ragmeter.evaluation.blame import Blame, blame, claim_blame
from ragmeter.evaluation.lazy_rows import LazyRows
from ragmeter.evaluation.report import (
    MISS_TOP,
    QuestionRow,
    RunReport,
    _claim_metrics,
    _faithfulness,
    _row,
    _with_generation,
    gold_fields,
    miss_of,
    refine_blame,
    report_of,
    retrieved_entries,
    with_answer,
)
from ragmeter.evaluation.summary import StoredSummaries, covered, judge_labelled
from ragmeter.evaluation.tallies import tally
from ragmeter.gold.stored import StoredGold, expected_of
from ragmeter.run import QuestionResult

if TYPE_CHECKING:
    from ragmeter.gold.goldset import GoldSet
    from ragmeter.run import RunInfo
    from ragmeter.store import Store

__all__ = ["PREFETCH_MISSES", "StoredSummaries", "brief_report", "build_brief_report"]

#: Misses whose top hits a brief report reads at once: what ``show`` and ``eval`` print
#: (``cli._render.SHOW_MISSES``); the others are read when someone reads them.
PREFETCH_MISSES = 25


def build_brief_report(
    store: Store,
    run_ref: int | str,
    *,
    gold: GoldSet | Sequence[Any] | None = None,
    per_query: bool = True,
) -> RunReport:
    """:func:`~ragmeter.evaluation.report.build_report` without decoding the rankings of
    the rows a summary does not show (``retrieved`` is empty for those; a miss spells out
    its top :data:`~ragmeter.evaluation.report.MISS_TOP`); ``per_query=False`` leaves the
    per-question metric values out too (``per_query`` is empty).

    ``gold`` is the run's gold set or its items; by default the stored snapshot is read as
    light columns (:class:`~ragmeter.gold.stored.StoredGold`), without pydantic."""
    run = store.get_run(run_ref)
    if gold is None:
        gold = StoredGold(store.load_gold_text(run.gold_hash), name=run.name)
    brief = StoredSummaries(store.summary_pages(run.id))
    metrics = store.question_metrics(run.id) if per_query else {}
    return brief_report(store, run, gold, brief, dict(run.metrics), metrics)


def brief_report(
    store: Store,
    run: RunInfo,
    gold: GoldSet | Sequence[Any],
    brief: Mapping[str, tuple[QuestionResult, dict[str, Any] | None]],
    means: dict[str, float],
    per_query: Mapping[str, dict[str, float]],
    *,
    results: Mapping[str, QuestionResult] | None = None,
    keep: int | None = None,
) -> RunReport:
    """The brief report of ``run`` from each question's stored columns and summary
    (``brief``: item id -> (result without ranking or extra, summary); a
    :class:`StoredSummaries` is read as its columns) and its metrics; ``evaluate()`` passes
    what it kept in memory (issue 29.2). ``results`` becomes ``report.results`` (default:
    the decoded rows only); ``keep`` limits the hits a spelled-out row lists (all by
    default).

    The counts come from a light record per question; ``rows``, ``misses`` and ``errors``
    are :class:`~ragmeter.evaluation.lazy_rows.LazyRows`: a row is built when it is read,
    and a miss's top hits are read from ``store`` then (the first
    :data:`PREFETCH_MISSES` misses now, so what ``show`` and ``eval`` print needs no open
    store)."""
    verdicts = _faithfulness(store, run.id)
    claims = _claim_metrics(_faithfulness(store, run.id, "claims"))
    labelled = {item_id for item_id, _ in judge_labelled(store, run.id)}
    golds = _GoldColumns.of(gold)
    kept = StoredSummaries.of(brief)
    at = kept.positions(golds.ids)
    records, whole, counted = _records(golds, kept, at, run.k, labelled, verdicts, claims)
    ids, items = golds.ids, golds.items
    decoded = store.results_for(run.id, [ids[p] for p in whole])
    built: dict[int, QuestionRow] = {}
    for position in whole:
        item = items[position]
        row = _row(item, decoded.get(item.id), run.k, run.level, keep)
        built[position] = records[position] = _with_generation(row, item, decoded, verdicts)
    built.update(zip(whole, refine_blame(list(built.values()), claims), strict=True))
    for position, row in built.items():
        records[position] = row
    builder = _Rows(store, run, items, kept, at, records, verdicts)
    rows = LazyRows(records, builder.rows, built=dict(built))
    tallied = tally(records, fine=bool(claims))
    misses = LazyRows(records, lambda ps: [miss_of(row) for row in rows.at(ps)], tallied.misses)
    _ = misses[:PREFETCH_MISSES]  # read while the store is surely open
    return report_of(
        store,
        run,
        tallied,
        rows=rows,
        misses=misses,
        errors=rows.at(tallied.errors),
        means=means,
        per_query=per_query,
        judged=covered(store, run, list(built.values()), counted),
        results=decoded if results is None else results,
    )


class _Record(NamedTuple):
    """What a brief report counts of one question whose row is not built yet (named like
    :class:`~ragmeter.evaluation.report.QuestionRow`'s fields)."""

    id: str
    tags: Sequence[str]
    expected: Sequence[str]
    first_relevant_rank: int | None
    hit: bool
    latency_ms: float | None
    error: str | None
    answer: str | None
    answer_ok: bool | None
    blame: Blame | None


class _GoldColumns(NamedTuple):
    """What a brief report reads of every gold item, by position (a
    :class:`~ragmeter.gold.stored.StoredGold` has these columns already), and the items."""

    ids: list[str]
    tags: Sequence[Sequence[str]]
    expected: Sequence[Sequence[str]]
    answer_contains: Sequence[Sequence[str]]
    items: Sequence[Any]

    @classmethod
    def of(cls, gold: GoldSet | Sequence[Any]) -> _GoldColumns:
        if isinstance(gold, StoredGold):
            return cls(gold.ids, gold.tags, gold.expected, gold.answer_contains, gold)
        items = list(gold)
        ids, tags, answer_contains = (list(map(attrgetter(name), items)) for name in _FIELDS)
        return cls(ids, tags, list(map(expected_of, items)), answer_contains, items)


_new = tuple.__new__
_FIELDS = ("id", "tags", "answer_contains")  # what _GoldColumns reads of an item as it is


def _records(
    golds: _GoldColumns,
    kept: StoredSummaries,
    at: Sequence[int | None],
    k: int,
    labelled: set[str],
    verdicts: dict[str, dict[str, Any]],
    claims: Mapping[str, Any],
) -> tuple[list[Any], list[int], tuple[int, int]]:
    """A :class:`_Record` per question from its summary (what :func:`_summary_row` and
    :func:`~ragmeter.evaluation.report.refine_blame` would make of it, without the row);
    None and its position in ``whole`` for a question whose row is built from its whole
    ranking (no result, no summary, or labelled by a judge: coverage reads its items);
    and (top-k items, gold-labelled ones) summed over the evaluated questions recorded."""
    ids, tags, expected = golds.ids, golds.tags, golds.expected
    first, errors, latency, other = kept.first, kept.error, kept.latency, kept.other
    if not (labelled or other or claims) and None not in at:
        return _plain_records(golds, kept, at, k)
    records: list[Any] = [None] * len(ids)
    whole: list[int] = []
    top_n = gold_n = 0
    for p, q in enumerate(at):
        if q is None or (labelled and ids[p] in labelled) or (q in other and other[q] is None):
            whole.append(p)
            continue
        error = errors[q]
        if error is None:
            top_n += kept.top[q]
            gold_n += kept.gold[q]
        if claims or q in other:  # an answer to check, a blame to give
            records[p] = _answered(golds, kept, p, q, k, verdicts, claims)
            continue
        rank = first[q]
        records[p] = _new(_Record, (ids[p], tags[p], expected[p], rank,
                          rank is not None and rank <= k, latency[q], error, None, None, None))  # fmt: skip
    return records, whole, (top_n, gold_n)


def _plain_records(
    golds: _GoldColumns, kept: StoredSummaries, at: Sequence[int | None], k: int
) -> tuple[list[Any], list[int], tuple[int, int]]:
    """:func:`_records` of a run whose every question has a summary of its ranks only (row
    ``at[p]`` of ``kept`` for question ``p``), and no judge labels or claims: columns zipped
    into records by C-level maps, no loop body per question (issue 29.2)."""
    kept_columns: tuple[list[Any], ...] = (
        kept.first,
        kept.latency,
        kept.error,
        kept.top,
        kept.gold,
    )
    first, latency, error, top, gold = (
        list(map(column.__getitem__, cast("Sequence[int]", at)))  # no None: checked
        for column in kept_columns
    )
    hit = [rank is not None and rank <= k for rank in first]
    columns = (golds.ids, golds.tags, golds.expected, first, hit, latency, error)
    records = list(
        map(_new, repeat(_Record), zip(*columns, repeat(None), repeat(None), repeat(None)))
    )
    ok = list(map(is_, error, repeat(None)))  # evaluated: no error
    return records, [], (sum(compress(top, ok)), sum(compress(gold, ok)))


def _answered(
    golds: _GoldColumns,
    kept: StoredSummaries,
    p: int,
    q: int,
    k: int,
    verdicts: dict[str, dict[str, Any]],
    claims: Mapping[str, Any],
) -> _Record:
    """The record of question ``p`` (row ``q`` of ``kept``) whose summary has more than its
    ranks (an answer), or whose run's claims were judged."""
    item_id, error, answer = golds.ids[p], kept.error[q], kept.answer[q]
    summary = kept.summary(q)
    assert summary is not None  # rows without one are built whole
    first = summary["first"]
    ok = coarse = None
    answered = error is None and "ctx" in summary
    if answered:
        from ragmeter.evaluation.scoring import answer_ok  # numpy: only for answered runs

        ok = answer_ok(answer, golds.answer_contains[p])
        verdict = verdicts.get(item_id)
        faithful = bool(verdict["supported"]) if verdict is not None else None
        coarse = blame(answer_ok=ok, faithful=faithful, relevant_in_context=bool(summary["ctx"]))
    return _Record(
        item_id,
        golds.tags[p],
        golds.expected[p],
        first,
        first is not None and first <= k,
        kept.latency[q],
        error,
        answer if answered else None,
        ok,
        claim_blame(coarse, claims.get(item_id)) if claims else coarse,
    )


class _Rows:
    """Builds a brief report's rows when they are read: a row that missed lists its top
    :data:`~ragmeter.evaluation.report.MISS_TOP` hits, read from the store then."""

    def __init__(
        self,
        store: Store,
        run: RunInfo,
        items: Sequence[Any],
        kept: StoredSummaries,
        at: Sequence[int | None],
        records: Sequence[Any],
        verdicts: dict[str, dict[str, Any]],
    ) -> None:
        self._store, self._run, self._items, self._kept, self._at = store, run, items, kept, at
        self._records, self._verdicts = records, verdicts
        self._tops: dict[str, list[dict[str, Any]]] = {}

    def rows(self, positions: list[int]) -> list[QuestionRow]:
        missed = [p for p in positions if _shows_top(self._records[p])]
        wanted = [self._records[p].id for p in missed if self._records[p].id not in self._tops]
        try:
            found = self._store.results_for(self._run.id, wanted, top=MISS_TOP) if wanted else {}
        except Exception as error:  # a closed memory store has no tables left
            raise self._gone(wanted[0], f" ({error})") from error
        for item_id in wanted:
            if item_id not in found:  # the run was deleted since
                raise self._gone(item_id, "")
            self._tops[item_id] = retrieved_entries(found[item_id], MISS_TOP)
        return [self._row(p) for p in positions]

    def _gone(self, item_id: str, why: str) -> EvaluationError:
        return EvaluationError(
            f"run {self._run.id}: question {item_id}'s ranking could not be read from the "
            f"store{why}; read a report's misses while its store is open"
        )

    def _row(self, position: int) -> QuestionRow:
        item, record, q = self._items[position], self._records[position], self._at[position]
        assert q is not None  # rows without a result were built whole
        summary = self._kept.summary(q)
        assert summary is not None  # rows without one were built whole
        shown = self._tops[item.id] if _shows_top(record) else []
        result = self._kept.result(q)
        row = _summary_row(item, result, summary, self._run.k, self._verdicts, shown)
        return row if row.blame == record.blame else replace(row, blame=record.blame)


def _shows_top(record: Any) -> bool:
    """A question without a hit (and no error) lists its top hits, as a miss does."""
    return record.error is None and not record.hit


def _summary_row(
    item: Any,
    result: QuestionResult,
    summary: dict[str, Any],
    k: int,
    verdicts: dict[str, dict[str, Any]],
    retrieved: list[dict[str, Any]],
) -> QuestionRow:
    expected, gold = gold_fields(item)
    first = summary["first"]
    row = QuestionRow(
        id=item.id,
        question=item.question,
        tags=list(item.tags),
        expected=expected,
        retrieved=retrieved,
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
