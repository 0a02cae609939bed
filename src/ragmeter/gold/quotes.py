"""Find a quoted passage in a document, whatever its case and spacing; and the one
measure of how much of a quote a chunk holds (:func:`quote_overlap`).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

#: A chunk covers a quote when they overlap by at least this share of the shorter of the
#: two (``--min-overlap``): half, so a quote cut by a chunk boundary counts for the chunk
#: holding most of it, and a few shared characters never do.
DEFAULT_MIN_OVERLAP = 0.5
#: ...and by at least this many folded characters (or the whole quote, when it is shorter):
#: a chunk of a few words, such as a lone heading, or a chunk starting with the last word of
#: a short quote, repeats part of the quote by chance, not because it holds the passage.
#: So a quote under twice this length cut in two may be held by neither piece.
MIN_OVERLAP_CHARS = 16

# Markdown that a converter drops with its characters: link and image targets
# ``[text](target "title")`` and reference definitions ``[id]: target``. Everything else
# Markdown adds (backticks, emphasis, heading marks, brackets, list bullets, table pipes)
# is punctuation, which folding drops anyway.
_LINK_TARGET = re.compile(r"\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
_LINK_DEFINITION = re.compile(r"^ {0,3}\[[^\]\n]+\]:[ \t]*\S+.*$", re.MULTILINE)
_WORD = re.compile(r"[^\W_]+")


def fold_text(text: str) -> str:
    """``text`` as coverage compares it: NFC, case-folded, letters and digits only.

    Whitespace, punctuation and Markdown syntax (code backticks, emphasis markers, heading
    marks, link and image targets) are dropped, so text a converter stripped of its
    Markdown, or stored decomposed (NFD), folds to the same string as the file.

    >>> fold_text("Use the `UV_CACHE_DIR` [variable](../env.md#cache)")
    'usetheuvcachedirvariable'
    >>> fold_text("Cafe\u0301 **bold**") == fold_text("Caf\u00e9 bold")
    True
    """
    text = _LINK_DEFINITION.sub("", _LINK_TARGET.sub("]", text))
    return "".join(_WORD.findall(unicodedata.normalize("NFC", text).casefold()))


@lru_cache(maxsize=4096)
def folded_quote(quote: str) -> str:
    """:func:`fold_text` of a gold quote, computed once per quote."""
    return fold_text(quote)


def _border(needle: str, hay: str) -> int:
    """Length of the longest start of ``needle`` that ends ``hay`` (KMP failure function)."""
    tail = hay[-len(needle) :]
    joined = needle + "\0" + tail  # folded text holds no NUL
    fail = [0] * len(joined)
    for i in range(1, len(joined)):
        j = fail[i - 1]
        while j and joined[i] != joined[j]:
            j = fail[j - 1]
        if joined[i] == joined[j]:
            j += 1
        fail[i] = j
    return fail[-1]


def quote_overlap(chunk: str, quote: str) -> int:
    """How many characters of ``quote`` the ``chunk`` holds where the two meet (both folded).

    The whole quote inside the chunk, the whole chunk inside the quote, or the quote running
    over the chunk's end or start: the overlap two character spans of one document would
    have, measured on text alone, so it needs no offsets and no corpus.

    >>> quote_overlap("refundswithinthirtydays", "thirtydaysofdelivery")  # the quote runs over the end
    10
    >>> quote_overlap("ofdeliverykeepthereceipt", "withinthirtydaysofdelivery")  # over the start
    10
    >>> quote_overlap("abc", "xabcx"), quote_overlap("xabcx", "abc"), quote_overlap("ab", "cd")
    (3, 3, 0)
    """
    if not chunk or not quote:
        return 0
    if quote in chunk:
        return len(quote)
    if chunk in quote:
        return len(chunk)
    return max(_border(quote, chunk), _border(quote[::-1], chunk[::-1]))


def overlap_needed(chunk_len: int, quote_len: int, share: float = DEFAULT_MIN_OVERLAP) -> int:
    """The least overlap (folded characters) at which a chunk covers a quote.

    ``share`` of the shorter of the two, and at least :data:`MIN_OVERLAP_CHARS` (or the
    whole quote, when it is shorter).

    >>> overlap_needed(300, 49), overlap_needed(300, 10), overlap_needed(30, 200), overlap_needed(12, 29)
    (25, 10, 16, 16)
    """
    # The tolerance keeps 0.5 * 49 = 24.5 -> 25 and 0.6 * 50 = 30.000000000000004 -> 30.
    least = math.ceil(share * min(chunk_len, quote_len) - 1e-9)
    return max(least, min(MIN_OVERLAP_CHARS, quote_len), 1)


def covers_quote(chunk_text: str, quote: str, share: float = DEFAULT_MIN_OVERLAP) -> bool:
    """True when ``chunk_text`` holds enough of ``quote`` (see :func:`overlap_needed`).

    >>> quote = "Refunds are accepted within thirty days of delivery."
    >>> covers_quote("Our policy. Refunds are accepted within thirty", quote)  # 33 of 44
    True
    >>> covers_quote("thirty days of delivery. Keep the receipt and its box.", quote)  # 20 of 44
    False
    >>> covers_quote("*Refunds* are accepted within `thirty days` of delivery", quote)
    True
    """
    chunk, needle = fold_text(chunk_text), folded_quote(quote)
    if not chunk or not needle:
        return False
    return quote_overlap(chunk, needle) >= overlap_needed(len(chunk), len(needle), share)


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
