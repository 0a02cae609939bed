"""Find a quoted passage in a document, whatever its case, spacing, Unicode form or
Markdown; and the one measure of how much of a quote a chunk holds (:func:`quote_overlap`).

Everything here folds text one way (:func:`fold_text`): the coverage rule, finding a quote
in its document (:func:`find_quote`: ``gold check --corpus``, gold edits) and marking a
quote inside a chunk (:func:`quote_spans`: the dashboard).
"""

from __future__ import annotations

import math
import re
import unicodedata
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True)
class FoldedText:
    """A text folded as :func:`fold_text` folds it, with where each folded character came
    from: ``starts[i]``/``ends[i]`` are the raw offsets of the character (with its combining
    marks) that folded character ``i`` was folded from. So a search in folded text maps back
    to the text itself, and a raw span maps to folded characters.

    ``exact`` says the folded string equals :func:`fold_text` of the text (it does, except
    for scripts whose NFC composes two base letters, such as Hangul jamo); positions are
    used only when it does.

    >>> ft = FoldedText.of("Use the `UV_CACHE_DIR` [variable](env.md).")
    >>> ft.folded, ft.exact
    ('usetheuvcachedirvariable', True)
    >>> at = ft.folded.find("uvcachedir")
    >>> ft.span(at, at + len("uvcachedir"))
    (9, 21)
    >>> ft.range(9, 21)
    (6, 16)
    """

    folded: str
    starts: list[int]
    ends: list[int]
    exact: bool

    @classmethod
    def of(cls, text: str) -> FoldedText:
        """Fold ``text``, keeping each folded character's raw offsets."""
        kept, where = _unlinked(text)
        parts: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        for run in _RUN.finditer(kept):
            chars, at = run.group(), run.start()
            if chars.isascii():  # one raw character per folded character
                parts.append(chars.lower())
                offsets = where[at : at + len(chars)]
                starts.extend(offsets)
                ends.extend(o + 1 for o in offsets)
                continue
            i = 0
            while i < len(chars):
                j = i + 1
                while j < len(chars) and unicodedata.category(chars[j]).startswith("M"):
                    j += 1  # a letter and its combining marks fold together (NFC)
                group = unicodedata.normalize("NFC", chars[i:j]).casefold()
                letters = "".join(_WORD.findall(group))
                parts.append(letters)
                starts.extend([where[at + i]] * len(letters))
                ends.extend([where[at + j - 1] + 1] * len(letters))
                i = j
        folded = "".join(parts)
        return cls(folded, starts, ends, folded == fold_text(text))

    def span(self, lo: int, hi: int) -> tuple[int, int]:
        """The raw ``(start, end)`` of folded characters ``lo`` to ``hi`` (``hi > lo``)."""
        return self.starts[lo], self.ends[hi - 1]

    def range(self, start: int, end: int) -> tuple[int, int]:
        """The folded characters ``(lo, hi)`` whose raw characters start in ``[start, end)``."""
        return bisect_left(self.starts, start), bisect_left(self.starts, end)

    def find_all(self, needle: str) -> list[int]:
        """Every folded position where ``needle`` starts (overlapping ones too).

        >>> FoldedText.of("a-a-a").find_all("aa")
        [0, 1]
        """
        found: list[int] = []
        at = self.folded.find(needle) if needle else -1
        while at >= 0:
            found.append(at)
            at = self.folded.find(needle, at + 1)
        return found


# Runs of characters folding can keep: ASCII letters and digits, or anything non-ASCII
# (letters, combining marks, and the punctuation between them, sorted out per character).
_RUN = re.compile("[0-9A-Za-z\u0080-\U0010ffff]+")


def _unlinked(text: str) -> tuple[str, list[int]]:
    """``text`` without link targets and definitions, as :func:`fold_text` removes them,
    and the raw offset of each character kept."""
    kept, where = _cut(text, list(range(len(text))), _LINK_TARGET, "]")
    return _cut(kept, where, _LINK_DEFINITION, "")


def _cut(text: str, where: list[int], pattern: re.Pattern[str], put: str) -> tuple[str, list[int]]:
    """``pattern.sub(put, text)`` with the offsets of what is left (``put`` at its match)."""
    parts: list[str] = []
    offsets: list[int] = []
    last = 0
    for match in pattern.finditer(text):
        parts.append(text[last : match.start()])
        offsets.extend(where[last : match.start()])
        if put:
            parts.append(put)
            offsets.extend([where[match.start()]] * len(put))
        last = match.end()
    if not last:
        return text, where
    parts.append(text[last:])
    offsets.extend(where[last:])
    return "".join(parts), offsets


