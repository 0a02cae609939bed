"""What a report needs of one question without its ranking (issue 29.1).

``evaluate`` stores :func:`row_summary` beside each result: the first relevant rank,
how many of the top k carry a gold label, and whether the generator's context held a
relevant chunk. A brief report (:mod:`ragmeter.evaluation.brief`) reads these instead of
decoding every ranking, as columns (:class:`StoredSummaries`); :func:`covered` counts label
coverage from either.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Protocol

from ragmeter.run import QuestionResult, RunInfo

if TYPE_CHECKING:
    from ragmeter.store import Store

__all__ = [
    "COVERED",
    "StoredSummaries",
    "covered",
    "first_relevant_rank",
    "relevant_in_context",
    "row_summary",
]

# The report's label-coverage line (gold + judge), distinct from the judged@k metric.
COVERED = "covered"


class _Row(Protocol):
    """What :func:`covered` reads of a report's row (``QuestionRow``)."""

    @property
    def id(self) -> str: ...
    @property
    def error(self) -> str | None: ...
    @property
    def retrieved(self) -> list[dict[str, Any]]: ...


def first_relevant_rank(hits: Sequence[Any], grades: Sequence[int], level: str) -> int | None:
    """Rank of the first relevant item, counting documents once at doc level."""
    seen: dict[str, int] = {}
    for hit, grade in zip(hits, grades, strict=False):
        key = hit.doc if level == "doc" else hit.id
        if key in seen:
            continue
        seen[key] = len(seen) + 1
        if grade > 0:
            return seen[key]
    return None


def relevant_in_context(result: QuestionResult, grades: Sequence[int]) -> bool:
    """The generator's context (the chunks it saw; all hits when none is recorded) held a
    chunk with a gold grade."""
    used = {c.get("id") for c in result.extra.get("context") or []}
    return any(
        grade > 0 and (not used or hit.id in used)
        for hit, grade in zip(result.hits, grades, strict=False)
    )


def _top_labels(
    entries: Iterable[tuple[str, str, int]], k: int, level: str
) -> Iterable[tuple[str, str, int]]:
    """The (id, doc, grade) of the first ``k`` distinct items (documents at doc level)."""
    seen: set[str] = set()
    for entry in entries:
        key = entry[1] if level == "doc" else entry[0]
        if key in seen:
            continue
        seen.add(key)
        if len(seen) > k:
            return
        yield entry


def row_summary(result: QuestionResult, k: int, level: str) -> dict[str, Any]:
    """What the report needs of ``result`` besides its stored columns.

    ``first``: first relevant rank; ``top`` / ``gold``: distinct items in the top ``k`` and
    how many of them have a gold grade; ``ctx`` (answered questions only): a relevant chunk
    was in the context; ``gen``: the generation error, when there was one.

    >>> from ragmeter.documents import Hit
    >>> hits = (Hit(id="a#1", doc="a"), Hit(id="a#2", doc="a"), Hit(id="b#1", doc="b"))
    >>> row_summary(QuestionResult("q1", hits, extra={"grades": [0, 0, 1]}), 10, "doc")
    {'first': 2, 'top': 2, 'gold': 1}
    """
    # One pass (issue 29.2): each distinct item (document at doc level) counted at its first
    # position; an unlabelled hit (no grade stored) is grade 0.
    grades = result.extra.get("grades") or ()
    n_grades, doc_level = len(grades), level == "doc"
    seen: set[str] = set()
    first: int | None = None
    gold = 0
    for rank, hit in enumerate(result.hits):
        key = hit.doc if doc_level else hit.id
        if key in seen:
            continue
        seen.add(key)
        if rank < n_grades and grades[rank] > 0:
            if first is None:
                first = len(seen)
            if len(seen) <= k:
                gold += 1
    out: dict[str, Any] = {"first": first, "top": max(0, min(len(seen), k)), "gold": gold}
    if result.answer is not None or "generation_error" in result.extra:
        out["ctx"] = relevant_in_context(result, grades)
        if "generation_error" in result.extra:
            out["gen"] = result.extra["generation_error"]
    return out


