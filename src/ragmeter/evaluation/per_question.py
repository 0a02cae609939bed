"""One question's result, built as its retrieval comes back (``evaluate()``'s workers).

:func:`question_result` turns an executor's :class:`~ragmeter.executors.local.Outcome` into
the :class:`~ragmeter.run.QuestionResult` that is stored, scored and summarised: the top
``k`` hits as ranked units with resolved document ids, and in ``extra`` their grades
(``Judgments.annotate``), their bounded texts (``hit_text.annotate_texts``), what
``answer_in_context@k`` reads, and the answer's context. It runs once per question under
the executor's delivery lock, so it skips what provably changes nothing (issue 29.2): no
answer check for a question without ``answer_contains``, and the result is made by setting
its slots (checked equal to the dataclass's own ``__init__`` at import).

>>> from ragmeter.documents import Hit
>>> from ragmeter.evaluation.scoring import Judgments
>>> from ragmeter.executors.local import Outcome
>>> from ragmeter.gold.goldset import GoldSet
>>> from ragmeter.retrievers import RetrievalOutput
>>> gold = GoldSet.from_records([{"id": "q", "question": "?", "relevant": [{"doc": "a"}]}])
>>> outcome = Outcome(gold["q"], RetrievalOutput([Hit("b", "b"), Hit("a", "a")]), None, 1.5)
>>> result = question_result(gold["q"], outcome, Judgments.build(gold, "doc"), 10, list)
>>> [hit.doc for hit in result.hits], result.extra
(['b', 'a'], {'grades': [0, 1], 'texts': [None, None]})
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import is_
from typing import TYPE_CHECKING, Any

from ragmeter.documents import Hit
from ragmeter.evaluation.answering import Answered, answer_context
from ragmeter.evaluation.hit_text import HIT_TEXT_MAX_CHARS, annotate_texts
from ragmeter.evaluation.scoring import Judgments
from ragmeter.evaluation.summary import row_summary
from ragmeter.evaluation.unknowns import answer_in_context
from ragmeter.executors.local import Outcome
from ragmeter.gold.goldset import GoldItem
from ragmeter.run import QuestionResult

if TYPE_CHECKING:
    from ragmeter.evaluation.finish import Tally
    from ragmeter.retrievers.ids import IdCheck

__all__ = ["QuestionPath", "question_result"]

_NEW = object.__new__
_SLOTS = [QuestionResult.__dict__[name].__set__ for name in QuestionResult.__slots__]
_SLOT_NAMES = ("item_id", "hits", "latency_ms", "error", "answer", "extra")


def _made_result(
    item_id: str,
    hits: tuple[Hit, ...],
    latency: float | None,
    answer: str | None,
    extra: dict[str, Any],
) -> QuestionResult:
    """``QuestionResult(item_id, hits, latency, None, answer, extra)`` without its
    ``__init__`` (six ``object.__setattr__`` calls: half of making one)."""
    result: QuestionResult = _NEW(QuestionResult)
    set_item, set_hits, set_latency, set_error, set_answer, set_extra = _SLOTS
    set_item(result, item_id)
    set_hits(result, hits)
    set_latency(result, latency)
    set_error(result, None)
    set_answer(result, answer)
    set_extra(result, extra)
    return result


def _same(one: QuestionResult, other: QuestionResult) -> bool:
    return repr(one) == repr(other) and one == other


def _built(
    item_id: str,
    hits: tuple[Hit, ...],
    latency: float | None,
    answer: str | None,
    extra: dict[str, Any],
) -> QuestionResult:
    return QuestionResult(item_id, hits, latency, None, answer, extra)


if QuestionResult.__slots__ != _SLOT_NAMES or not _same(
    _made_result("q", (Hit("a", "a"),), 1.0, "x", {"grades": [1]}),
    _built("q", (Hit("a", "a"),), 1.0, "x", {"grades": [1]}),
):
    _made_result = _built  # QuestionResult changed: the usual way


def question_result(
    item: GoldItem,
    outcome: Outcome[GoldItem, Any],
    judgments: Judgments,
    k: int,
    units: Callable[[Sequence[Hit]], list[Hit]],
) -> QuestionResult:
    """What is kept of one question's retrieval (see the module doc); ``units`` makes the
    hits ranked units with resolved ids (``IdCheck.resolve`` then ``rank_units``)."""
    if outcome.error is not None:
        return QuestionResult(item_id=item.id, error=outcome.error)
    value = outcome.value
    # Only the top k are kept: a retriever answering 10,000 hits for k=10 stores 10. Here
    # hits become ranked units: document ids resolved to the gold set's, and an id per
    # position unless two hits are the same chunk (issue 24.1, 24.2).
    hits = tuple(units(value.hits[:k])) if value is not None else ()
    answer = value.answer if value is not None else None
    latency = outcome.elapsed_ms
    extra: dict[str, Any] = judgments.annotate(item, hits)
    extra.update(annotate_texts(hits))  # every stored hit's text, bounded (issue 15.1)
    stages = getattr(value, "stages", None)
    if stages:
        extra["stages"] = dict(stages)
    if item.answer_contains:  # else answer_in_context has nothing to say
        extra.update(answer_in_context(item, hits))
    if isinstance(value, Answered):
        # Latency metrics are about retrieval; generation is timed on its own.
        latency = value.retrieval_ms
        extra["context"] = value.context
        extra["generation_ms"] = value.generation_ms
        if value.generation_error is not None:
            extra["generation_error"] = value.generation_error
    elif answer is not None and not answer.strip():  # a retrieval-only engine's '' (24.4)
        answer, extra["answer_empty"] = None, True
    elif answer is not None:
        # The retriever answered itself: its hits are the context the answer came from.
        extra["context"] = answer_context(hits, None)
    return _made_result(item.id, hits, latency, answer, extra)


_Kept = tuple[QuestionResult, dict[str, Any]]  # a result and its stored summary


class QuestionPath:
    """What ``evaluate()`` does with each outcome, under the executor's delivery lock: the
    result (:func:`question_result`), the id check's count (``IdCheck.observe``), the stored
    summary (:func:`~ragmeter.evaluation.summary.row_summary`) and what the run keeps
    (``Tally.add``); :meth:`take` returns the result and its summary.

    Each of these walks the question's hits again. The common question of a doc-level run
    (:meth:`plain`) takes one way through them instead (issue 29.2): a plain
    :class:`~ragmeter.retrievers.RetrievalOutput` (no answer, no stages), no
    ``answer_contains``, hits whose ids are distinct (``rank_units`` keeps them) and whose
    documents the id check resolved before to themselves (``IdCheck.resolve`` keeps them),
    no text to cut. It gives what :meth:`general` gives, value for value (checked on
    generated runs in ``tests/evaluation/test_question_path.py``); anything else goes the
    general way.

    >>> from ragmeter.documents import Hit
    >>> from ragmeter.gold.goldset import GoldSet
    >>> from ragmeter.retrievers import RetrievalOutput
    >>> from ragmeter.retrievers.ids import IdCheck
    >>> gold = GoldSet.from_records([{"id": "q", "question": "?", "relevant": [{"doc": "a"}]}])
    >>> check = IdCheck.for_run(gold, None, None)
    >>> path = QuestionPath(Judgments.build(gold, "doc"), 10, "doc", check, None)
    >>> def outcome(): return Outcome(gold["q"], RetrievalOutput([Hit("b", "b"), Hit("a", "a")]), None, 1.5)
    >>> result, summary = path.take(outcome())
    >>> result.extra, summary
    ({'grades': [0, 1], 'texts': [None, None]}, {'first': 2, 'top': 2, 'gold': 1})
    >>> path.plain(outcome()) == path.general(outcome())
    True
    >>> spelled = Outcome(gold["q"], RetrievalOutput([Hit("./a", "./a")]), None, 1.0)
    >>> path.plain(spelled)[0].hits  # resolved to the gold set's id: made the general way
    (Hit(id='a', doc='a', score=None, text=None, start=None, end=None, metadata={}),)
    """

    def __init__(
        self,
        judgments: Judgments,
        k: int,
        level: str,
        id_check: IdCheck,
        tally: Tally | None,
    ) -> None:
        self.judgments, self.k, self.level = judgments, k, level
        self.id_check, self.tally = id_check, tally
        # The plain way: doc-level grades and summary, and a tally (if any) that takes it.
        self.plain_ok = (
            level == "doc" and judgments.level == "doc" and k > 0 and (tally is None or tally.plain)
        )
        self._qrels = judgments.qrels
        from ragmeter.retrievers.base import RetrievalOutput

        self._output = RetrievalOutput

    def units(self, hits: Sequence[Hit]) -> list[Hit]:
        """``hits`` as ranked units with resolved ids (``IdCheck.resolve``, ``rank_units``)."""
        from ragmeter.retrievers.units import rank_units

        return rank_units(self.id_check.resolve(hits))

    def take(self, outcome: Outcome[GoldItem, Any]) -> _Kept:
        """The result of ``outcome`` and its summary, counted and tallied."""
        if self.plain_ok:
            kept = self.plain(outcome)
            if kept is not None:
                return kept
        return self.general(outcome)

    def general(self, outcome: Outcome[GoldItem, Any], resolved: list[Hit] | None = None) -> _Kept:
        """:meth:`take` step by step, for any outcome (``resolved``: its top hits already
        read through ``IdCheck.resolve``)."""
        units = self.units
        if resolved is not None:
            from ragmeter.retrievers.units import rank_units

            def units(hits: Sequence[Hit]) -> list[Hit]:
                return rank_units(resolved)

        result = question_result(outcome.item, outcome, self.judgments, self.k, units)
        self.id_check.observe(result.hits)
        summary = row_summary(result, self.k, self.level)
        if self.tally is not None:
            self.tally.add(result, summary)
        return result, summary

    def plain(self, outcome: Outcome[GoldItem, Any]) -> _Kept | None:
        """:meth:`take` in one way through the hits, or None (nothing done) when
        ``outcome`` is not a plain question (see the class doc); ``plain_ok`` only."""
        value = outcome.value
        if (
            outcome.error is not None
            or type(value) is not self._output
            or value.answer is not None
            or value.stages
        ):
            return None
        item = outcome.item
        if item.answer_contains:
            return None
        hits = value.hits[: self.k]
        n = len(hits)
        if not n:
            return None
        try:
            docs = [hit.doc for hit in hits]
            texts = [hit.text for hit in hits]
            if len({hit.id for hit in hits}) != n:
                return None  # rank_units may make ids: the general way
        except AttributeError:  # not a Hit: the general way says what it makes of it
            return None
        if texts.count(None) != n and any(
            text is not None and len(text) > HIT_TEXT_MAX_CHARS for text in texts
        ):
            return None  # annotate_texts cuts one
        if not self.id_check.resolved_as_is(docs):
            # Ids seen for the first time: resolved here (once: resolving is counted), and
            # the plain way goes on only if that kept every hit as it was.
            resolved = self.id_check.resolve(hits)
            if not all(map(is_, resolved, hits)):
                return self.general(outcome, resolved)
        distinct = set(docs)
        doc_grades = self._qrels.get(item.id, {})
        summary: dict[str, Any] | None = None
        if len(distinct) == n and len(doc_grades) <= n:
            # Each document once: the first relevant rank and the gold count are those of
            # the judged documents among the hits (n <= k: every hit is in the top k).
            grades = [0] * n
            first, gold = n, 0
            for doc, grade in doc_grades.items():
                if doc in distinct:
                    rank = docs.index(doc)
                    grades[rank] = grade
                    if grade > 0:
                        gold += 1
                        first = min(first, rank)
            summary = {"first": first + 1 if gold else None, "top": n, "gold": gold}
        else:
            grades = [doc_grades.get(doc, 0) for doc in docs]
        extra = {"grades": grades, "texts": texts}
        result = _made_result(item.id, tuple(hits), outcome.elapsed_ms, None, extra)
        self.id_check.observe_plain(hits, distinct)
        if summary is None:
            summary = row_summary(result, self.k, self.level)
        if self.tally is not None:
            self.tally.add_plain(result, summary, tuple(docs))
        return result, summary
