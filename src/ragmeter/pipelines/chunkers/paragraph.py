"""The paragraph chunker: paragraphs (blank-line separated) packed up to ``size`` characters.

A paragraph longer than ``size`` is cut at lines, then sentences, then words; each chunk
after the first reaches back by up to ``overlap`` characters, snapped to a line or word.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragmeter.documents import Chunk, Document
from ragmeter.pipelines.chunkers._spans import split_region

if TYPE_CHECKING:
    from ragmeter.pipelines.chunkers._base import ChunkerConfig

__all__ = ["chunk_paragraphs"]


def chunk_paragraphs(document: Document, config: ChunkerConfig) -> list[Chunk]:
    """Chunk a plain-text document by paragraphs.

    >>> from ragmeter.pipelines.chunkers._base import ChunkerConfig
    >>> doc = Document(id="a.txt", text="First para.\\n\\nSecond para.")
    >>> [c.text for c in chunk_paragraphs(doc, ChunkerConfig("paragraph", size=20, overlap=0))]
    ['First para.', 'Second para.']
    """
    from ragmeter.pipelines.chunkers._base import make_chunks

    text = document.text
    spans = split_region(text, 0, len(text), config.size, config.overlap)
    return make_chunks(document, [(s, e, []) for s, e in spans])
