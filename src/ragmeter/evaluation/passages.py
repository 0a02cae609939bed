"""Passage level: the gold entry is the unit of relevance, whoever chunked the text.

A gold item's **entries** are its ``relevant`` judgments with a grade above 0: a
whole document, a document + ``quote`` passage, or a listed chunk. A retrieved
chunk *covers* an entry when it belongs to that document (no quote), holds enough of
the quote (the one coverage rule below), or is that chunk.

**The coverage rule.** A chunk covers a quote when their overlap is at least half of the
shorter of the two (``min_overlap``, ``--min-overlap``), and at least
``MIN_OVERLAP_CHARS`` folded characters (or the whole quote, when shorter), counted in
folded text (``gold.quotes.fold_text``: NFC, case-folded, letters and digits only, so
whitespace and Markdown syntax never count). Where the overlap is measured, best first:

1. **Positions**, whenever the chunk's place in its corpus document is known
   (``Evidence.place``: its span, a framework's offsets, or its text found there exactly
   once) and the quote is found there: the overlap is the intersection of the two spans,
   in folded characters; a quote found several times is covered when any occurrence is.
2. **Text alone** (``gold.quotes.quote_overlap``): the quote inside the chunk, the chunk
   inside the quote, or the quote's head or tail meeting the chunk's end or start (a quote
   split by a chunk boundary). Containment needs no place. An edge overlap does: the same
   letters may stand elsewhere in the document, so a cover resting only on one is counted
   and the run carries one warning naming the questions (``unplaced_warning``).

For a chunk whose text is the document's text, both give the same answer, except when the
quote's head or tail at the chunk's edge is a coincidence: then positions are right.

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
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ragmeter.documents import Hit
from ragmeter.errors import ConfigError
from ragmeter.gold.goldset import GoldItem
from ragmeter.gold.quotes import (
    DEFAULT_MIN_OVERLAP,
    FoldedText,
    fold_text,
    folded_quote,
    overlap_needed,
    quote_overlap,
)

__all__ = [
    "ENTRY",
    "HIT",
    "Cover",
    "Evidence",
    "Placed",
    "check_min_overlap",
    "chunk_grade",
    "covers",
    "entry_qrels",
    "entry_ranking",
    "hit_qrels",
    "unplaced_warning",
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
    Document``) that spans are read from and chunks placed in, and the overlap share of
    the coverage rule.

    >>> from ragmeter.documents import Document
    >>> ev = Evidence({"a.md": Document("a.md", "Intro. Refunds within thirty days.")})
    >>> ev.chunk_text(Hit("a.md#1", "a.md", start=7, end=34))
    'Refunds within thirty days.'
    >>> ev.chunk_text(Hit("a.md#1", "a.md")) is None
    True
    >>> ev.place(Hit("a.md#1", "a.md", text="within thirty")).range  # folded characters
    (12, 24)
    """

    documents: Mapping[str, Any] | None = None
    min_overlap: float = DEFAULT_MIN_OVERLAP
    # doc id -> its folded text (None: not in the corpus, or not foldable with positions);
    # (doc id, folded quote) -> where the quote starts in it. Filled as hits ask.
    _folded: dict[str, FoldedText | None] = field(
        default_factory=dict, compare=False, repr=False, hash=False
    )
    _quotes: dict[tuple[str, str], list[int]] = field(
        default_factory=dict, compare=False, repr=False, hash=False
    )

    def span(self, hit: Hit) -> tuple[int, int] | None:
        """``hit``'s span in its corpus document, when the document is known, the span fits
        it, and the hit has no text or its text lies within the span (a snippet of the
        chunk). A span that disagrees with the hit's text (offsets into another text, such
        as a converter's or a section's) is None: the hit's own text is the evidence."""
        document = None if self.documents is None else self.documents.get(hit.doc)
        if document is None or hit.start is None:
            return None
        body = str(document.text)
        end = hit.end if hit.end is not None else hit.start + len(hit.text or "")
        if end <= hit.start or end > len(body):
            return None
        if hit.text and fold_text(hit.text) not in fold_text(body[hit.start : end]):
            return None
        return hit.start, end

    def chunk_text(self, hit: Hit) -> str | None:
        """The text ``hit`` is judged by: its span in the corpus document (:meth:`span`),
        else its own text."""
        span = self.span(hit)
        if span is None or self.documents is None:
            return hit.text or None
        return str(self.documents[hit.doc].text)[span[0] : span[1]]

    def folded_document(self, doc: str) -> FoldedText | None:
        """The corpus document ``doc`` folded with positions, or None (no such document)."""
        if doc not in self._folded:
            document = None if self.documents is None else self.documents.get(doc)
            folded = None if document is None else FoldedText.of(str(document.text))
            self._folded[doc] = folded if folded is not None and folded.exact else None
        return self._folded[doc]

    def place(self, hit: Hit) -> Placed | None:
        """Where ``hit`` is in its corpus document, in folded characters: its span
        (:meth:`span`), else its text found there exactly once (folded). None when neither:
        no corpus, no such document, or a text found nowhere or more than once."""
        if self.documents is None:
            return None
        folded = self.folded_document(hit.doc)
        if folded is None:
            return None
        span = self.span(hit)
        if span is not None:
            return Placed(hit.doc, folded.range(*span))
        needle = fold_text(hit.text) if hit.text else ""
        at = folded.folded.find(needle) if needle else -1
        if at < 0 or folded.folded.find(needle, at + 1) >= 0:
            return None
        return Placed(hit.doc, (at, at + len(needle)))

    def quote_at(self, doc: str, needle: str) -> list[int]:
        """Where the folded quote ``needle`` starts in the folded corpus document ``doc``."""
        key = (doc, needle)
        if key not in self._quotes:
            folded = self.folded_document(doc)
            self._quotes[key] = folded.find_all(needle) if folded is not None else []
        return self._quotes[key]


