"""The data behind the dashboard's run page, as plain JSON-able dicts.

Each page renders one of these dicts and the JSON API returns the same dict, so what a person
sees and what a script reads never drift apart. A run's data is its read view
(:func:`ragmeter.read.read_run` → :meth:`RunView.to_dict <ragmeter.read.view.RunView.to_dict>`,
the one JSON ``show --json`` prints too); this module only picks the page's rows from it,
filters them and exports what is shown (issue 25.1).

A run view keeps no chunk text: a 2,000-question run with 1 KB chunks holds 20 MB of it,
and only an expanded question (or a page of the side-by-side view) shows any.
:func:`with_texts` reads the texts of the questions shown from the store (issue 15.5).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.compare.health import HealthThresholds
from ragmeter.gold.goldset import GoldSet
from ragmeter.read.questions import (
    clean,
    hit_curve,
    latency_histogram,
    metric_order,
    with_texts,
)
from ragmeter.read.view import judged_dict, judged_fields, read_run
from ragmeter.store import Store

__all__ = [
    "clean",
    "export_rows",
    "hit_curve",
    "judged_view",
    "latency_histogram",
    "metric_order",
    "question_rows",
    "run_view",
    "shown_questions",
    "with_texts",
]


def run_view(
    store: Store,
    ref: int | str,
    thresholds: HealthThresholds | None = None,
    *,
    gold: GoldSet | None = None,
) -> dict[str, Any]:
    """The run page's data: :meth:`RunView.to_dict <ragmeter.read.view.RunView.to_dict>`
    without chunk texts (see :func:`with_texts`). The dashboard builds the same dict in
    parts, the questions only when asked for (``web/cache.py``).

    >>> import ragmeter
    >>> store = Store.memory()
    >>> gold = ragmeter.GoldSet.from_records([{"id": "q1", "question": "refunds?",
    ...     "relevant": [{"doc": "refunds.md"}]}])
    >>> _ = ragmeter.evaluate(gold, lambda q, k: [{"doc": "faq.md"}, {"doc": "refunds.md"}],
    ...                       store=store, name="a", commit="")
    >>> run_view(store, "a")["hit_curve"][:2]
    [0.0, 1.0]
    """
    return read_run(store, ref, thresholds=thresholds, gold=gold).to_dict()


def judged_view(store: Store, run_id: int) -> dict[str, Any]:
    """The run's judge metrics as :meth:`RunView.to_dict` has them, read now: a label made
    since the run was read changes them (issue 17.2)."""
    judged, failure = judged_fields(store, run_id)
    return judged_dict(judged, None if failure is None else str(failure))


def question_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The run page's question table: one small row per question (details come from the API).

    >>> question_rows({"questions": [{"id": "q1", "question": "?", "tags": [], "expected": [],
    ...     "hit": True, "error": None, "first_relevant_rank": 1, "latency_ms": 2.0,
    ...     "blame": None, "retrieved": [{"doc": "a.md"}]}]})[0]["got"]
    []
    """
    rows = []
    for q in data["questions"]:
        row = {key: q[key] for key in _ROW_KEYS}
        row["got"] = _got(q["hit"], q["error"], q["retrieved"])
        rows.append(row)
    return rows


_ROW_KEYS = ("id", "question", "tags", "expected", "hit", "error", "first_relevant_rank",
             "latency_ms", "blame")  # fmt: skip


def _got(hit: bool, error: str | None, retrieved: Sequence[Mapping[str, Any]]) -> list[str]:
    # What came back, for the misses list and the search box; only for misses (size).
    missed = not hit and error is None
    return list(dict.fromkeys(h["doc"] for h in retrieved)) if missed else []


#: Sort keys of the run page's question table (``-key`` sorts descending).
QUESTION_SORTS = {"id": "id", "rank": "first_relevant_rank", "latency": "latency_ms"}
#: Columns of the question table's CSV/JSON export, in order.
EXPORT_COLUMNS = ("id", "question", "tags", "hit", "first_relevant_rank", "latency_ms",
                  "blame", "error")  # fmt: skip


def shown_questions(
    rows: Sequence[Mapping[str, Any]],
    *,
    tag: str = "",
    q: str = "",
    misses: bool = False,
    sort: str = "",
) -> list[Mapping[str, Any]]:
    """The question rows the run page shows for these URL parameters, in its order.

    The page's script applies the same rules (``app.js``: ``shownQuestions``): a tag, a
    case-insensitive search over id, question, expected and retrieved documents, misses only
    (not found, not an error), and a sort (``rank``, ``-latency``; ``None`` sorts last).

    >>> rows = [{"id": "a", "question": "x", "tags": ["t"], "expected": [], "got": [],
    ...          "hit": True, "error": None, "first_relevant_rank": 3, "latency_ms": 1.0},
    ...         {"id": "b", "question": "y", "tags": [], "expected": [], "got": [],
    ...          "hit": False, "error": None, "first_relevant_rank": None, "latency_ms": 2.0}]
    >>> [r["id"] for r in shown_questions(rows, sort="-latency")], len(shown_questions(rows, tag="t"))
    (['b', 'a'], 1)
    """
    text = q.strip().lower()

    def keep(row: Mapping[str, Any]) -> bool:
        if tag and tag not in row["tags"]:
            return False
        if misses and (row["hit"] or row["error"]):
            return False
        if text:
            haystack = " ".join([row["id"], row["question"], *row["expected"], *row["got"]])
            return text in haystack.lower()
        return True

    kept = [row for row in rows if keep(row)]
    field = QUESTION_SORTS.get(sort.lstrip("-"))
    if field is None:
        return kept

    def key(row: Mapping[str, Any]) -> Any:
        value = row[field]
        return math.inf if value is None else value

    return sorted(kept, key=key, reverse=sort.startswith("-"))


def export_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The export's records: ``EXPORT_COLUMNS`` of each shown row, tags joined by spaces."""
    return [
        {col: " ".join(row["tags"]) if col == "tags" else row[col] for col in EXPORT_COLUMNS}
        for row in rows
    ]
