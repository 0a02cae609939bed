"""The end of a fresh ``evaluate()`` run from what it kept on the way (issue 29.2).

While a run goes, each result is written to the store and let go; ``evaluate()`` keeps
only a :class:`Tally`: the scoring inputs (:class:`~ragmeter.evaluation.score_inputs.
ScoreInputs`), the counts behind the run's warnings, and per question its stored columns
without ranking or ``extra`` plus its summary (:func:`~ragmeter.evaluation.summary.
row_summary`, computed once for the store and for the report). :func:`finish_scored`
scores the run from these and builds its report as ``show`` does
(:func:`~ragmeter.evaluation.brief.brief_report`): the misses' rankings are read back from
the store, every other row has ``retrieved == []``, and ``report.results`` reads the store
when asked (:class:`StoredResults`). ``build_report(store, run)`` spells out every row.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragmeter.evaluation.brief import StoredSummaries, brief_report
from ragmeter.evaluation.report import MISS_TOP, RunReport, _faithfulness
from ragmeter.evaluation.score_inputs import ScoreInputs
from ragmeter.evaluation.scoring import Judgments, Level, default_metrics, score_inputs
from ragmeter.evaluation.unknowns import answer_unknown, unknown_warnings_from
from ragmeter.executors.collector import frozen_elsewhere, paused
from ragmeter.gold.goldset import GoldSet
from ragmeter.run import QuestionResult

if TYPE_CHECKING:
    from ragmeter.store import Store

__all__ = ["StoredResults", "Tally", "finish_scored", "quiet_collector"]


@dataclass
class Tally:
    """What a fresh run keeps of its results (see the module doc)."""

    gold: GoldSet
    judgments: Judgments
    k: int
    inputs: ScoreInputs
    # Per question, as columns in the order results came (``kept_at``: item id -> position):
    # its latency, error, answer and summary. No object per question that the garbage
    # collector walks (a summary of plain values is not tracked): a tuple per question made
    # it walk 100,000 of them while the run went (issue 29.2).
    kept_at: dict[str, int] = field(default_factory=dict)
    ids: list[str] = field(default_factory=list)
    latencies: list[float | None] = field(default_factory=list)
    errors: list[str | None] = field(default_factory=list)
    answers: list[str | None] = field(default_factory=list)
    summaries: list[dict[str, Any]] = field(default_factory=list)
    any_hits: bool = False
    any_judgeable: bool = False
    by_document: int = 0
    # item id -> covers resting on an edge overlap nothing placed (passages.unplaced_warning)
    unplaced: dict[str, int] = field(default_factory=dict)
    any_answer: bool = False
    unknown_answers: list[str] = field(default_factory=list)
    empty_answers: int = 0

    # The scoring inputs' judgments are a copy of ``judgments.qrels`` at doc level (what
    # ``start`` makes): a doc-level grade read from ``judgments`` never raises one of them,
    # so ``add_plain`` may take a plain result's ranking alone.
    plain: bool = False

    @classmethod
    def start(cls, gold: GoldSet, judgments: Judgments, k: int) -> Tally:
        inputs = ScoreInputs.start(gold, level=judgments.level, k=k, qrels=judgments.qrels)
        plain = judgments.level == "doc" and bool(judgments.qrels)
        return cls(gold, judgments, k, inputs, plain=plain)

    def add_plain(
        self, result: QuestionResult, summary: dict[str, Any], keys: tuple[str, ...]
    ) -> None:
        """:meth:`add` for a result of ``evaluate()``'s plain path (``plain`` only): hits,
        no error, no answer, no answer check, doc-level grades read from ``judgments``,
        ``keys`` its hits' documents (issue 29.2)."""
        latency = result.latency_ms
        self.inputs.add_plain(result.item_id, keys, latency)
        self._keep(result.item_id, latency, None, None, summary)
        self.any_hits = True

    def add(self, result: QuestionResult, summary: dict[str, Any]) -> None:
        """Keep what scoring, the warnings and the report read of one result."""
        self.inputs.add(result)
        self._keep(result.item_id, result.latency_ms, result.error, result.answer, summary)
        self.any_answer = self.any_answer or result.answer is not None
        if result.error is not None:
            return
        self.by_document += int(result.extra.get("judged_by_document", 0))
        if result.extra.get("unplaced"):
            self.unplaced[result.item_id] = int(result.extra["unplaced"])
        if result.hits:
            self.any_hits = True
            if self.judgments.level == "passage" and not self.any_judgeable:
                self.any_judgeable = any(map(self.judgments.judgeable, result.hits)) or any(
                    result.extra.get("texts") or ()
                )
        if result.item_id not in self.gold:
            return
        if answer_unknown(self.gold[result.item_id], result, self.k):
            self.unknown_answers.append(result.item_id)
        self.empty_answers += bool(result.extra.get("answer_empty"))

    def _keep(
        self,
        item_id: str,
        latency: float | None,
        error: str | None,
        answer: str | None,
        summary: dict[str, Any],
    ) -> None:
        """Keep one result's columns (a repeated item id replaces its earlier ones)."""
        new = len(self.ids)
        position = self.kept_at.setdefault(item_id, new)
        if position == new:
            self.ids.append(item_id)
            self.latencies.append(latency)
            self.errors.append(error)
            self.answers.append(answer)
            self.summaries.append(summary)
            return
        self.latencies[position], self.errors[position] = latency, error
        self.answers[position], self.summaries[position] = answer, summary

    @property
    def brief(self) -> dict[str, _Kept]:
        """What was kept, by item id: ``(latency, error, answer, summary)``."""
        return {
            item_id: (self.latencies[p], self.errors[p], self.answers[p], self.summaries[p])
            for item_id, p in self.kept_at.items()
        }

    def kept(self) -> StoredSummaries:
        """What was kept, as the report reads it."""
        return StoredSummaries(
            [(self.ids, self.latencies, self.errors, self.answers, self.summaries)]
        )

    def settle(self) -> tuple[Level, list[str]]:
        """The level the run is scored at and its warnings (``Judgments.settle`` and
        ``unknowns.unknown_warnings`` from the counts)."""
        level, warnings = self.judgments.settle_counts(
            self.any_hits, self.any_judgeable, self.by_document, self.unplaced
        )
        warnings += unknown_warnings_from(
            self.gold, self.unknown_answers, self.empty_answers, self.k
        )
        return level, warnings


