"""The recent traces an ingest server has seen: joins a trace's spans across export requests.

An exporter may send a trace's retriever span, its LLM span and the span carrying the user's
feedback in different requests (``SimpleSpanProcessor`` sends each span when it ends; a
batching one may split a trace), and retries a request whose reply it missed. For each recent
trace the table keeps the query ids logged from its retriever spans, the latest answer and
every verdict, so that whichever arrives last joins the others:

- a retriever span arriving after the answer is logged with it; an answer arriving after the
  retriever span is written onto the stored entry (``meta.answer``);
- a verdict goes to every retriever span of the trace, those logged already and those still
  to come; a verdict seen before (the same event re-sent) is not written again.

Bounded: ``MAX_RECENT_TRACES`` traces and ``MAX_RECENT_SPANS`` span ids (to find the trace of
an annotated span), oldest forgotten first; a span of a forgotten trace is joined only with
what arrives after it. Per trace, ``MAX_TRACE_QUERIES`` retriever spans take part in the join
and ``MAX_TRACE_VOTES`` verdicts are kept (issue 27.1): a verdict is written once per joined
retriever span, so without these caps one request of N retriever spans and M feedback events
wrote N x M rows. With them, a retriever span writes at most ``1 + MAX_TRACE_VOTES`` rows and
a verdict at most ``MAX_TRACE_QUERIES``, whatever arrived before.

>>> joiner = TraceJoiner()
>>> trace = joiner.trace("t1")
>>> joiner.add_query("t1", "t1-s1"), joiner.add_query("t1", "t1-s1"), joiner.queries("t1")
(True, False, ['t1-s1'])
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

__all__ = [
    "MAX_RECENT_SPANS",
    "MAX_RECENT_TRACES",
    "MAX_TRACE_QUERIES",
    "MAX_TRACE_VOTES",
    "Trace",
    "TraceJoiner",
    "Vote",
]

#: Traces remembered per server, so spans exported in later requests still join.
MAX_RECENT_TRACES = 10_000
#: Span ids remembered per server, so an annotation naming any span finds its trace.
MAX_RECENT_SPANS = 100_000
#: Retriever spans of one trace that get the trace's verdicts; later ones are logged alone.
MAX_TRACE_QUERIES = 20
#: Verdicts kept per trace (feedback events and annotations); later new ones are refused.
MAX_TRACE_VOTES = 10

#: A verdict: (thumbs_up, comment).
Vote = tuple[bool, str | None]


@dataclass
class Trace:
    """What is known of one trace: its logged queries, latest answer and verdicts."""

    queries: list[str] = field(default_factory=list)
    answer: str | None = None
    answer_end: int = -1  # end time (ns) of the span that gave the answer
    votes: dict[str, Vote] = field(default_factory=dict)  # by a key naming where it came from

    @property
    def full_of_queries(self) -> bool:
        """True when a new retriever span would not join this trace's verdicts."""
        return len(self.queries) >= MAX_TRACE_QUERIES

    def takes_vote(self, key: str) -> bool:
        """True when a verdict under ``key`` may be kept (known key, or room for a new one)."""
        return key in self.votes or len(self.votes) < MAX_TRACE_VOTES


class TraceJoiner:
    """A bounded table of recent traces (see module doc)."""

    def __init__(self, limit: int = MAX_RECENT_TRACES, span_limit: int = MAX_RECENT_SPANS) -> None:
        self._traces: OrderedDict[str, Trace] = OrderedDict()
        self._spans: OrderedDict[str, str] = OrderedDict()
        self._limit, self._span_limit = limit, span_limit

    def trace(self, trace_id: str) -> Trace:
        """The entry for ``trace_id``, created (and the oldest forgotten) if need be."""
        entry = self._traces.get(trace_id)
        if entry is None:
            entry = self._traces[trace_id] = Trace()
            while len(self._traces) > self._limit:
                self._traces.popitem(last=False)
        else:
            self._traces.move_to_end(trace_id)
        return entry

    def note_span(self, span_id: str, trace_id: str) -> None:
        """Remember which trace ``span_id`` belongs to."""
        self._spans[span_id] = trace_id
        self._spans.move_to_end(span_id)
        while len(self._spans) > self._span_limit:
            self._spans.popitem(last=False)

    def trace_of_span(self, span_id: str) -> str | None:
        """The trace of a recently seen span, else None."""
        trace_id = self._spans.get(span_id)
        return trace_id if trace_id in self._traces else None

    def add_query(self, trace_id: str, query_id: str) -> bool:
        """Remember ``query_id`` under ``trace_id``; False if it was already there or the
        trace already joins ``MAX_TRACE_QUERIES`` retriever spans."""
        entry = self.trace(trace_id)
        if query_id in entry.queries or entry.full_of_queries:
            return False
        entry.queries.append(query_id)
        return True

    def queries(self, trace_id: str) -> list[str]:
        """The query ids logged for ``trace_id`` (empty if unknown or forgotten)."""
        entry = self._traces.get(trace_id)
        return list(entry.queries) if entry else []

    def forget(self, added: list[tuple[str, str, str]]) -> None:
        """Undo ``("query"|"vote", trace_id, key)`` additions whose write failed, so that
        the exporter's retry joins them again."""
        for what, trace_id, key in added:
            entry = self._traces.get(trace_id)
            if entry is None:
                continue
            if what == "query" and key in entry.queries:
                entry.queries.remove(key)
            elif what == "vote":
                entry.votes.pop(key, None)
