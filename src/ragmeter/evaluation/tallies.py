"""A report's counts from its rows, in one pass (issue 29.1).

:func:`tally` reads only what a row says about the question (its id, tags, expected
documents, hit, error, answer, answer check and blame), so the full report
(:func:`~ragmeter.evaluation.report.build_report`, one ``QuestionRow`` per question) and the
brief one (:mod:`ragmeter.evaluation.brief`, a light record per question and rows built only
when read) count the same way: misses, errors, hit rate, per-tag and per-document misses,
dumb checks and blame.

>>> from types import SimpleNamespace as Row
>>> rows = [Row(id="q1", tags=["faq"], expected=["a.md"], hit=True, error=None, answer=None,
...             answer_ok=None, blame=None),
...         Row(id="q2", tags=["faq"], expected=["b.md"], hit=False, error=None, answer=None,
...             answer_ok=None, blame=None)]
>>> counts = tally(rows, fine=False)
>>> counts.misses, counts.hit_rate, counts.by_doc
([1], 0.5, [('b.md', 1)])
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ragmeter.evaluation.blame import Blame, count_blame

__all__ = ["Tallies", "TagSummary", "tally"]


@dataclass(frozen=True)
class TagSummary:
    """How one cluster of questions did, beside the overall hit rate."""

    tag: str
    n: int
    misses: int
    hit_rate: float


class _Row(Protocol):
    """What :func:`tally` reads of a row (a ``QuestionRow`` or a brief report's record)."""

    @property
    def tags(self) -> Sequence[str]: ...
    @property
    def expected(self) -> Sequence[str]: ...
    @property
    def hit(self) -> bool: ...
    @property
    def error(self) -> str | None: ...
    @property
    def answer(self) -> str | None: ...
    @property
    def answer_ok(self) -> bool | None: ...
    @property
    def blame(self) -> Blame | None: ...


@dataclass(frozen=True)
class Tallies:
    """A report's counts; ``errors`` and ``misses`` are positions in the rows counted."""

    errors: list[int]
    misses: list[int]
    hit_rate: float
    by_tag: list[TagSummary]
    by_doc: list[tuple[str, int]]
    dumb_checks: tuple[int, int] | None
    blame: dict[str, int] = field(default_factory=dict)
    blame_by_tag: dict[str, dict[str, int]] = field(default_factory=dict)


def tally(rows: Sequence[_Row], *, fine: bool) -> Tallies:
    """Count ``rows`` (blames already refined by claims; ``fine``: claims were judged).

    A miss is an evaluated question (no error) with something to find and no hit; an item
    with nothing to find (only grade-0 judgments) is neither a miss nor in the hit rate
    (issue 24.4)."""
    errors: list[int] = []
    misses: list[int] = []
    evaluated = hits = passed = checked = 0
    has_answers = False
    tag_n: Counter[str] = Counter()
    tag_miss: Counter[str] = Counter()
    doc_miss: defaultdict[str, int] = defaultdict(int)
    blames: list[Blame | None] = []
    tag_blames: defaultdict[str, list[Blame | None]] = defaultdict(list)
    for position, row in enumerate(rows):
        hit, expected = row.hit, row.expected
        if row.error is not None:
            errors.append(position)
        elif expected or hit:
            evaluated += 1
            hits += hit
            for tag in row.tags:
                tag_n[tag] += 1
                tag_miss[tag] += not hit
            if not hit:
                misses.append(position)
                for doc in expected:
                    doc_miss[doc] += 1
        if row.answer_ok is not None:
            checked += 1
            passed += row.answer_ok
        has_answers = has_answers or row.answer is not None
    if has_answers:  # blame is counted for runs with answers only
        for row in rows:
            blame = row.blame
            blames.append(blame)
            tags = row.tags
            for tag in tags if len(tags) < 2 else dict.fromkeys(tags):
                tag_blames[tag].append(blame)
    by_tag = sorted(
        (TagSummary(tag, n, tag_miss[tag], (n - tag_miss[tag]) / n) for tag, n in tag_n.items()),
        key=lambda t: (t.hit_rate, -t.n, t.tag),
    )
    return Tallies(
        errors=errors,
        misses=misses,
        hit_rate=hits / evaluated if evaluated else 0.0,
        by_tag=by_tag,
        by_doc=sorted(doc_miss.items(), key=lambda kv: (-kv[1], kv[0])),
        dumb_checks=(passed, checked) if checked and has_answers else None,
        blame=count_blame(blames, fine=fine) if has_answers else {},
        blame_by_tag={tag: count_blame(tag_blames[tag], fine=fine) for tag in sorted(tag_blames)}
        if has_answers
        else {},
    )