@dataclass(frozen=True)
class Placed:
    """A chunk's place in its corpus document: ``range`` in folded characters."""

    doc: str
    range: tuple[int, int]

    def overlap(self, starts: Sequence[int], length: int) -> int:
        """The most folded characters the chunk shares with a passage of ``length`` folded
        characters starting at any of ``starts``.

        >>> Placed("a", (10, 40)).overlap([0, 35], 20)
        10
        """
        lo, hi = self.range
        return max((min(hi, s + length) - max(lo, s) for s in starts), default=0)


class Cover(NamedTuple):
    """What one hit covers of a gold item (see :func:`covers`)."""

    entries: list[int]
    """The entries covered, in gold order."""
    by_document: bool
    """Some quote entry was judged by the document alone (the hit had no text)."""
    unplaced: int
    """Covers that rest only on a quote's head or tail meeting the chunk's edge in text, with
    no position to confirm it: counted, and the run warns (:func:`unplaced_warning`)."""


def covers(item: GoldItem, hit: Hit, evidence: Evidence, *, by_document: bool = True) -> Cover:
    """The entries of ``item`` that ``hit`` covers (see the module doc for the rule).

    A quote entry needs the hit's text (``Evidence.chunk_text``). A hit with none cannot
    be judged against the quote: with ``by_document`` it covers the entry when it belongs to
    the document, and ``Cover.by_document`` says so (the run then carries a warning);
    without, it does not cover it.
    """
    found: list[int] = []
    judged_by_document = False
    unplaced = 0
    folded: str | None = None  # the chunk's folded text, once a quote asks for it
    placed: Placed | None = None
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
                placed = evidence.place(hit) if has_text else None
            needle = folded_quote(rel.quote)
            starts = evidence.quote_at(hit.doc, needle) if placed and needle else []
            if not has_text:
                matched = judged_by_document = by_document
            elif placed is not None and starts:  # positions win (the module doc)
                lo, hi = placed.range
                need = overlap_needed(hi - lo, len(needle), evidence.min_overlap)
                matched = hi > lo and placed.overlap(starts, len(needle)) >= need
            else:
                need = overlap_needed(len(folded), len(needle), evidence.min_overlap)
                matched = bool(folded and needle) and quote_overlap(folded, needle) >= need
                if matched and needle not in folded and folded not in needle:
                    unplaced += 1  # an edge overlap of text alone: may be chance
        if matched:
            found.append(index)
    return Cover(found, judged_by_document, unplaced)


def unplaced_warning(counts: Mapping[str, int], *, corpus: bool) -> list[str]:
    """The run's one warning about covers that rest on an unplaced edge overlap: how many,
    in which questions (``counts``: question id -> covers), and the fix.

    >>> unplaced_warning({"q1": 2, "q2": 1}, corpus=False)[0][:60]
    "3 covers rest on a quote's head or tail at a chunk's edge, w"
    >>> unplaced_warning({}, corpus=False)
    []
    """
    named = [q for q, n in counts.items() if n > 0]
    if not named:
        return []
    total = sum(counts[q] for q in named)
    listed = ", ".join(named[:_NAMED]) + (
        f" and {len(named) - _NAMED} more" if len(named) > _NAMED else ""
    )
    fix = (
        "give the hits start/end offsets into the corpus documents (their text was not "
        "found exactly once there)"
        if corpus
        else "give --corpus DIR (evaluate(corpus=...)), the documents the chunks were cut "
        "from, or hits with start/end offsets into them"
    )
    return [
        f"{total} {'cover rests' if total == 1 else 'covers rest'} on a quote's head or tail at a "
        f"chunk's edge, which text alone cannot place, in {len(named)} question(s): "
        f"{listed}. They count, but the same letters may stand elsewhere in the document; "
        f"{fix}, and positions decide"
    ]


_NAMED = 10  # questions named in the warning before "and N more" (as unknowns' warnings)


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
    found = covers(item, hit, evidence, by_document=False).entries
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
