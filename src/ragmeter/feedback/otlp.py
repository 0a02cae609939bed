"""OpenTelemetry traces in: OTLP/HTTP export requests become query-log entries.

``ragmeter ingest serve`` answers ``POST /v1/traces`` with :func:`decode_traces`. A retriever
span becomes one logged query, read in either convention (see ``ragmeter.feedback._spans``):
OpenInference (``openinference.span.kind = RETRIEVER``, ``input.value``,
``retrieval.documents.N.document.*``) or the OTel GenAI semantic conventions
(``gen_ai.operation.name = retrieval``, ``gen_ai.retrieval.query.text``,
``gen_ai.retrieval.documents``). The query id is ``TRACEID-SPANID`` (hex), for
``POST /api/feedback``.

Spans of one trace are joined across export requests by a bounded table of recent traces
(:class:`TraceJoiner`): the answer of the trace's latest-ending LLM (or GenAI inference) span
is the entry's ``meta.answer``, also when it arrives after the retriever span (the stored entry
is then updated); a ``feedback`` span event with ``thumbs_up`` (bool) or ``label``
(``up``/``down``/``thumbs_up``/``thumbs_down``/``positive``/``negative``) and an optional
``comment``, on any span of the trace, goes to every retriever span of it, before or after.
A trace with only its retriever span still counts. A span re-sent (an exporter retry) is
skipped by the store and counted in the reply. Per trace, the first ``MAX_TRACE_QUERIES``
retriever spans get its verdicts and ``MAX_TRACE_VOTES`` verdicts are kept (what is over is
reported in ``partialSuccess.errorMessage``), so a request writes at most
``1 + MAX_TRACE_VOTES`` rows per retriever span and ``MAX_TRACE_QUERIES`` per feedback event
(issue 27.1: one trace of 1,000 retriever spans and 1,000 events wrote 1,000,000 rows).

Bounds: at most ``MAX_HITS`` documents per span are kept; a span with more is truncated and
the truncation is reported in the response's ``partialSuccess.errorMessage`` and the entry's
``meta.documents_total``. A body that is not OTLP is an :class:`InputError` (HTTP 400).

>>> batch = decode_traces(b'{"resourceSpans": []}', "application/json")
>>> batch.queries, batch.media_type
([], 'application/json')
"""

from __future__ import annotations

import base64
import json
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ragmeter.errors import ConfigError, InputError
from ragmeter.feedback._joiner import (
    MAX_RECENT_TRACES,
    MAX_TRACE_QUERIES,
    MAX_TRACE_VOTES,
    Trace,
    TraceJoiner,
    Vote,
)
from ragmeter.feedback._spans import answer_of, hits_of, query_of, span_kind, thumbs
from ragmeter.feedback.querylog import (
    MAX_HITS,
    MAX_TEXT,
    FeedbackRecord,
    LogRecord,
    feedback_row,
    parse_body,
    query_row,
    validation_message,
)

__all__ = ["MAX_HITS", "MAX_RECENT_TRACES", "TraceBatch", "TraceJoiner", "decode_traces"]

PROTOBUF = "application/x-protobuf"
JSON = "application/json"


@dataclass
class TraceBatch:
    """What one export request carried: store rows, what was cut, the reply's media type."""

    queries: list[dict[str, Any]] = field(default_factory=list)
    feedback: list[dict[str, Any]] = field(default_factory=list)
    #: Answers for queries logged in earlier requests: query id -> answer.
    answers: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    media_type: str = JSON
    #: What this request added to the joiner, undone (``TraceJoiner.forget``) if not stored.
    added: list[tuple[str, str, str]] = field(default_factory=list)

    def reply(self, duplicates: int = 0) -> bytes:
        """The OTLP export response: warnings (and ``duplicates``, retriever spans already
        stored and so skipped) in ``partialSuccess.errorMessage``; no span is rejected.

        >>> reply = json.loads(TraceBatch(warnings=["span x: cut"]).reply(duplicates=2))
        >>> reply["partialSuccess"]["errorMessage"]
        'span x: cut; 2 retriever spans already stored, skipped'
        """
        warnings = list(self.warnings)
        if duplicates:
            warnings.append(f"{duplicates} retriever spans already stored, skipped")
        message = "; ".join(warnings)
        if self.media_type == JSON:
            partial = {"partialSuccess": {"rejectedSpans": 0, "errorMessage": message}}
            return json.dumps(partial if message else {}).encode()
        trace_service_pb2, _ = _modules()
        response = trace_service_pb2.ExportTraceServiceResponse()
        if message:
            response.partial_success.error_message = message
        return bytes(response.SerializeToString())


