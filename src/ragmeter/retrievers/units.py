"""Hits are ranked by position: a hit's identity is its rank plus what it carries.

Two hits are one ranked unit only when they are the same chunk: the same chunk id *and*
the same text and span. A hit without an id of its own (``id == doc``: a LangChain
``Document`` whose ``id`` is None, a LangServe or dict hit with only ``doc``) or whose id
is repeated with other content (the OpenAI vector store gives every chunk of a file the
file's ``file_id``) gets a generated id ``{doc}#rank{n}`` (``n`` = its 1-based rank), so no
later hit moves up because two different chunks were merged. A run file keeps trec_eval's
rule instead: a document listed twice is refused when the file is read.

>>> from ragmeter.documents import Hit
>>> hits = [Hit("a.md", "a.md", text="nothing"), Hit("a.md", "a.md", text="still nothing"),
...         Hit("b.md", "b.md", text="the quote")]
>>> [h.id for h in rank_units(hits)]
['a.md#rank1', 'a.md#rank2', 'b.md']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ragmeter.documents import Hit

__all__ = ["GENERATED", "rank_units"]

GENERATED = "#rank"
"""What a generated id puts between the document and the rank (``a.md#rank2``)."""


def _content(hit: Hit) -> tuple[str | None, int | None, int | None]:
    return hit.text, hit.start, hit.end


def rank_units(hits: Sequence[Hit]) -> list[Hit]:
    """``hits`` with an id per ranked unit (see the module doc); unchanged when ids are unique.

    Repeats of one chunk (same id, text and span) keep that id and stay one unit; a hit
    without an id of its own is never merged with another of its document, unless both
    carry the same text or span.

    >>> [h.id for h in rank_units([Hit("c1", "a.md", text="x"), Hit("c1", "a.md", text="x")])]
    ['c1', 'c1']
    >>> [h.id for h in rank_units([Hit("f1", "a.md", text="x"), Hit("f1", "a.md", text="y")])]
    ['a.md#rank1', 'a.md#rank2']
    """
    if len({hit.id for hit in hits}) == len(hits):
        return list(hits)  # every id once: each hit is its own unit (issue 29.2)
    contents: dict[str, set[tuple[str | None, int | None, int | None]]] = {}
    counts: dict[str, int] = {}
    for hit in hits:
        contents.setdefault(hit.id, set()).add(_content(hit))
        counts[hit.id] = counts.get(hit.id, 0) + 1
    taken = set(counts)
    first: dict[tuple[str, tuple[str | None, int | None, int | None]], str] = {}
    out: list[Hit] = []
    for rank, hit in enumerate(hits, start=1):
        content = _content(hit)
        own_id = hit.id != hit.doc
        known = content != (None, None, None)
        if counts[hit.id] == 1 or (len(contents[hit.id]) == 1 and (own_id or known)):
            out.append(hit)  # a unique id, or repeats of one chunk (merged as one unit later)
            continue
        key = (hit.id, content)
        ident = first.get(key) if known else None
        if ident is None:
            ident = f"{hit.doc}{GENERATED}{rank}"
            while ident in taken:
                ident += "'"
            taken.add(ident)
            first[key] = ident
        out.append(replace(hit, id=ident))
    return out
