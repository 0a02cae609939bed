"""The fixed-window chunker: windows of ``size`` characters that overlap by ``overlap``.

With ``unit="tokens"`` a window is ``size`` whitespace-separated tokens and the next one
starts ``overlap`` tokens before its end (a token is a run of non-space characters, so no
tokenizer model is needed and the count is the same for every retriever).

A window ends at the last whitespace in its second half (so words are not cut unless a
single "word" fills half a window) and the next one starts ``overlap`` characters before
that end, snapped forward to a line or word start.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ragmeter.documents import Chunk, Document
from ragmeter.pipelines.chunkers._spans import Span, overlap_start, trim

if TYPE_CHECKING:
    from ragmeter.pipelines.chunkers._base import ChunkerConfig

__all__ = ["chunk_fixed", "fixed_windows", "token_windows"]

_TOKEN = re.compile(r"\S+")


def chunk_fixed(document: Document, config: ChunkerConfig) -> list[Chunk]:
    """Chunk a document into fixed-size character windows.

    >>> from ragmeter.pipelines.chunkers._base import ChunkerConfig
    >>> doc = Document(id="a", text="one two three four five six seven")
    >>> [c.text for c in chunk_fixed(doc, ChunkerConfig("fixed", size=20, overlap=5))]
    ['one two three four', 'four five six seven']
    """
    from ragmeter.pipelines.chunkers._base import make_chunks

    if config.unit == "tokens":
        spans = token_windows(document.text, config.size, config.overlap)
    else:
        spans = fixed_windows(document.text, config.size, config.overlap)
    return make_chunks(document, [(s, e, []) for s, e in spans])


def fixed_windows(text: str, size: int, overlap: int) -> list[Span]:
    """The ``(start, end)`` windows of ``text`` (trimmed, each at most ``size`` long).

    >>> fixed_windows("aaaa bbbb cccc", 10, 0)
    [(0, 9), (10, 14)]
    """
    n = len(text)
    first = trim(text, 0, n)
    if first is None:
        return []
    pos, n = first
    spans: list[Span] = []
    prev_end = pos
    while pos < n:
        cut = min(n, pos + size)
        if cut < n:
            # Back off to whitespace in the window's second half so words stay whole,
            # but past the previous window's end, so every window adds new text.
            floor = max(pos + size // 2, prev_end + 1)
            back = cut
            while back >= floor and not text[back].isspace():
                back -= 1
            if back >= floor:
                cut = back
        span = trim(text, pos, cut)
        if span:
            spans.append(span)
            prev_end = span[1]
        if cut >= n:
            break
        nxt = overlap_start(text, pos + 1, cut, overlap)
        while nxt < n and text[nxt].isspace():
            nxt += 1
        pos = max(nxt, pos + 1)
    return spans


def token_windows(text: str, size: int, overlap: int) -> list[Span]:
    """Windows of ``size`` whitespace tokens, each starting ``overlap`` tokens before the
    previous one ended.

    >>> t = "a b c d e"
    >>> [t[s:e] for s, e in token_windows(t, 3, 1)]
    ['a b c', 'c d e']
    """
    tokens = [m.span() for m in _TOKEN.finditer(text)]
    spans: list[Span] = []
    step = max(1, size - overlap)
    i = 0
    while i < len(tokens):
        j = min(len(tokens), i + size)
        spans.append((tokens[i][0], tokens[j - 1][1]))
        if j == len(tokens):
            break
        i += step
    return spans
