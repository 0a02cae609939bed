"""Chunkers: cut documents into chunks that keep their document id and character span.

One module per chunker, one config for all (``ChunkerConfig``):

- ``markdown`` (default): structure-aware: split on headings, heading path kept in
  metadata, long sections split at paragraphs with a small overlap; plain-text
  documents (``.txt``/``.rst``) fall back to ``paragraph``;
- ``paragraph``: paragraphs packed up to ``size`` characters, with overlap;
- ``fixed``: windows of ``size`` characters (or, with ``unit="tokens"``, whitespace
  tokens) with ``overlap``, snapped to words;
- ``sentence``: sentences packed up to ``size`` characters, overlap in whole sentences
  where they fit;
- ``none``: whole documents (one chunk per document, chunk id == document id).

Every chunk satisfies ``chunk.text == document.text[chunk.start:chunk.end]``, so a gold
``quote`` can be matched against any chunking. The optional heading-path prefix
(``heading_prefix=True``) therefore never changes ``chunk.text``: it is kept in
``chunk.metadata["prefix"]`` and added to what retrievers index (:func:`index_text`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ragmeter.documents import Chunk, Document
from ragmeter.pipelines.chunkers._base import (
    DEFAULT_OVERLAP,
    KINDS,
    MAX_AUTO_MIN_SIZE,
    MIN_SIZE,
    UNITS,
    Chunker,
    ChunkerConfig,
    index_text,
    make_chunks,
)

if TYPE_CHECKING:
    from ragmeter.corpus import Corpus

__all__ = [
    "DEFAULT_OVERLAP",
    "MAX_AUTO_MIN_SIZE",
    "MIN_SIZE",
    "UNITS",
    "KINDS",
    "ChunkerConfig",
    "chunk_corpus",
    "chunk_document",
    "index_text",
    "make_chunker",
    "make_chunks",
]


def make_chunker(config: ChunkerConfig) -> Chunker:
    """The function that chunks one document with ``config``.

    >>> chunker = make_chunker(ChunkerConfig(kind="none"))
    >>> [c.id for c in chunker(Document(id="a.md", text="Hello."))]
    ['a.md']
    """
    if config.kind == "none":
        return _whole
    fn = _chunker_function(config.kind)

    def chunker(document: Document) -> list[Chunk]:
        return fn(document, config)

    return chunker


def chunk_document(document: Document, config: ChunkerConfig) -> list[Chunk]:
    """Chunk one document.

    >>> doc = Document(id="a.md", text="# A\\n\\nalpha\\n\\n# B\\n\\nbeta", title="A")
    >>> [c.metadata["heading_path"] for c in chunk_document(doc, ChunkerConfig(min_size=0))]
    [['A'], ['B']]
    """
    return make_chunker(config)(document)


def chunk_corpus(corpus: Corpus | Iterable[Document], config: ChunkerConfig) -> list[Chunk]:
    """Chunk every document of a corpus, in corpus order.

    >>> docs = [Document(id="a", text="one"), Document(id="b", text="two")]
    >>> [c.id for c in chunk_corpus(docs, ChunkerConfig())]
    ['a#0', 'b#0']
    """
    chunker = make_chunker(config)
    out: list[Chunk] = []
    for document in corpus:
        out.extend(chunker(document))
    return out


def _chunker_function(kind: str) -> Callable[[Document, ChunkerConfig], list[Chunk]]:
    # Imported on first use: each chunker is its own module (issue 4 adds more).
    if kind == "markdown":
        from ragmeter.pipelines.chunkers.markdown import chunk_markdown

        return chunk_markdown
    if kind == "paragraph":
        from ragmeter.pipelines.chunkers.paragraph import chunk_paragraphs

        return chunk_paragraphs
    if kind == "fixed":
        from ragmeter.pipelines.chunkers.fixed import chunk_fixed

        return chunk_fixed
    from ragmeter.pipelines.chunkers.sentence import chunk_sentences

    return chunk_sentences


def _whole(document: Document) -> list[Chunk]:
    return [
        Chunk(
            id=document.id,
            doc_id=document.id,
            text=document.text,
            start=0,
            end=len(document.text),
            metadata={"heading_path": [], "title": document.title},
        )
    ]