def find_quote(
    text: str, quote: str, doc_id: str, cache: dict[str, FoldedText]
) -> tuple[int, int] | None:
    """Where ``quote`` is in ``text``: ``(start, end)`` raw offsets, or None.

    Exactly first; then folded as the coverage rule folds (:func:`fold_text`: NFC, case,
    letters and digits only, Markdown syntax dropped), mapped back to the raw text. ``cache``
    keeps each ``doc_id``'s folded text for the next quote.

    >>> text = "Use `uv cache clean` to remove **all** entries."
    >>> find_quote(text, "uv cache clean to remove all", "a.md", {})
    (5, 36)
    >>> find_quote("Cafe\u0301 ouvert", "café", "b.md", {})
    (0, 5)
    >>> find_quote("Then run uv  sync. Done", "run uv sync.", "c.md", {})  # its "." kept
    (5, 18)
    """
    start = text.find(quote)
    if start >= 0:
        return start, start + len(quote)
    needle = folded_quote(quote)
    if not needle:
        return None
    folded = cache.get(doc_id)
    if folded is None:
        folded = cache[doc_id] = FoldedText.of(text)
    pos = folded.folded.find(needle)
    if pos < 0:
        return None
    start, end = folded.span(pos, pos + len(needle))
    # Folding drops the quote's own leading and trailing punctuation; keep what the text has.
    lead, trail = _EDGE_LEAD.search(quote.strip()), _EDGE_TRAIL.search(quote.strip())
    if lead and text[:start].endswith(lead.group()):
        start -= len(lead.group())
    if trail and text.startswith(trail.group(), end):
        end += len(trail.group())
    return start, end


_EDGE_LEAD = re.compile(r"^[^\w\s]+")
_EDGE_TRAIL = re.compile(r"[^\w\s]+$")


def quote_spans(
    text: str, quotes: Sequence[str], share: float = DEFAULT_MIN_OVERLAP
) -> list[tuple[int, int]]:
    """Where ``quotes`` overlap ``text`` as the coverage rule counts it: sorted, merged
    ``(start, end)`` offsets in ``text``.

    Text is folded as coverage folds it (:func:`fold_text`). A quote is marked where it is
    whole in the text, over the whole text when the text lies inside it, or where its head
    or tail meets the text's end or start; the last two only when that overlap covers the
    quote (:func:`overlap_needed` with ``share``), so what is marked is what counts.

    >>> quote_spans("Refunds: within  30 Days of delivery.", ["within 30 days"])
    [(9, 24)]
    >>> quote_spans("Intro. Refunds are accepted", ["refunds are accepted within 30 days"])
    [(7, 27)]
    >>> quote_spans("Intro. Refunds are", ["refunds are accepted within 30 days"])  # 10 of 30
    []
    """
    chunk = FoldedText.of(text)
    size = len(chunk.folded)
    spans: list[tuple[int, int]] = []
    for quote in quotes:
        needle = folded_quote(quote)
        if not needle or not size:
            continue
        found = chunk.find_all(needle)
        spans.extend((at, at + len(needle)) for at in found)
        if found:
            continue
        need = overlap_needed(size, len(needle), share)
        if chunk.folded in needle:
            spans.extend([(0, size)] if size >= need else [])
            continue
        head = _border(needle, chunk.folded)  # the quote's head ends the text
        if head >= need:
            spans.append((size - head, size))
        tail = _border(needle[::-1], chunk.folded[::-1])  # its tail starts the text
        if tail >= need:
            spans.append((0, tail))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return [chunk.span(lo, hi) for lo, hi in merged if hi > lo]


def quote_segments(
    text: str, quotes: Sequence[str], share: float = DEFAULT_MIN_OVERLAP
) -> list[dict[str, Any]]:
    """``text`` split into ``{"text", "quote"}`` pieces, ``quote`` true where a quote overlaps
    as the coverage rule counts it (:func:`quote_spans`).

    Pieces are plain text for the page to escape (``textContent``, Jinja autoescape); no
    markup is ever built from a chunk or a quote.

    >>> quote_segments("a <b>bold</b> c", ["bold"])
    [{'text': 'a <b>', 'quote': False}, {'text': 'bold', 'quote': True}, {'text': '</b> c', 'quote': False}]
    """
    out: list[dict[str, Any]] = []
    last = 0
    for start, end in quote_spans(text, quotes, share) if quotes else []:
        if start > last:
            out.append({"text": text[last:start], "quote": False})
        out.append({"text": text[start:end], "quote": True})
        last = end
    if last < len(text) or not out:
        out.append({"text": text[last:], "quote": False})
    return out
