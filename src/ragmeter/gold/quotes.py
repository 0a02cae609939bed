"""Find a quoted passage in a document, whatever its case and spacing."""

from __future__ import annotations


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


def find_quote(
    text: str, quote: str, doc_id: str, cache: dict[str, tuple[str, list[int]]]
) -> tuple[int, int] | None:
    start = text.find(quote)
    if start >= 0:
        return start, start + len(quote)
    needle = " ".join(quote.split()).casefold()
    if doc_id not in cache:
        cache[doc_id] = _fold(text)
    folded, offsets = cache[doc_id]
    pos = folded.find(needle) if needle else -1
    if pos < 0:
        return None
    return offsets[pos], offsets[pos + len(needle) - 1] + 1
