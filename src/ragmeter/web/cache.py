"""The dashboard's run views, read once per run and built in parts (issue 15.5).

A run page needs the run's summary and one small row per question; only the JSON API, an
expanded question, a side-by-side page and the multi-run views need whole questions. So
:class:`RunData` reads the run briefly (each question's stored summary, no ranking but the
misses' top hits) and decodes the rankings of a question, or a page of them, when one is
asked for (issue 29.1); :class:`RunViewCache` keeps the last few runs read. Neither keeps
any chunk text (``views.with_texts`` reads it for what is shown).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ragmeter.compare.health import HealthThresholds
from ragmeter.gold.goldset import GoldSet
from ragmeter.read.pages import (
    QUESTIONS_PER_PAGE,
    Page,
    drop_texts,
    light_rows,
    questions_page,
    rows_at,
    table_rows,
)
from ragmeter.read.view import RunView, no_cyclic_gc, read_run
from ragmeter.store import Store
from ragmeter.web.views import judged_view

if TYPE_CHECKING:
    from ragmeter.evaluation.report import QuestionRow

__all__ = ["RunData", "RunViewCache"]

#: Runs kept by a dashboard (a finished run never changes unless resumed or rescored).
RUN_VIEWS_KEPT = 8


class RunData:
    """One run, read (:func:`ragmeter.read.read_run`): ``summary`` (the run page's server
    data), ``rows`` (its question table), and whole questions built on demand
    (``question``, ``questions``).

    ``view()`` is :func:`ragmeter.web.views.run_view`'s dict, key for key.

    >>> import ragmeter
    >>> store = Store.memory()
    >>> gold = ragmeter.GoldSet.from_records([{"id": "q1", "question": "refunds?",
    ...     "relevant": [{"doc": "refunds.md"}]}])
    >>> _ = ragmeter.evaluate(gold, lambda q, k: [{"doc": "refunds.md"}], store=store, name="a",
    ...                       commit="")
    >>> data = RunData(store, "a")
    >>> data.rows[0]["first_relevant_rank"], data.question("q1")["retrieved"][0]["mark"]
    (1, 'gold')
    """

    def __init__(
        self,
        store: Store,
        ref: int | str,
        thresholds: HealthThresholds | None = None,
        *,
        gold: GoldSet | None = None,
    ):
        # Read briefly: totals, groups and charts from the stored summaries; the rankings
        # of a page or a question are decoded when one is asked for (issue 29.1). The
        # collector is paused as read_run pauses it: a row per question frees nothing.
        with no_cyclic_gc():
            view = read_run(store, ref, thresholds=thresholds, gold=gold, rankings="shown")
            self.id = view.run.id
            self.summary = view.summary()
            self.rows = table_rows(view)
        # Kept: the view without the chunk texts and the stored results. The rows are this
        # view's own: nothing else sees them.
        drop_texts(view)
        self.read: RunView = replace(view, report=replace(view.report, results={}))
        self._store = store
        self._built: dict[str, dict[str, Any]] = {}
        self._index: dict[str, int] = {}  # item id -> position

    def question(self, item_id: str) -> dict[str, Any] | None:
        """One question with everything its expanded row shows but chunk texts (None: no such)."""
        found = self.questions_of([item_id])
        return found[0] if found else None

    def questions_of(self, item_ids: Sequence[str]) -> list[dict[str, Any]]:
        """The questions ``item_ids`` (those the run has), in that order: a page of the
        side-by-side view, or its export."""
        if not self._index:
            self._index.update((r.id, p) for p, r in enumerate(light_rows(self.read)))
        positions = [self._index[i] for i in item_ids if i in self._index]
        return self._built_for(rows_at(self.read, positions))

    def questions(self) -> list[dict[str, Any]]:
        """Every question, in the run's order (every ranking decoded: the multi-run views)."""
        return self._built_for(rows_at(self.read, range(len(self.read.rows))))

    def page(
        self, *, page: int = 1, limit: int = QUESTIONS_PER_PAGE, tag: str | None = None,
        misses_only: bool = False,
    ) -> tuple[list[dict[str, Any]], Page]:  # fmt: skip
        """A page of the questions with ``tag`` / that missed (not found, or failed), only
        its rankings decoded (and only its rows built)."""
        kept = [
            p for p, r in enumerate(light_rows(self.read))
            if (tag is None or tag in r.tags) and not (misses_only and r.hit)
        ]  # fmt: skip
        where = Page(page, limit, len(kept))
        shown = rows_at(self.read, kept[where.offset : where.offset + limit])
        return self._built_for(shown), where

    def _built_for(self, rows: Sequence[QuestionRow]) -> list[dict[str, Any]]:
        """Whole questions of ``rows``, each built once (its ranking read once) and kept:
        a run's questions are read only as they are asked for, and then cost nothing."""
        missing = [row for row in rows if row.id not in self._built]
        if missing:
            built = questions_page(self._store, self.read, rows=missing, limit=None)[0]
            self._built.update((q["id"], q) for q in built)
        return [self._built[row.id] for row in rows]

    def view(self) -> dict[str, Any]:
        return {**self.summary, "questions": self.questions()}

    def fresh(self, store: Store) -> dict[str, Any]:
        """What changes without changing the run, read now: the corrected judge metrics
        (a new label changes them)."""
        return judged_view(store, self.id)


class RunViewCache:
    """The last few runs read, keyed on everything that changes when a run changes.

    A finished run is immutable unless it is resumed or rescored, which changes its
    status, counts or metrics, and so the key; so does a new ``ragmeter explain`` of it. Re-opening a big run (back button,
    another filter through the API) then costs no store reads.

    >>> cache = RunViewCache(size=2)
    >>> cache.data(Store.memory(), "latest")  # doctest: +SKIP
    """

    def __init__(self, size: int = RUN_VIEWS_KEPT):
        self._size = size
        self._items: dict[tuple[Any, ...], RunData] = {}

    def data(
        self, store: Store, ref: int | str, thresholds: HealthThresholds | None = None
    ) -> RunData:
        """The run ``ref`` read (from the cache when it has not changed since)."""
        info = store.get_run(ref)
        key = (
            info.id,
            info.status,
            info.n_questions,
            info.n_errors,
            tuple(sorted(info.metrics.items())),
            store.explanation_created(info.id),  # `ragmeter explain` ran since (issue 28)
            thresholds,
        )
        found = self._items.pop(key, None)
        if found is None:
            # The run's stored gold items are read as light tuples (issue 29.1): at 100,000
            # questions that is 4x less than a parsed gold set kept per hash was.
            found = RunData(store, info.id, thresholds)
        self._items[key] = found  # most recent last
        while len(self._items) > self._size:
            del self._items[next(iter(self._items))]
        return found