def _modules() -> Any:
    try:
        from google.protobuf import json_format
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    except ImportError as e:
        raise ConfigError(
            "OTLP traces need opentelemetry-proto: pip install 'ragmeter[otel]'"
        ) from e
    return trace_service_pb2, json_format


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in any_value.kvlist_value.values}
    if kind == "bytes_value":
        return any_value.bytes_value.hex()
    return getattr(any_value, kind)


def _attributes(items: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in items}


def _hex_to_b64(data: Any) -> Any:
    # OTLP/JSON writes trace and span ids in hex; protobuf's JSON parser expects base64.
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str):
                try:
                    value = base64.b64encode(bytes.fromhex(value)).decode()
                except ValueError:
                    raise InputError(f"OTLP JSON: {key} {value!r} is not hex") from None
            out[key] = _hex_to_b64(value)
        return out
    if isinstance(data, list):
        return [_hex_to_b64(v) for v in data]
    return data


def _inflate(body: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj(wbits=31)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as e:
        raise InputError(f"body: not gzip ({e})") from None
    if len(out) > limit:
        raise InputError(f"body: over {limit} bytes once unzipped")
    return out


def _parse(body: bytes, content_type: str, encoding: str, limit: int) -> tuple[Any, str]:
    trace_service_pb2, json_format = _modules()
    if encoding.strip().lower() == "gzip":
        body = _inflate(body, limit)
    request = trace_service_pb2.ExportTraceServiceRequest()
    media = content_type.split(";")[0].strip().lower()
    if media == JSON:
        data = parse_body(
            body, "an OTLP/JSON trace export"
        )  # deep nesting refused before the recursive walks below
        try:
            json_format.ParseDict(_hex_to_b64(data), request, ignore_unknown_fields=True)
        except json_format.ParseError as e:
            raise InputError(f"body: not an OTLP/JSON trace export ({e})") from None
        return request, JSON
    if media == PROTOBUF:
        from google.protobuf.message import DecodeError

        try:
            request.ParseFromString(body)
        except DecodeError as e:
            raise InputError(f"body: not an OTLP protobuf trace export ({e})") from None
        return request, PROTOBUF
    raise InputError(f"content-type {content_type!r}: send {PROTOBUF} or {JSON}")


def _feedback(query_id: str, vote: Vote) -> dict[str, Any]:
    return feedback_row(FeedbackRecord(query_id=query_id, thumbs_up=vote[0], comment=vote[1]))


def _query(trace_id: str, span: Any, attrs: dict[str, Any], kind: str, trace: Trace,
           batch: TraceBatch) -> dict[str, Any] | None:  # fmt: skip
    """The store row for one retriever span, or None (with a warning) when it cannot be."""
    query_id = f"{trace_id}-{span.span_id.hex()}"
    key, query = query_of(attrs, kind)
    if not isinstance(query, str) or not query.strip():
        batch.warnings.append(f"span {query_id}: retriever span without {key}")
        return None
    try:
        hits, total = hits_of(attrs, kind)
    except ValueError as error:
        batch.warnings.append(f"span {query_id}: {error}")
        return None
    meta: dict[str, Any] = {"trace_id": trace_id, "span_id": span.span_id.hex()}
    if kind == "genai":
        meta["convention"] = "gen_ai"
    if hits is None:
        hits, meta["documents"] = [], "not recorded"
        batch.warnings.append(
            f"span {query_id}: no gen_ai.retrieval.documents, logged without hits"
        )
    if trace.answer is not None:
        meta["answer"] = trace.answer
    if total > len(hits):
        meta["documents_total"] = total
        batch.warnings.append(f"span {query_id}: {total} documents, kept the first {len(hits)}")
    latency = (span.end_time_unix_nano - span.start_time_unix_nano) / 1e6
    user = attrs.get("user.id")
    try:
        record = LogRecord(
            query=query[:MAX_TEXT],
            hits=hits,
            latency_ms=latency if latency >= 0 else None,
            user=str(user)[:1000] if user is not None else None,
            meta=meta,
            id=query_id,
        )
    except ValidationError as error:
        batch.warnings.append(f"span {query_id}: {validation_message(error)[0]}")
        return None
    return query_row(record)


def _join(trace_id: str, spans: list[tuple[Any, dict[str, Any]]], joiner: TraceJoiner,
          batch: TraceBatch) -> None:  # fmt: skip
    """Join one trace's spans of this request with what the joiner knows of the trace."""
    trace = joiner.trace(trace_id)
    earlier = list(trace.queries)
    answered = False
    for span, attrs in spans:
        joiner.note_span(span.span_id.hex(), trace_id)
        answer = answer_of(attrs)
        if answer is not None and span.end_time_unix_nano >= trace.answer_end:
            trace.answer, trace.answer_end = answer[:MAX_TEXT], span.end_time_unix_nano
            answered = True
    if answered and trace.answer is not None:
        batch.answers.update(dict.fromkeys(earlier, trace.answer))
    new_votes: dict[str, Vote] = {}
    refused = 0
    for span, _ in spans:
        for index, event in enumerate(span.events):
            if event.name != "feedback":
                continue
            attrs = _attributes(event.attributes)
            verdict = thumbs(attrs)
            if verdict is None:
                batch.warnings.append(f"trace {trace_id}: feedback event without thumbs_up")
                continue
            key = f"event:{span.span_id.hex()}:{event.time_unix_nano}:{index}"
            if key in trace.votes or key in new_votes:  # re-sent: not a second verdict
                continue
            if len(trace.votes) + len(new_votes) >= MAX_TRACE_VOTES:
                refused += 1
                continue
            comment = attrs.get("comment")
            new_votes[key] = (verdict, str(comment)[:MAX_TEXT] if comment is not None else None)
    if refused:
        batch.warnings.append(
            f"trace {trace_id}: {refused} feedback events over the {MAX_TRACE_VOTES} verdicts "
            "a trace keeps, not stored"
        )
    alone = 0
    for span, attrs in spans:
        kind = span_kind(attrs)
        row = _query(trace_id, span, attrs, kind, trace, batch) if kind else None
        if row is None:
            continue
        batch.queries.append(row)  # even when re-sent: the store skips and counts it
        if joiner.add_query(trace_id, row["id"]):
            batch.added.append(("query", trace_id, row["id"]))
            batch.feedback.extend(_feedback(row["id"], vote) for vote in trace.votes.values())
        elif row["id"] not in trace.queries:
            alone += 1
    if alone:
        batch.warnings.append(
            f"trace {trace_id}: {alone} retriever spans over the {MAX_TRACE_QUERIES} a trace "
            "joins, logged without the trace's feedback"
        )
    for key, vote in new_votes.items():
        trace.votes[key] = vote
        batch.added.append(("vote", trace_id, key))
        batch.feedback.extend(_feedback(query_id, vote) for query_id in trace.queries)
    if new_votes and not trace.queries:
        batch.warnings.append(
            f"trace {trace_id}: feedback held until a retriever span of the trace arrives"
        )


def decode_traces(
    body: bytes,
    content_type: str,
    *,
    encoding: str = "",
    limit: int = 1_000_000,
    joiner: TraceJoiner | None = None,
) -> TraceBatch:
    """Turn one OTLP/HTTP trace export into query-log and feedback rows (see module doc).

    ``joiner`` carries what earlier requests said of each trace (a fresh one if not given).
    Raises :class:`InputError` for a body that is not an OTLP trace export.
    """
    request, media = _parse(body, content_type, encoding, limit)
    joiner = joiner if joiner is not None else TraceJoiner()
    batch = TraceBatch(media_type=media)
    by_trace: dict[str, list[tuple[Any, dict[str, Any]]]] = defaultdict(list)
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                by_trace[span.trace_id.hex()].append((span, _attributes(span.attributes)))
    for trace_id, spans in by_trace.items():
        _join(trace_id, spans, joiner, batch)
    return batch
