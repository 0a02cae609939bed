"""OpenTelemetry traces in: OTLP/HTTP export requests become query-log entries.

``ragmeter ingest serve`` answers ``POST /v1/traces`` with :func:`decode_traces`. A span whose
``openinference.span.kind`` is ``RETRIEVER`` (OpenInference, as Arize Phoenix and its
instrumentations write it) becomes one logged query:

- the query is ``input.value``; the hits are ``retrieval.documents.N.document.id``, ``.score``,
  ``.content`` and ``.metadata`` (a JSON object whose ``doc_id``, ``source`` or ``file_path``
  names the document; else the document id does), in ``N`` order;
- the answer is the ``output.value`` of an ``LLM`` span of the same trace, kept in the entry's
  ``meta.answer``; spans are joined per trace within one export request, and a trace with only
  its retriever span still counts;
- feedback is a span event named ``feedback`` with ``thumbs_up`` (bool) or ``label``
  (``up``/``down``/``thumbs_up``/``thumbs_down``/``positive``/``negative``) and an optional
  ``comment``, on any span of the trace (also one exported in a later request: the server
  remembers recent traces, see :class:`TraceJoiner`); later feedback comes by
  ``POST /api/feedback`` with the query id, which is ``TRACEID-SPANID`` (hex). The answer is
  joined only when the LLM span arrives in the same request as the retriever span (a
  batching exporter sends a trace together).

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
import re
import zlib
from collections import OrderedDict, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ragmeter.errors import ConfigError, InputError
from ragmeter.feedback.querylog import (
    MAX_HITS,
    MAX_TEXT,
    FeedbackRecord,
    HitRecord,
    LogRecord,
    feedback_row,
    query_row,
    validation_message,
)

__all__ = ["MAX_HITS", "MAX_RECENT_TRACES", "TraceBatch", "TraceJoiner", "decode_traces"]

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_DOC = re.compile(r"^retrieval\.documents\.(\d+)\.document\.(id|score|content|metadata)$")
_THUMBS = {"up": True, "thumbs_up": True, "positive": True, "down": False,
           "thumbs_down": False, "negative": False}  # fmt: skip
_DOC_KEYS = ("doc_id", "source", "file_path")


#: Traces remembered per server, so feedback exported after its retriever span still joins.
MAX_RECENT_TRACES = 10_000


class TraceJoiner:
    """The recent traces' query ids: joins spans across export requests, drops re-sent spans.

    An exporter sends each span when it ends (or in batches that may split a trace) and
    retries a request whose reply it missed; a span logged once is not logged again.
    Bounded to ``MAX_RECENT_TRACES`` traces, oldest forgotten first.

    >>> joiner = TraceJoiner()
    >>> joiner.add("t1", "t1-s1"), joiner.add("t1", "t1-s1"), joiner.queries("t1")
    (True, False, ['t1-s1'])
    """

    def __init__(self, limit: int = MAX_RECENT_TRACES) -> None:
        self._traces: OrderedDict[str, list[str]] = OrderedDict()
        self._limit = limit

    def add(self, trace_id: str, query_id: str) -> bool:
        """Remember ``query_id`` under ``trace_id``; False if it was already there."""
        ids = self._traces.setdefault(trace_id, [])
        self._traces.move_to_end(trace_id)
        if query_id in ids:
            return False
        ids.append(query_id)
        while len(self._traces) > self._limit:
            self._traces.popitem(last=False)
        return True

    def queries(self, trace_id: str) -> list[str]:
        """The query ids logged for ``trace_id`` (empty if unknown or forgotten)."""
        return list(self._traces.get(trace_id, ()))


@dataclass
class TraceBatch:
    """What one export request carried: store rows, what was cut, the reply's media type."""

    queries: list[dict[str, Any]] = field(default_factory=list)
    feedback: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    media_type: str = JSON

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
        try:
            data = json.loads(body)
            json_format.ParseDict(_hex_to_b64(data), request, ignore_unknown_fields=True)
        except (UnicodeDecodeError, json.JSONDecodeError, json_format.ParseError) as e:
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


def _hits(attributes: Mapping[str, Any]) -> tuple[list[HitRecord], int]:
    docs: dict[int, dict[str, Any]] = defaultdict(dict)
    for key, value in attributes.items():
        match = _DOC.match(key)
        if match:
            docs[int(match.group(1))][match.group(2)] = value
    hits: list[HitRecord] = []
    for n in sorted(docs)[:MAX_HITS]:
        entry = docs[n]
        metadata = entry.get("metadata")
        if isinstance(metadata, str):
            try:
                metadata = json.loads(metadata)
            except json.JSONDecodeError:
                metadata = None
        named = next(
            (str(metadata[k]) for k in _DOC_KEYS if isinstance(metadata, dict) and metadata.get(k)),
            None,
        )
        hit_id = str(entry.get("id") or named or f"rank-{n + 1}")
        score = entry.get("score")
        content = entry.get("content")
        hits.append(
            HitRecord(
                id=hit_id[:1000],
                doc=(named or hit_id)[:1000],
                score=float(score) if isinstance(score, int | float) else None,
                text=content[:MAX_TEXT] if isinstance(content, str) else None,
            )
        )
    return hits, len(docs)


def _thumbs(attributes: Mapping[str, Any]) -> bool | None:
    value = attributes.get("thumbs_up")
    if isinstance(value, bool):
        return value
    label = attributes.get("label")
    return _THUMBS.get(label.strip().lower()) if isinstance(label, str) else None


def decode_traces(
    body: bytes,
    content_type: str,
    *,
    encoding: str = "",
    limit: int = 1_000_000,
    joiner: TraceJoiner | None = None,
) -> TraceBatch:
    """Turn one OTLP/HTTP trace export into query-log and feedback rows (see module doc).

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
        answer = next(
            (
                a["output.value"]
                for _, a in spans
                if a.get("openinference.span.kind") == "LLM"
                and isinstance(a.get("output.value"), str)
            ),
            None,
        )
        votes = [
            (_thumbs(attrs), attrs.get("comment"))
            for span, _ in spans
            for event in span.events
            if event.name == "feedback"
            for attrs in [_attributes(event.attributes)]
        ]
        for span, attrs in spans:
            if attrs.get("openinference.span.kind") != "RETRIEVER":
                continue
            query_id = f"{trace_id}-{span.span_id.hex()}"
            query = attrs.get("input.value")
            if not isinstance(query, str) or not query.strip():
                batch.warnings.append(f"span {query_id}: retriever span without input.value")
                continue
            hits, total = _hits(attrs)
            meta: dict[str, Any] = {"trace_id": trace_id, "span_id": span.span_id.hex()}
            if answer is not None:
                meta["answer"] = answer[:MAX_TEXT]
            if total > len(hits):
                meta["documents_total"] = total
                batch.warnings.append(
                    f"span {query_id}: {total} documents, kept the first {len(hits)}"
                )
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
                continue
            if joiner.add(trace_id, query_id):
                batch.queries.append(query_row(record))
        targets = joiner.queries(trace_id)
        for thumbs_up, comment in votes:
            if thumbs_up is None:
                batch.warnings.append(f"trace {trace_id}: feedback event without thumbs_up")
                continue
            if not targets:
                batch.warnings.append(f"trace {trace_id}: feedback for no logged retriever span")
                continue
            text = str(comment)[:MAX_TEXT] if comment is not None else None
            for target in targets:
                record_fb = FeedbackRecord(query_id=target, thumbs_up=thumbs_up, comment=text)
                batch.feedback.append(feedback_row(record_fb))
    return batch
