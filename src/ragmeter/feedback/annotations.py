"""OpenInference / Arize Phoenix span annotations in: user feedback on a traced span.

``ragmeter ingest serve`` answers ``POST /v1/span_annotations`` with the body Phoenix's own
endpoint takes (``phoenix.client``'s ``spans.add_span_annotation`` and the REST API)::

    {"data": [{"span_id": "67f6740bbe1ddc3f", "name": "user_feedback",
               "annotator_kind": "HUMAN",
               "result": {"label": "thumbs-down", "score": 0, "explanation": "wrong page"},
               "metadata": {}, "identifier": "user-123"}]}

An annotation is a verdict on the trace its span belongs to (any span: the root, the LLM or the
retriever span, as long as this server saw it recently, see ``ragmeter.feedback._joiner``):
every retriever span of the trace, logged or still to come, gets it. ``result.label`` says up
or down (``up``/``down``/``thumbs_up``/``thumbs_down``/``thumbs-up``/``thumbs-down``/
``positive``/``negative``); without a label, ``result.score`` of exactly 1 or 0 does (other
scores have no agreed meaning and are refused, not guessed). ``explanation`` is the comment.
An annotation with the same ``identifier`` (or, without one, the same content) as an earlier
one is not counted twice; a changed one under the same ``identifier`` is the newer verdict.
Annotations that cannot be applied are listed in the reply's ``skipped`` with the reason;
so is one on a trace with no known retriever span (``"held": true``: no stored query got
it, a retriever span of the trace arriving later will). A trace keeps ``MAX_TRACE_VOTES``
verdicts; a new one past that is skipped (a request writes at most ``MAX_TRACE_QUERIES``
rows per annotation, see ``ragmeter.feedback._joiner``).

>>> from ragmeter.feedback._joiner import TraceJoiner
>>> body = b'{"data": [{"span_id": "00000000000000aa", "name": "f", "result": {"score": 1}}]}'
>>> decode_annotations(body, TraceJoiner()).skipped[0]["reason"]
'span 00000000000000aa: not a span of a recent trace on this server'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragmeter.errors import InputError
from ragmeter.feedback._joiner import MAX_RECENT_TRACES, MAX_TRACE_VOTES, TraceJoiner, Vote
from ragmeter.feedback._spans import thumbs
from ragmeter.feedback.querylog import (
    MAX_TEXT,
    FeedbackRecord,
    feedback_row,
    parse_body,
    validation_message,
)

__all__ = ["MAX_ANNOTATIONS", "AnnotationBatch", "decode_annotations"]

#: Most annotations one request may carry.
MAX_ANNOTATIONS = 1_000
_HELD = (
    "no retriever span of its trace is known to this server, so no stored query got the "
    "verdict; it is held for a retriever span of the trace arriving later (one logged "
    f"before the server forgot the trace, after {MAX_RECENT_TRACES:,} newer traces or a "
    "restart, never gets it: send the feedback to /api/feedback with its query id)"
)


class _Result(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    label: str | None = Field(default=None, max_length=1000)
    score: float | None = Field(default=None, allow_inf_nan=False)
    explanation: str | None = Field(default=None, max_length=MAX_TEXT)


class _Annotation(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    span_id: str = Field(pattern=r"^[0-9a-fA-F]{16}$")
    name: str = Field(min_length=1, max_length=1000)
    annotator_kind: str | None = Field(default=None, max_length=100)
    result: _Result | None = None
    identifier: str | None = Field(default=None, max_length=1000)


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    data: list[_Annotation] = Field(max_length=MAX_ANNOTATIONS)


@dataclass
class AnnotationBatch:
    """Feedback rows from one request, what each annotation did, what the joiner gained."""

    feedback: list[dict[str, Any]] = field(default_factory=list)
    data: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    added: list[tuple[str, str, str]] = field(default_factory=list)


def _vote(annotation: _Annotation) -> Vote | str:
    """The verdict, or why there is none."""
    result = annotation.result or _Result()
    if result.label is not None:
        verdict = thumbs({"label": result.label})
        if verdict is None:
            return f"label {result.label!r} is not a thumbs up or down"
    elif result.score in (0.0, 1.0):
        verdict = result.score == 1.0
    elif result.score is not None:
        return f"score {result.score:g} without a label: only 1 (up) or 0 (down) is a verdict"
    else:
        return "no label or score"
    return verdict, result.explanation


def decode_annotations(body: bytes, joiner: TraceJoiner) -> AnnotationBatch:
    """Turn a span-annotations request into feedback rows (see module doc).

    Raises :class:`InputError` (HTTP 422) for a body that is not the annotations shape.
    """
    try:
        parsed = _Body.model_validate(parse_body(body))
    except ValidationError as error:
        raise InputError(validation_message(error)[0]) from None
    batch = AnnotationBatch()
    for index, annotation in enumerate(parsed.data):
        span_id = annotation.span_id.lower()
        vote = _vote(annotation)
        trace_id = joiner.trace_of_span(span_id)
        if isinstance(vote, str) or trace_id is None:
            reason = (
                vote if isinstance(vote, str) else "not a span of a recent trace on this server"
            )
            batch.skipped.append({"index": index, "span_id": span_id,
                                  "reason": f"span {span_id}: {reason}"})  # fmt: skip
            continue
        trace = joiner.trace(trace_id)
        key = f"annotation:{span_id}:{annotation.name}:" + (
            f"id={annotation.identifier}" if annotation.identifier else repr(vote)
        )
        if not trace.takes_vote(key):
            batch.skipped.append({"index": index, "span_id": span_id, "reason":
                                  f"span {span_id}: its trace already has {MAX_TRACE_VOTES} "
                                  "verdicts; send a changed one under an earlier identifier"})  # fmt: skip
            continue
        if trace.votes.get(key) != vote:  # new, or a changed verdict under one identifier
            trace.votes[key] = vote
            batch.added.append(("vote", trace_id, key))
            batch.feedback.extend(
                feedback_row(FeedbackRecord(query_id=q, thumbs_up=vote[0], comment=vote[1]))
                for q in trace.queries
            )
        if not trace.queries:
            # Issue 27.17: an empty "query_ids" read as applied. Say it is only held.
            batch.skipped.append({"index": index, "span_id": span_id, "held": True,
                                  "reason": f"span {span_id}: {_HELD}"})  # fmt: skip
            continue
        batch.data.append({"index": index, "span_id": span_id, "query_ids": list(trace.queries)})
    return batch
