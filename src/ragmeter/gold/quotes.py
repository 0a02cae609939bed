"""Find a quoted passage in a document, whatever its case and spacing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _fold(text: str) -> tuple[str, list[int]]:
    """Casefold and collapse whitespace, keeping each output char's offset in ``text``."""
    chars: list[str] = []
    offsets: list[int] = []
    space = False
    for pos, char in enumerate(text):
        if char.isspace():
            if not space:
                chars.append(" ")
                offsets.append(pos)
            space = True
            continue
        space = False
        for folded in char.casefold():
            chars.append(folded)
            offsets.append(pos)
    return "".join(chars), offsets


def fold_quote(quote: str) -> str:
    """A quote as the finder compares it: whitespace collapsed and trimmed, casefolded.
    Two quotes that fold equal find the same passage (issue 27.11).

    >>> fold_quote("Within  30\\nDays ") == fold_quote("within 30 days")
    True
    """
    return " ".join(quote.split()).casefold()


def find_quote(
    text: str, quote: str, doc_id: str, cache: dict[str, tuple[str, list[int]]]
) -> tuple[int, int] | None:
    start = text.find(quote)
    if start >= 0:
        return start, start + len(quote)
    needle = fold_quote(quote)
    if doc_id not in cache:
        cache[doc_id] = _fold(text)
    folded, offsets = cache[doc_id]
    pos = folded.find(needle) if needle else -1
    if pos < 0:
        return None
    return offsets[pos], offsets[pos + len(needle) - 1] + 1


#: Shortest (folded) overlap between a chunk's edge and a quote that counts as the quote
#: running over the chunk boundary; shorter ones are too likely to be chance.
MIN_QUOTE_OVERLAP = 24


def _head_overlap(needle: str, hay: str, least: int) -> int:
    """Length of ``hay``'s start that is a tail of ``needle`` (or all of ``hay`` inside it)."""
    if len(hay) < least:
        return len(hay) if hay and hay in needle else 0
    probe = hay[:least]
    pos = needle.find(probe)
    while pos >= 0:
        tail = needle[pos:]
        if hay.startswith(tail):
            return len(tail)
        if tail.startswith(hay):
            return len(hay)
        pos = needle.find(probe, pos + 1)
    return 0


def _tail_overlap(needle: str, hay: str, least: int) -> int:
    """Length of ``hay``'s end that is a head of ``needle``."""
    if len(hay) < least:
        return 0
    probe = hay[-least:]
    pos = needle.rfind(probe)
    while pos >= 0:
        head = needle[: pos + least]
        if hay.endswith(head):
            return len(head)
        pos = needle.rfind(probe, 0, pos + least - 1)
    return 0


def quote_spans(
    text: str, quotes: Sequence[str], least: int = MIN_QUOTE_OVERLAP
) -> list[tuple[int, int]]:
    """Where ``quotes`` overlap ``text``, as sorted, merged ``(start, end)`` offsets in it.

    Case and spacing are ignored, as in the gold set's quote matching. A quote counts where
    it appears whole, where the text lies inside it, or where it runs over the text's start
    or end by at least ``least`` characters.

    >>> quote_spans("Refunds: within  30 Days of delivery.", ["within 30 days"])
    [(9, 24)]
    >>> quote_spans("Intro. Refunds are accepted", ["refunds are accepted within 30 days"], least=5)
    [(7, 27)]
    >>> quote_spans("within 30 days. Next", ["accepted within 30 days."], least=5)
    [(0, 15)]
    """
    folded, offsets = _fold(text)
    spans: list[tuple[int, int]] = []
    for quote in quotes:
        needle = _fold(quote)[0].strip()
        if not needle:
            continue
        pos = folded.find(needle)
        found = pos >= 0
        while pos >= 0:
            spans.append((pos, pos + len(needle)))
            pos = folded.find(needle, pos + len(needle))
        if found:
            continue
        head = _head_overlap(needle, folded, least)
        if head:
            spans.append((0, head))
        tail = _tail_overlap(needle, folded, least)
        if tail:
            spans.append((len(folded) - tail, len(folded)))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return [(offsets[s], offsets[e - 1] + 1) for s, e in merged if e > s]


def quote_segments(text: str, quotes: Sequence[str]) -> list[dict[str, Any]]:
    """``text`` split into ``{"text", "quote"}`` pieces, ``quote`` true where a quote overlaps.

    Pieces are plain text for the page to escape (``textContent``, Jinja autoescape); no
    markup is ever built from a chunk or a quote.

    >>> quote_segments("a <b> c", ["<b>"])
    [{'text': 'a ', 'quote': False}, {'text': '<b>', 'quote': True}, {'text': ' c', 'quote': False}]
    """
    out: list[dict[str, Any]] = []
    last = 0
    for start, end in quote_spans(text, quotes) if quotes else []:
        if start > last:
            out.append({"text": text[last:start], "quote": False})
        out.append({"text": text[start:end], "quote": True})
        last = end
    if last < len(text) or not out:
        out.append({"text": text[last:], "quote": False})
    return out
