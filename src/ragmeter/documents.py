"""The small value types every layer shares: documents, chunks and hits.

A ``Chunk`` keeps its document id and character span so a gold ``quote``
can be matched against it whatever the chunker; a ``Hit`` is one item a
retriever returned, in rank order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Chunk", "Document", "Hit"]


@dataclass(frozen=True, slots=True)
class Document:
    """One document of a corpus.

    >>> Document(id="guide.md", text="# Install\\nRun it.").id
    'guide.md'
    """

    id: str
    text: str
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a document: ``text == document.text[start:end]``.

    ``id`` is ``"{doc_id}#{n}"`` for the n-th chunk (0-based) of a document.

    >>> Chunk(id="a.md#0", doc_id="a.md", text="Run it.", start=10, end=17).end
    17
    """

    id: str
    doc_id: str
    text: str
    start: int
    end: int
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved item, as a retriever returns it (rank = position in the list).

    ``id`` names the chunk (equal to ``doc`` when documents are retrieved whole);
    ``doc`` names its document. ``start``/``end`` are the chunk's character span
    in the document when known.

    >>> Hit(id="faq.md#4", doc="faq.md", score=12.5).doc
    'faq.md'
    """

    id: str
    doc: str
    score: float | None = None
    text: str | None = None
    start: int | None = None
    end: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
