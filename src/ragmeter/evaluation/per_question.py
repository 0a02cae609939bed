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
from typing import Any

from ragmeter.documents import Hit
from ragmeter.evaluation.answering import Answered, answer_context
from ragmeter.evaluation.hit_text import annotate_texts
from ragmeter.evaluation.scoring import Judgments
from ragmeter.evaluation.unknowns import answer_in_context
from ragmeter.executors.local import Outcome
from ragmeter.gold.goldset import GoldItem
from ragmeter.run import QuestionResult

__all__ = ["question_result"]

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
