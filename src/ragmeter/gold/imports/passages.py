"""Find where a reference passage came from: exact, then folded (case, spacing, Unicode form
and Markdown aside, as the coverage rule folds), then fuzzy.

The fuzzy step is a windowed token overlap: the passage and each document are split into
casefolded word tokens; a window of as many document tokens as the passage has slides over
the document, and its score is the share of the passage's tokens (counted with multiplicity)
that the window also holds. The best window at or above the threshold wins, and its exact
text in the document becomes the quote, so ``gold check --corpus`` finds it verbatim.

>>> from ragmeter.documents import Document
>>> docs = {"a.md": Document(id="a.md", text="Run   UV SYNC to install.")}
>>> [(m.doc, m.quote, m.method) for m in locate("run uv sync", docs)]
[('a.md', 'Run   UV SYNC', 'folded')]
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragmeter.documents import Document
from ragmeter.gold.quotes import FoldedText, find_quote

__all__ = ["DEFAULT_FUZZY_THRESHOLD", "Match", "locate"]

# A window must hold at least this share of the passage's tokens to count as its source.
DEFAULT_FUZZY_THRESHOLD = 0.8
# Passages shorter than this many tokens are never fuzzy-matched: a 3-word overlap is noise.
MIN_FUZZY_TOKENS = 5

_TOKEN = re.compile(r"\w+")


@dataclass(frozen=True)
class Match:
    """Where a passage was found: ``document.text[start:end] == quote``."""

    doc: str
    quote: str
    method: str  # "exact" | "folded" | "fuzzy"
    score: float


def _tokens(text: str) -> list[re.Match[str]]:
    return list(_TOKEN.finditer(text))


def _fuzzy(passage: str, doc: Document, threshold: float) -> Match | None:
    wanted = Counter(t.group().casefold() for t in _tokens(passage))
    size = sum(wanted.values())
    if size < MIN_FUZZY_TOKENS:
        return None
    found = _tokens(doc.text)
    if not found:
        return None
    words = [t.group().casefold() for t in found]
    width = min(size, len(words))
    window = Counter(words[:width])
    common = sum((window & wanted).values())
    best, best_at = common, 0
    for start in range(1, len(words) - width + 1):
        # Slide by one token: drop the left word, add the right one, adjust the overlap.
        out, into = words[start - 1], words[start + width - 1]
        if window[out] <= wanted.get(out, 0):
            common -= 1
        window[out] -= 1
        window[into] += 1
        if window[into] <= wanted.get(into, 0):
            common += 1
        if common > best:
            best, best_at = common, start
    score = best / size
    if score < threshold:
        return None
    begin, end = found[best_at].start(), found[best_at + width - 1].end()
    return Match(doc.id, doc.text[begin:end], "fuzzy", round(score, 3))


def locate(
    passage: str,
    documents: Mapping[str, Document],
    *,
    docs: Sequence[str] = (),
    threshold: float = DEFAULT_FUZZY_THRESHOLD,
    cache: dict[str, FoldedText] | None = None,
) -> list[Match]:
    """Every document holding ``passage`` exactly or folded, else the best fuzzy window.

    ``docs`` narrows the search to the documents the source names for the passage (RAGAS
    ``reference_context_ids``); an exact or folded match in several documents returns each
    of them, because each holds the passage. An empty list means found nowhere.

    >>> from ragmeter.documents import Document
    >>> d = {"a": Document(id="a", text="one two three four five six"), "b": Document(id="b", text="x")}
    >>> locate("one two three four fiv six", d)
    [Match(doc='a', quote='one two three four five six', method='fuzzy', score=0.833)]
    >>> locate("nowhere at all", d)
    []
    """
    folded_cache = {} if cache is None else cache
    pool = [documents[d] for d in docs if d in documents] or list(documents.values())
    matches: list[Match] = []
    for doc in pool:
        span = find_quote(doc.text, passage, doc.id, folded_cache)
        if span is not None:
            quote = doc.text[span[0] : span[1]]
            method = "exact" if quote == passage else "folded"
            matches.append(Match(doc.id, quote, method, 1.0))
    if matches:
        return matches
    fuzzy = [m for doc in pool if (m := _fuzzy(passage, doc, threshold)) is not None]
    if not fuzzy:
        return []
    return [max(fuzzy, key=lambda m: m.score)]
