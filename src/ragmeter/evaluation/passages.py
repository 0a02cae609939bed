"""Passage level: the gold entry is the unit of relevance, whoever chunked the text.

A gold item's **entries** are its ``relevant`` judgments with a grade above 0: a
whole document, a document + ``quote`` passage, or a listed chunk. A retrieved
chunk *covers* an entry when it belongs to that document (no quote), holds enough of
the quote (the one coverage rule below), or is that chunk.

**The coverage rule.** A chunk covers a quote when their overlap is at least half of the
shorter of the two (``min_overlap``, ``--min-overlap``), and at least
``MIN_OVERLAP_CHARS`` folded characters (or the whole quote, when shorter), counted in
folded text (``gold.quotes.fold_text``: NFC, case-folded, letters and digits only, so
whitespace and Markdown syntax never count). The overlap is measured on text
(``gold.quotes.quote_overlap``): the quote inside the chunk, the chunk inside the quote, or
the quote running over the chunk's start or end. The chunk's text comes from the best
evidence the hit carries (``Evidence.chunk_text``): its span read from the corpus
document, else its own text. For a chunk whose text is the document's text at its span,
the two are the same string, so giving offsets or a corpus never changes which entries
are covered.

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
>>> covered = [covers(item, h, Evidence())[0] for h in hits]
>>> covered
[[], [0], [1]]
>>> entry_ranking(item, hits, covered)
['hit:c#1', 'entry:0', 'entry:1']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragmeter.documents import Hit
from ragmeter.errors import ConfigError
from ragmeter.gold.goldset import GoldItem
from ragmeter.gold.quotes import (
    DEFAULT_MIN_OVERLAP,
    fold_text,
    folded_quote,
    overlap_needed,
    quote_overlap,
)

__all__ = [
    "ENTRY",
    "HIT",
    "Evidence",
    "check_min_overlap",
    "chunk_grade",
    "covers",
    "entry_qrels",
    "entry_ranking",
    "hit_qrels",
]

ENTRY = "entry:"
"""Prefix of an entry's id in the passage-level qrels and ranking."""
HIT = "hit:"
"""Prefix of a retrieved chunk's id in the passage-level ranking (never an entry)."""


def check_min_overlap(value: float) -> float:
    """``value`` when it is a share in (0, 1], else a ``ConfigError`` saying so.

    >>> check_min_overlap(0.5)
    0.5
    """
    if not 0 < value <= 1:
        raise ConfigError(f"min overlap must be a share in (0, 1], e.g. 0.5; got {value}")
    return float(value)


@dataclass(frozen=True)
class Evidence:
    """What hits are judged with beyond themselves: the corpus documents (``doc id ->
    Document``) that spans are read from, and the overlap share of the coverage rule.

    >>> from ragmeter.documents import Document
    >>> ev = Evidence({"a.md": Document("a.md", "Intro. Refunds within thirty days.")})
    >>> ev.chunk_text(Hit("a.md#1", "a.md", start=7, end=34))
    'Refunds within thirty days.'
    >>> ev.chunk_text(Hit("a.md#1", "a.md")) is None
    True
    """

    documents: Mapping[str, Any] | None = None
    min_overlap: float = DEFAULT_MIN_OVERLAP

    def chunk_text(self, hit: Hit) -> str | None:
        """The text ``hit`` is judged by: its span in the corpus document, else its own text.

        A span is read only when the document is known and the span fits it; it is used
        when the hit has no text or its text lies within the span (a snippet of the chunk).
        A span that disagrees with the hit's text (offsets into another text, such as a
        converter's or a section's) is ignored: the hit's own text is the evidence.
        """
        text = hit.text or None
        document = None if self.documents is None else self.documents.get(hit.doc)
        if document is None or hit.start is None:
            return text
        body = str(document.text)
        end = hit.end if hit.end is not None else hit.start + len(text or "")
        if end <= hit.start or end > len(body):
            return text
        span = body[hit.start : end]
        if text is None or fold_text(text) in fold_text(span):
            return span
        return text


def covers(
    item: GoldItem, hit: Hit, evidence: Evidence, *, by_document: bool = True
) -> tuple[list[int], bool]:
    """The entries of ``item`` that ``hit`` covers, and whether any was judged by document only.

    A quote entry needs the hit's text (``Evidence.chunk_text``). A hit with none cannot
    be judged against the quote: with ``by_document`` it covers the entry when it belongs to
    the document, and the second value says so (the run then carries a warning); without,
    it does not cover it.
    """
    found: list[int] = []
    judged_by_document = False
    folded: str | None = None  # the chunk's folded text, once a quote asks for it
    has_text = False
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
            if folded is None:
                text = evidence.chunk_text(hit)
                has_text = text is not None
                folded = fold_text(text) if text is not None else ""
            if not has_text:
                matched = judged_by_document = by_document
            else:
                needle = folded_quote(rel.quote)
                need = overlap_needed(len(folded), len(needle), evidence.min_overlap)
                matched = bool(folded and needle) and quote_overlap(folded, needle) >= need
        if matched:
            found.append(index)
    return found, judged_by_document


def chunk_grade(item: GoldItem, hit: Hit, evidence: Evidence) -> int:
    """The grade of one chunk for ``item`` at chunk level: the highest entry it covers, else 0.

    A chunk with no text (and no readable span) covers no quote entry.

    >>> item = GoldItem(id="q", question="?", relevant=[
    ...     {"doc": "a", "quote": "within thirty days", "grade": 3}, {"doc": "a", "grade": 1}])
    >>> chunk_grade(item, Hit("a#0", "a", text="Refunds: within thirty days."), Evidence())
    3
    >>> chunk_grade(item, Hit("a#1", "a", text="Shipping is free."), Evidence())
    1
    """
    found, _ = covers(item, hit, evidence, by_document=False)
    return max((item.relevant[e].grade for e in found), default=0)


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
