"""Retriever adapters: whatever the user has, as one :class:`Retriever` interface.

>>> from ragmeter.retrievers import resolve_retriever
>>> resolve_retriever("https://search.internal/api").config["type"]
'http'

See :func:`resolve_retriever` for the spec forms and :func:`coerce_hits` for
the hit shapes accepted.
"""

from __future__ import annotations

from ragmeter.retrievers.base import (
    DEFAULT_BACKOFF,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    RetrievalOutput,
    Retriever,
    coerce_hits,
    coerce_output,
)
from ragmeter.retrievers.callable import CallableRetriever, ObjectRetriever
from ragmeter.retrievers.http import HttpRetriever, parse_headers
from ragmeter.retrievers.resolve import (
    BUILTIN_NAMES,
    PIPELINE_KEY,
    as_retriever,
    resolve_retriever,
)
from ragmeter.retrievers.runfile import RunFileRetriever, rank_run

__all__ = [
    "BUILTIN_NAMES",
    "DEFAULT_BACKOFF",
    "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT",
    "PIPELINE_KEY",
    "CallableRetriever",
    "HttpRetriever",
    "ObjectRetriever",
    "RetrievalOutput",
    "Retriever",
    "RunFileRetriever",
    "as_retriever",
    "coerce_hits",
    "coerce_output",
    "parse_headers",
    "rank_run",
    "resolve_retriever",
]
