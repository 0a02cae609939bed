"""The flywheel: failed production queries become candidate gold items.

Queries logged with ``QueryLogger`` (or over HTTP, or imported from JSONL) whose
latest feedback is a thumbs down — and, when a relevance grader is given, queries
none of whose retrieved chunks it grades relevant — are exported as gold
candidates. Repeated and near-duplicate queries collapse into one candidate with
a count, most frequent failures first. Each candidate lists the chunks that were
retrieved (``metadata.retrieved``), so the reviewer marks which one, if any, was
relevant (``ragmeter review``); the relevance itself is left empty.

>>> from ragmeter.store import Store
>>> from ragmeter.feedback.querylog import QueryLogger
>>> store = Store.memory()
>>> with QueryLogger(store) as log:
...     for q in ("reset my password", "Reset my password!", "reset my password", "export"):
...         log.feedback(log.log(q, [{"id": "a.md#0", "doc": "a.md"}]), thumbs_up=False)
>>> [(c.question, c.metadata["count"]) for c in export_candidates(store)]
[('reset my password', 3), ('export', 1)]
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from ragmeter.errors import InputError
from ragmeter.feedback._textsim import group_similar, normalise
from ragmeter.gold.goldset import GoldItem

__all__ = [
    "DUPLICATE_THRESHOLD",
    "LOW_RELEVANCE",
    "RelevanceGrader",
    "export_candidates",
    "parse_duration",
]

#: Content-word Jaccard at or above which two queries are one candidate.
DUPLICATE_THRESHOLD = 0.75
#: A query whose best graded chunk is below this grade (0-3) counts as a failure.
LOW_RELEVANCE = 2
#: Retrieved chunks listed per candidate, and characters of each chunk's text kept.
MAX_RETRIEVED = 10
MAX_CHUNK_TEXT = 1_500
#: Phrasings and query ids kept per candidate.
MAX_VARIANTS = 10
MAX_QUERY_IDS = 50

#: ``grader(query, hits) -> grades``: one 0-3 grade per hit (e.g. the LLM relevance judge).
RelevanceGrader = Callable[[str, Sequence[dict[str, Any]]], Sequence[int]]

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_duration(text: str) -> timedelta:
    """Parse ``30m``, ``12h``, ``7d`` or ``2w`` into a timedelta.

    >>> parse_duration("7d")
    datetime.timedelta(days=7)
    """
    match = _DURATION.match(text)
    if not match:
        raise InputError(f"duration {text!r} is not like 30m, 12h, 7d or 2w")
    return timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})


def _since_iso(since: timedelta | datetime | None, now: datetime | None) -> str | None:
    if since is None:
        return None
    moment = since if isinstance(since, datetime) else (now or datetime.now(UTC)) - since
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def export_candidates(
    store: Any,
    *,
    since: timedelta | datetime | None = None,
    negative_only: bool = False,
    grader: RelevanceGrader | None = None,
    threshold: float = DUPLICATE_THRESHOLD,
    now: datetime | None = None,
) -> list[GoldItem]:
    """Turn failed logged queries into candidate gold items, most frequent first.

    A query fails when its latest feedback is a thumbs down or — unless
    ``negative_only`` — when ``grader`` is given and grades no retrieved chunk at
    least ``LOW_RELEVANCE``. Queries newer than ``since`` (a duration back from
    now, or a moment) are read. Items get ``source: log``, ``status: candidate``,
    the tag ``flywheel`` and ``metadata`` with ``count``, ``reasons``,
    ``variants`` (other phrasings), ``retrieved`` (chunk id, doc, text),
    ``comments``, ``first_seen``/``last_seen`` and ``query_ids``.
    """
    logged = store.logged_queries(
        since=_since_iso(since, now), feedback_only=grader is None or negative_only
    )
    failed: list[tuple[Any, str]] = []
    for query in logged:
        if query.thumbs_down:
            failed.append((query, "thumbs_down"))
        elif grader is not None and not negative_only and query.hits:
            grades = list(grader(query.query, query.hits))
            if max(grades, default=0) < LOW_RELEVANCE:
                failed.append((query, "low_relevance"))
    if not failed:
        return []
    # Most frequent phrasing first, so it heads its group and becomes the question.
    phrasing = Counter(normalise(q.query) for q, _ in failed)
    order = sorted(range(len(failed)), key=lambda i: (-phrasing[normalise(failed[i][0].query)], i))
    ordered = [failed[i] for i in order]
    groups = group_similar([q.query for q, _ in ordered], threshold=threshold)
    items = [_candidate([ordered[i] for i in group]) for group in groups]
    items.sort(key=lambda item: -int(item.metadata["count"]))
    return items


def _candidate(members: list[tuple[Any, str]]) -> GoldItem:
    queries = [q for q, _ in members]
    texts = Counter(q.query.strip() for q in queries)
    first: dict[str, str] = {}
    for q in sorted(queries, key=lambda q: q.created):
        first.setdefault(q.query.strip(), q.created)
    # The most frequent phrasing; ties go to the earliest seen, then alphabetical order.
    question = min(texts, key=lambda t: (-texts[t], first[t], t))
    retrieved: dict[str, dict[str, Any]] = {}
    for query in queries:
        for hit in query.hits:
            if hit["id"] not in retrieved and len(retrieved) < MAX_RETRIEVED:
                entry = {"id": hit["id"], "doc": hit.get("doc") or hit["id"]}
                if hit.get("text"):
                    entry["text"] = str(hit["text"])[:MAX_CHUNK_TEXT]
                retrieved[hit["id"]] = entry
    comments = [c for q in queries for up, c, _ in q.feedback if c and not up]
    digest = hashlib.sha256(normalise(question).encode("utf-8")).hexdigest()[:10]
    metadata = {
        "count": len(queries),
        "reasons": dict(Counter(reason for _, reason in members)),
        "variants": sorted(t for t in texts if t != question)[:MAX_VARIANTS],
        "retrieved": list(retrieved.values()),
        "comments": list(dict.fromkeys(comments))[:MAX_VARIANTS],
        "first_seen": min(q.created for q in queries),
        "last_seen": max(q.created for q in queries),
        "query_ids": [q.id for q in queries][:MAX_QUERY_IDS],
    }
    return GoldItem(
        id=f"log-{digest}",
        question=question,
        tags=("flywheel",),
        source="log",
        status="candidate",
        metadata=metadata,
    )