def finish_scored(
    store: Store, run_id: int, tally: Tally, metrics: Sequence[str] | None
) -> RunReport:
    """``report.finalize_run`` for a fresh run from its :class:`Tally`: score, store the
    metrics, close the run (``complete``, or ``interrupted`` when questions are missing).
    ``tally``'s scoring inputs are let go once scored, before the report is built."""
    gold = tally.gold
    run = store.get_run(run_id)
    verdicts = _faithfulness(store, run.id)
    has_answers = any(i.answer_contains for i in gold)
    wanted = list(metrics or default_metrics(run.k, has_answers=has_answers))
    if tally.any_answer:
        if has_answers:
            wanted.append("answer_ok")
        if verdicts:
            wanted.append("faithful")
    tally.inputs.faithful = {i: bool(v["supported"]) for i, v in verdicts.items()}
    scores = score_inputs(tally.inputs, list(dict.fromkeys(wanted)))
    tally.inputs = ScoreInputs(gold, tally.k)  # scored: its rankings' memory serves the report
    store.set_metrics(run.id, scores.means, scores.per_query)
    status = "complete" if len(tally.ids) == len(gold) else "interrupted"
    n_errors = len(tally.errors) - tally.errors.count(None)
    run = store.finish_run(run.id, status, n_questions=len(gold), n_errors=n_errors)
    return brief_report(
        store,
        run,
        gold,
        tally.kept(),
        scores.means,
        scores.per_query,
        results=StoredResults(store, run.id),
        keep=MISS_TOP,  # what the report's misses list shows
    )


# (latency, error, answer, summary): what brief.StoredSummaries keeps of a stored row
_Kept = tuple[float | None, str | None, str | None, dict[str, Any] | None]


class StoredResults(Mapping[str, QuestionResult]):
    """A run's results (hits without text), read from its store when asked.

    Iterating gives the item ids in the order they were stored; ``values()`` and
    ``items()`` read the run page by page.
    """

    def __init__(self, store: Store, run_id: int) -> None:
        self._store = store
        self._run_id = run_id

    def __getitem__(self, item_id: str) -> QuestionResult:
        found = self._store.results_for(self._run_id, [item_id])
        if item_id not in found:
            raise KeyError(item_id)
        return found[item_id]

    def __iter__(self) -> Iterator[str]:
        return (result.item_id for result, _ in self._store.result_summaries(self._run_id))

    def __len__(self) -> int:
        return len(self._store.completed_items(self._run_id))

    def values(self) -> Any:
        """Every result, read page by page."""
        return list(self._store.results(self._run_id))

    def items(self) -> Any:
        """(item id, result) of every result, read page by page."""
        return [(result.item_id, result) for result in self._store.results(self._run_id)]

    def __repr__(self) -> str:
        return f"<StoredResults of run {self._run_id}>"


# Allocations between young collections while a run goes: each question makes and drops
# dozens of containers, and the writer's queue keeps a few thousand results (with their
# hits) alive across collections. At 20,000 the young and middle passes over them cost
# 2.5 s of a 100,000-question run, at 100,000 0.8 s (issue 29.2); cyclic garbage a
# retriever makes waits at most this many allocations longer.
_GC_YOUNG = 100_000


@contextmanager
def _kept_for_the_run() -> Iterator[None]:
    """What is made inside is made with the collector paused, then frozen (see
    :func:`quiet_collector`)."""
    with paused():
        yield
        gc.freeze()


@contextmanager
def quiet_collector() -> Iterator[Callable[[], AbstractContextManager[None]]]:
    """Keep what was alive before the run (the gold set, an index) out of the garbage
    collector's full passes while it goes: at 100,000 questions they cost a third of the
    run (issue 29.2). A process that froze objects itself (the dashboard) is left alone; what
    the command's own start froze (``executors.collector.loading``) is frozen here anyway.

    Yields ``kept``: ``with kept():`` around what the run keeps (its judgments, scoring
    inputs, report) makes it with the collector paused and freezes what is alive after, so
    the young passes while questions run do not walk 200,000 judgments once more (issue
    29.2); where the collector is left alone, ``kept`` only pauses it."""
    if frozen_elsewhere():
        yield paused
        return
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(thresholds[0], _GC_YOUNG), *thresholds[1:])
    try:
        yield _kept_for_the_run
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
