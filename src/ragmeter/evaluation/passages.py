"""Passage level: the gold entry is the unit of relevance, whoever chunked the text.

A gold item's **entries** are its ``relevant`` judgments with a grade above 0: a
whole document, a document + ``quote`` passage, or a listed chunk. A retrieved
chunk *covers* an entry when it belongs to that document (no quote), overlaps the
quote's span (when both spans are known) or its text contains the quote, or is
that chunk.

The ranking scored at passage level is trec_eval's, over these qrels and this run:

- qrels: one line per entry (``entry:0``, ``entry:1`` ...) with its grade;
- run: the hits in rank order, each replaced by the entries it covers *first*
  (higher grade first, then gold order); a hit that covers nothing stays as a
  non-relevant item; a hit that covers only entries already covered is dropped,
  as a second chunk of an already-ranked document is at doc level.

So one 2,000-character chunk holding two quotes ranks exactly as two 200-character
chunks holding one each, and nothing depends on the corpus inventory (``--corpus``).
Precision@k (``Family.of_retrieved``) stays a property of the retrieved list: the
share of the top-k chunks that cover some entry.

>>> from ragmeter.documents import Hit
>>> from ragmeter.gold.goldset import GoldItem
>>> item = GoldItem(id="q", question="?", relevant=[
...     {"doc": "a.md", "quote": "thirty days"}, {"doc": "b.md"}])
>>> hits = [Hit("c#1", "c"), Hit("a.md#0", "a.md", text="... within thirty days ..."),
...         Hit("b.md#3", "b.md")]
>>> covered = [covers(item, h, {})[0] for h in hits]
>>> covered
[[], [0], [1]]
>>> entry_ranking(item, hits, covered)
['hit:c#1', 'entry:0', 'entry:1']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragmeter.documents import Hit
from ragmeter.gold.answers import normalize
from ragmeter.gold.goldset import GoldItem

__all__ = ["ENTRY", "HIT", "covers", "entry_qrels", "entry_ranking", "hit_qrels"]

ENTRY = "entry:"
"""Prefix of an entry's id in the passage-level qrels and ranking."""
HIT = "hit:"
"""Prefix of a retrieved chunk's id in the passage-level ranking (never an entry)."""

Spans = Mapping[tuple[str, int], tuple[int, int]]


def covers(item: GoldItem, hit: Hit, spans: Spans) -> tuple[list[int], bool]:
    """The entries of ``item`` that ``hit`` covers, and whether any was judged by document only.

    A quote entry needs the hit's text, or its span and the quote's span in the
    document (``spans``, from ``GoldSet.quote_spans``). A hit with neither cannot be
    judged against the quote: it covers the entry when it belongs to the document,
    and the second value says so (the run then carries a warning).
    """
    found: list[int] = []
    by_document = False
    text = normalize(hit.text) if hit.text else None
    for index, rel in enumerate(item.relevant):
        if rel.grade <= 0:
            continue
        if rel.chunk is not None:
            matched = rel.chunk == hit.id
        elif rel.doc != hit.doc:
            matched = False
        elif rel.quote is None:
            matched = True
        else:
            span = spans.get((item.id, index))
            has_span = span is not None and hit.start is not None and hit.end is not None
            if text is None and not has_span:
                matched = by_document = True
            else:
                overlaps = (
                    span is not None
                    and hit.start is not None
                    and hit.end is not None
                    and hit.start < span[1]
                    and span[0] < hit.end
                )
                matched = overlaps or (text is not None and normalize(rel.quote) in text)
        if matched:
            found.append(index)
    return found, by_document


def entry_qrels(item: GoldItem) -> dict[str, int]:
    """``{entry id: grade}`` for the entries of ``item`` (grades above 0).

    >>> entry_qrels(GoldItem(id="q", question="?", relevant=[{"doc": "a"}, {"chunk": "b#2", "grade": 3}]))
    {'entry:0': 1, 'entry:1': 3}
    """
    return {f"{ENTRY}{i}": rel.grade for i, rel in enumerate(item.relevant) if rel.grade > 0}


def entry_ranking(
    item: GoldItem, hits: Sequence[Hit], covered: Sequence[Sequence[int]]
) -> list[str]:
    """The passage-level ranking: entries at their first covering hit (see the module doc)."""
    grades = {i: rel.grade for i, rel in enumerate(item.relevant)}
    seen: set[int] = set()
    ranking: list[str] = []
    for position, hit in enumerate(hits):
        entries = covered[position] if position < len(covered) else ()
        new = sorted({e for e in entries if e not in seen}, key=lambda e: (-grades.get(e, 0), e))
        if new:
            seen.update(new)
            ranking.extend(f"{ENTRY}{e}" for e in new)
        elif not entries:
            ranking.append(f"{HIT}{hit.id}")
    return ranking


def hit_qrels(
    item: GoldItem, hits: Sequence[Hit], covered: Sequence[Sequence[int]]
) -> dict[str, int]:
    """``{hit id: grade}`` of the hits that cover some entry (their best entry's grade).

    The judgments behind precision@k at passage level, over the ranking of hit ids.
    """
    grades = {i: rel.grade for i, rel in enumerate(item.relevant)}
    out: dict[str, int] = {}
    for position, hit in enumerate(hits):
        entries = covered[position] if position < len(covered) else ()
        best = max((grades.get(e, 0) for e in entries), default=0)
        if best > out.get(hit.id, 0):
            out[hit.id] = best
    return out
