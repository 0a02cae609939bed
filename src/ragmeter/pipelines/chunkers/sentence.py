"""The sentence-aware chunker: sentences (within paragraphs) packed up to ``size`` characters.

Chunks break only between sentences unless one sentence is longer than ``size``; each
chunk after the first reaches back by up to ``overlap`` characters, snapped to a line or
word start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragmeter.documents import Chunk, Document
from ragmeter.pipelines.chunkers._spans import (
    BLANK_LINE,
    SENTENCE,
    SPACE,
    Span,
    add_overlap,
    pack,
    split_at,
    trim,
)

if TYPE_CHECKING:
    from ragmeter.pipelines.chunkers._base import ChunkerConfig

__all__ = ["chunk_sentences"]


def chunk_sentences(document: Document, config: ChunkerConfig) -> list[Chunk]:
    """Chunk a document into runs of whole sentences.

    >>> from ragmeter.pipelines.chunkers._base import ChunkerConfig
    >>> doc = Document(id="a", text="One is here. Two is there. Three is everywhere.")
    >>> [c.text for c in chunk_sentences(doc, ChunkerConfig("sentence", size=30, overlap=0))]
    ['One is here. Two is there.', 'Three is everywhere.']
    """
    from ragmeter.pipelines.chunkers._base import make_chunks

    text = document.text
    region = trim(text, 0, len(text))
    if region is None:
        return []
    spans: list[Span]
    if region[1] - region[0] <= config.size:
        spans = [region]
    else:
        sentences = [
            s
            for p_start, p_end in split_at(text, region[0], region[1], BLANK_LINE)
            for s in split_at(text, p_start, p_end, SENTENCE)
        ]
        packed = pack(text, sentences, config.size - config.overlap, (SPACE,))
        spans = add_overlap(text, packed, region[0], config.overlap)
    return make_chunks(document, [(s, e, []) for s, e in spans])