def judge_labelled(store: Store, run_id: int) -> set[tuple[str, str]]:
    """(item id, chunk or document id) pairs the relevance judge labelled in a run."""
    found = getattr(store, "judge_verdicts", None)
    labels = found(run_id, "relevance") if found is not None else {}
    return {(item_id, target) for (item_id, target), e in labels.items() if e["verdict"]}


def covered(
    store: Store,
    run: RunInfo,
    rows: Sequence[_Row],
    counted: tuple[int, int] = (0, 0),
) -> dict[str, Any]:
    """``covered@k``: the share of top-k retrieved items with a label, and where labels came from.

    Gold labels (grade > 0) and judge verdicts both count. It is not the registry's
    ``judged@k`` (trec_eval/ir_measures: the share of the top k the *qrels* judge, any grade
    >= 0, divided by k), which is a metric of the run; this is the report's coverage line.
    Previously it was keyed ``judged@k`` and clashed with that metric (issue 16.6).
    ``counted`` is (top-k items, gold-labelled ones) summed over the evaluated questions
    that are not in ``rows`` (a brief report's rows whose ranking is not spelled out): none
    of their items has a judge label (a brief report decodes those that do).
    """
    judged_items = judge_labelled(store, run.id)
    judged_docs = {(item_id, target.split("#", 1)[0]) for item_id, target in judged_items}
    gold_n = judge_n = total = 0
    for row in rows:
        if row.error is not None:
            continue
        entries = ((e["id"], e["doc"], e["grade"]) for e in row.retrieved)
        for item, doc, grade in _top_labels(entries, run.k, run.level):
            total += 1
            if grade > 0:
                gold_n += 1
            elif (row.id, item) in judged_items or (
                run.level == "doc" and (row.id, doc) in judged_docs
            ):
                judge_n += 1
    total, gold_n = total + counted[0], gold_n + counted[1]
    return {
        f"{COVERED}@{run.k}": (gold_n + judge_n) / total if total else 0.0,
        "gold": gold_n,
        "judge": judge_n,
        "unlabelled": total - gold_n - judge_n,
        "labels": str(run.config.get("labels", "gold")),
    }


#: The keys of a summary that :class:`StoredSummaries` keeps as columns.
_PLAIN = frozenset(("first", "top", "gold"))
_FIRST, _TOP, _GOLD = map(itemgetter, ("first", "top", "gold"))


