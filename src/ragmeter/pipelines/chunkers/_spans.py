"""Span arithmetic every chunker shares: trimming, splitting at boundaries, packing, overlap.

Chunkers work on ``(start, end)`` character spans of the document text, never on copies,
so ``chunk.text == document.text[start:end]`` holds by construction. Every separator a
span is cut at is whitespace, so no non-whitespace character is ever lost.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

Span = tuple[int, int]

#: A blank line (paragraph break).
BLANK_LINE = re.compile(r"\n[ \t]*\n\s*")
#: A line break.
NEWLINE = re.compile(r"\n\s*")
#: Whitespace after a sentence end (., !, ? and closing quotes/brackets).
SENTENCE = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
#: Any whitespace.
SPACE = re.compile(r"\s+")

#: Boundaries tried in order when a piece is too long: paragraph, line, sentence, word.
LEVELS: tuple[re.Pattern[str], ...] = (BLANK_LINE, NEWLINE, SENTENCE, SPACE)

_LINE_START = re.compile(r"(?<=\n)\S")
_WORD_START = re.compile(r"(?<=\s)\S")


def trim(text: str, start: int, end: int) -> Span | None:
    """Shrink a span to exclude leading/trailing whitespace; None when nothing is left.

    >>> trim("  ab \\n", 0, 6)
    (2, 4)
    """
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def split_at(
    text: str,
    start: int,
    end: int,
    pattern: re.Pattern[str],
    protected: Sequence[Span] = (),
) -> list[Span]:
    """Cut ``text[start:end]`` at every match of ``pattern`` outside ``protected`` spans.

    Pieces are trimmed; whitespace-only pieces are dropped.

    >>> split_at("a\\n\\nb c", 0, 6, BLANK_LINE)
    [(0, 1), (3, 6)]
    """
    pieces: list[Span] = []
    pos = start
    for m in pattern.finditer(text, start, end):
        if m.start() == m.end() or _inside(m.start(), protected):
            continue
        piece = trim(text, pos, m.start())
        if piece:
            pieces.append(piece)
        pos = m.end()
    piece = trim(text, pos, end)
    if piece:
        pieces.append(piece)
    return pieces


def _inside(pos: int, protected: Sequence[Span]) -> bool:
    return any(s < pos < e for s, e in protected)


def pack(
    text: str,
    pieces: Sequence[Span],
    limit: int,
    levels: Sequence[re.Pattern[str]] = LEVELS[1:],
) -> list[Span]:
    """Greedily join consecutive pieces into spans of at most ``limit`` characters.

    A piece longer than ``limit`` is cut at the next boundary in ``levels`` (line,
    sentence, word) and, when none is left, hard every ``limit`` characters.

    >>> pack("aa bb cc", [(0, 2), (3, 5), (6, 8)], 5)
    [(0, 5), (6, 8)]
    """
    out: list[Span] = []
    cur: Span | None = None
    for s, e in pieces:
        if e - s > limit:
            if cur:
                out.append(cur)
                cur = None
            out.extend(_split_long(text, s, e, limit, levels))
            continue
        if cur is None:
            cur = (s, e)
        elif e - cur[0] <= limit:
            cur = (cur[0], e)
        else:
            out.append(cur)
            cur = (s, e)
    if cur:
        out.append(cur)
    return out


def _split_long(
    text: str, start: int, end: int, limit: int, levels: Sequence[re.Pattern[str]]
) -> list[Span]:
    for i, pattern in enumerate(levels):
        pieces = split_at(text, start, end, pattern)
        if len(pieces) > 1:
            return pack(text, pieces, limit, levels[i + 1 :])
    # No boundary at all (a long token, a minified line): cut hard.
    out: list[Span] = []
    for s in range(start, end, limit):
        piece = trim(text, s, min(end, s + limit))
        if piece:
            out.append(piece)
    return out


def overlap_start(text: str, lower: int, start: int, overlap: int) -> int:
    """Move ``start`` back by at most ``overlap`` characters (not before ``lower``),
    snapped forward to the nearest line start, else word start, in that window.

    Returns ``start`` itself when no boundary fits.

    >>> t = "one two\\nthree four"
    >>> overlap_start(t, 0, 14, 9), overlap_start(t, 0, 14, 4)
    (8, 14)
    """
    if overlap <= 0 or start <= lower:
        return start
    lo = max(lower, start - overlap)
    for boundary in (_LINE_START, _WORD_START):
        m = boundary.search(text, lo, start)
        if m:
            return m.start()
    if lo == lower and _is_word_start(text, lower):
        return lower
    return start


def _is_word_start(text: str, pos: int) -> bool:
    return not text[pos].isspace() and (pos == 0 or text[pos - 1].isspace())


def add_overlap(text: str, spans: Sequence[Span], lower: int, overlap: int) -> list[Span]:
    """Extend every span after the first back into its predecessor by up to ``overlap``.

    >>> add_overlap("aa bb cc dd", [(0, 5), (6, 11)], 0, 3)
    [(0, 5), (3, 11)]
    """
    out = list(spans[:1])
    for s, e in spans[1:]:
        prev_start = out[-1][0]
        # Strictly after the previous start, so a chunk never contains its predecessor.
        out.append((overlap_start(text, max(lower, prev_start + 1), s, overlap), e))
    return out


def split_region(
    text: str,
    start: int,
    end: int,
    size: int,
    overlap: int,
    protected: Sequence[Span] = (),
    first: re.Pattern[str] = BLANK_LINE,
) -> list[Span]:
    """Cut a region into spans of at most ``size`` characters (overlap included).

    The region is kept whole when it fits; otherwise it is cut at ``first`` boundaries
    (paragraphs) outside ``protected`` spans (code blocks), pieces are packed up to
    ``size - overlap`` and each span after the first reaches back by up to ``overlap``.

    >>> split_region("aaaa bbbb\\n\\ncccc dddd", 0, 20, 16, 6)
    [(0, 9), (5, 20)]
    """
    region = trim(text, start, end)
    if region is None:
        return []
    if region[1] - region[0] <= size:
        return [region]
    levels = LEVELS[LEVELS.index(first) + 1 :] if first in LEVELS else LEVELS[1:]
    pieces = split_at(text, region[0], region[1], first, protected)
    spans = pack(text, pieces, size - overlap, levels)
    return add_overlap(text, spans, region[0], overlap)