class StoredSummaries(Mapping[str, tuple[QuestionResult, dict[str, Any] | None]]):
    """A run's results without rankings and their summaries, as columns by position (what
    the store reads a page at a time, :meth:`~ragmeter.store.Store.summary_pages`):
    ``ids``, ``latency``, ``error``, ``answer`` and the summaries' ``first``, ``top`` and
    ``gold``; ``other`` holds, by position, the summaries with more keys than these (an
    answered question's) and None for a row stored without one. As a mapping (item id ->
    (result, summary)) a :class:`~ragmeter.run.QuestionResult` is made only when one is
    looked up (29.1)."""

    def __init__(
        self,
        pages: Iterable[
            tuple[
                Sequence[str],
                Sequence[float | None],
                Sequence[str | None],
                Sequence[str | None],
                Sequence[dict[str, Any] | None],
            ]
        ],
    ) -> None:
        self.ids: list[str] = []
        self.latency: list[float | None] = []
        self.error: list[str | None] = []
        self.answer: list[str | None] = []
        self.first: list[int | None] = []
        self.top: list[int] = []
        self.gold: list[int] = []
        self.other: dict[int, dict[str, Any] | None] = {}
        self._index: dict[str, int] | None = None
        for ids, latency, error, answer, summaries in pages:
            self._add(ids, latency, error, answer, summaries)

    def _add(
        self,
        ids: Sequence[str],
        latency: Sequence[float | None],
        error: Sequence[str | None],
        answer: Sequence[str | None],
        summaries: Sequence[dict[str, Any] | None],
    ) -> None:
        base = len(self.ids)
        self.ids += ids
        self.latency += latency
        self.error += error
        self.answer += answer
        try:  # every summary row_summary writes has these three keys, and more when answered
            # C-level maps, no loop body per question (issue 29.2)
            first = list(map(_FIRST, summaries))  # type: ignore[arg-type]
            top = list(map(_TOP, summaries))  # type: ignore[arg-type]
            gold = list(map(_GOLD, summaries))  # type: ignore[arg-type]
            sizes = list(map(len, summaries))  # type: ignore[arg-type]
            odd = []
            if sizes.count(len(_PLAIN)) != len(sizes):
                odd = [o for o, size in enumerate(sizes) if size != len(_PLAIN)]
        except (KeyError, TypeError):  # a row stored without one (or not by row_summary)
            first, top, gold, odd = [], [], [], []
            for offset, summary in enumerate(summaries):
                plain = isinstance(summary, dict) and summary.keys() >= _PLAIN
                first.append(summary["first"] if plain else None)  # type: ignore[index]
                top.append(summary["top"] if plain else 0)  # type: ignore[index]
                gold.append(summary["gold"] if plain else 0)  # type: ignore[index]
                if not plain:
                    self.other[base + offset] = None  # built from its whole ranking
                elif len(summary) != len(_PLAIN):  # type: ignore[arg-type]
                    odd.append(offset)
        self.first += first
        self.top += top
        self.gold += gold
        for offset in odd:  # an answered question's summary, or None: stored without one
            self.other.setdefault(base + offset, summaries[offset])

    @classmethod
    def of(
        cls, brief: Mapping[str, tuple[QuestionResult, dict[str, Any] | None]]
    ) -> StoredSummaries:
        """``brief`` as columns (itself when it is a :class:`StoredSummaries`)."""
        if isinstance(brief, StoredSummaries):
            return brief
        return cls.from_kept(
            {
                item_id: (result.latency_ms, result.error, result.answer, summary)
                for item_id, (result, summary) in brief.items()
            }
        )

    @classmethod
    def from_kept(
        cls,
        kept: Mapping[str, tuple[float | None, str | None, str | None, dict[str, Any] | None]],
    ) -> StoredSummaries:
        """The columns of ``kept`` (item id -> (latency, error, answer, summary)): what
        ``evaluate()`` keeps of each result (issue 29.2).

        >>> kept = StoredSummaries.from_kept({"q1": (1.5, None, None, {"first": 2, "top": 10,
        ...                                                              "gold": 1})})
        >>> kept.first, kept["q1"][0].latency_ms, kept["q1"][1]
        ([2], 1.5, {'first': 2, 'top': 10, 'gold': 1})
        """
        values = list(kept.values())
        columns = [list(map(itemgetter(column), values)) for column in range(4)]
        return cls([(list(kept), *columns)])  # type: ignore[list-item]

    def positions(self, ids: list[str]) -> Sequence[int | None]:
        """Where each of ``ids`` is in these columns (None: no result)."""
        if ids == self.ids:  # stored in the gold set's order: no lookup
            return range(len(ids))
        index = self._positions()
        return [index.get(item_id) for item_id in ids]

    def _positions(self) -> dict[str, int]:
        if self._index is None:
            self._index = {item_id: p for p, item_id in enumerate(self.ids)}
        return self._index

    def summary(self, position: int) -> dict[str, Any] | None:
        """The summary of the row at ``position`` (None: stored without one)."""
        if position in self.other:
            return self.other[position]
        return {
            "first": self.first[position],
            "top": self.top[position],
            "gold": self.gold[position],
        }

    def result(self, position: int) -> QuestionResult:
        """The result of the row at ``position``, without ranking or ``extra``."""
        return QuestionResult(
            self.ids[position],
            latency_ms=self.latency[position],
            error=self.error[position],
            answer=self.answer[position],
        )

    def __getitem__(self, item_id: str) -> tuple[QuestionResult, dict[str, Any] | None]:
        position = self._positions()[item_id]
        return self.result(position), self.summary(position)

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)
