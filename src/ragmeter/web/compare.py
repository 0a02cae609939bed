"""Side by side: two runs question by question, and up to five runs for one question or tag.

The data of ``/compare`` (and ``/api/compare``), ``/question`` and ``/tag``: the read
side's :mod:`ragmeter.read.side_by_side` over the cached run views (``cache.RunViewCache``),
so the chunks, relevance marks and ranks are exactly those of each run's own page. This
module picks the runs from the cache, parses ``?runs=`` and lays the shown questions out
as CSV lines; it computes nothing (issue 25.1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.compare.health import HealthThresholds
from ragmeter.errors import InputError
from ragmeter.read import side_by_side
from ragmeter.read.side_by_side import COMPARE_PAGE_SIZE
from ragmeter.store import Store
from ragmeter.web.cache import RunViewCache

__all__ = [
    "COMPARE_PAGE_SIZE",
    "EXPORT_COLUMNS",
    "MAX_RUNS",
    "compare_rows",
    "compare_view",
    "export_records",
    "parse_runs",
    "question_across",
    "tag_across",
]

#: Runs at most in the multi-run views: more columns than this do not fit a screen.
MAX_RUNS = 5
#: Columns of the side-by-side CSV: one line per question and rank, A's chunk beside B's.
EXPORT_COLUMNS = ("id", "question", "tags", "rank_a", "rank_b", "change", "rank",
                  "a_doc", "a_chunk", "a_score", "a_mark", "a_text",
                  "b_doc", "b_chunk", "b_score", "b_mark", "b_text")  # fmt: skip


def compare_rows(
    cache: RunViewCache,
    store: Store,
    a: int | str,
    b: int | str,
    thresholds: HealthThresholds | None = None,
    *,
    changed: bool = False,
    tag: str = "",
) -> list[dict[str, Any]]:
    """Every question the side-by-side view shows for these filters (all pages), in order."""
    data_a, data_b = cache.data(store, a, thresholds), cache.data(store, b, thresholds)
    return side_by_side.compare_rows(store, data_a, data_b, changed=changed, tag=tag)


def compare_view(
    cache: RunViewCache,
    store: Store,
    a: int | str,
    b: int | str,
    thresholds: HealthThresholds | None = None,
    *,
    changed: bool = False,
    tag: str = "",
    page: int = 1,
    size: int = COMPARE_PAGE_SIZE,
) -> dict[str, Any]:
    """Run A and run B question by question (:func:`ragmeter.read.side_by_side.compare_page`).

    >>> import ragmeter
    >>> store = Store.memory()
    >>> gold = ragmeter.GoldSet.from_records([{"id": "q1", "question": "refunds?",
    ...     "relevant": [{"doc": "refunds.md"}]}])
    >>> for name, docs in (("a", ["faq.md", "refunds.md"]), ("b", ["refunds.md"])):
    ...     _ = ragmeter.evaluate(gold, lambda q, k, d=docs: [{"doc": x} for x in d],
    ...                           store=store, name=name, commit="")
    >>> q = compare_view(RunViewCache(), store, "a", "b", changed=True)["questions"][0]
    >>> q["rank_a"], q["rank_b"], q["change"], [h["doc"] for h in q["b"]]
    (2, 1, 'better', ['refunds.md'])
    """
    data_a, data_b = cache.data(store, a, thresholds), cache.data(store, b, thresholds)
    return side_by_side.compare_page(
        store, data_a, data_b, changed=changed, tag=tag, page=page, size=size
    )


def export_records(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The CSV lines of shown questions: one per rank, A's chunk beside B's (``EXPORT_COLUMNS``).

    A question with no chunk on either side is one line with the chunk columns empty.

    >>> row = {"id": "q1", "question": "?", "tags": ["t"], "rank_a": None, "rank_b": 1,
    ...        "change": "found", "a": [], "b": [{"rank": 1, "id": "d#0", "doc": "d",
    ...        "score": 2.0, "mark": "gold", "text": "x"}]}
    >>> [(r["rank"], r["a_doc"], r["b_doc"]) for r in export_records([row])]
    [(1, '', 'd')]
    """
    out: list[dict[str, Any]] = []
    for row in rows:
        depth = max(len(row["a"]), len(row["b"]), 1)
        for i in range(depth):
            line: dict[str, Any] = {
                "id": row["id"],
                "question": row["question"],
                "tags": " ".join(row["tags"]),
                "rank_a": row["rank_a"],
                "rank_b": row["rank_b"],
                "change": row["change"],
                "rank": i + 1 if i < max(len(row["a"]), len(row["b"])) else "",
            }
            for side in ("a", "b"):
                hit = row[side][i] if i < len(row[side]) else {}
                for key, field in (("doc", "doc"), ("chunk", "id"), ("score", "score"),
                                   ("mark", "mark"), ("text", "text")):  # fmt: skip
                    value = hit.get(field)
                    line[f"{side}_{key}"] = "" if value is None else value
            out.append(line)
    return out


def parse_runs(runs: str) -> list[str]:
    """The run references of ``?runs=1,2,3`` (deduplicated, in order); at most ``MAX_RUNS``.

    >>> parse_runs("3, 1,3,latest")
    ['3', '1', 'latest']
    >>> parse_runs("1,2,3,4,5,6")
    Traceback (most recent call last):
    ...
    ragmeter.errors.InputError: at most 5 runs side by side, got 6 (1, 2, 3, 4, 5, 6): drop some from runs=
    """
    refs = list(dict.fromkeys(part.strip() for part in runs.split(",") if part.strip()))
    if not refs:
        raise InputError("runs= names no run: give run ids, names or latest, e.g. runs=1,2,3")
    if len(refs) > MAX_RUNS:
        raise InputError(
            f"at most {MAX_RUNS} runs side by side, got {len(refs)} ({', '.join(refs)}): "
            "drop some from runs="
        )
    return refs


def question_across(
    cache: RunViewCache,
    store: Store,
    refs: Sequence[str],
    item_id: str,
    thresholds: HealthThresholds | None = None,
) -> dict[str, Any]:
    """One question in up to ``MAX_RUNS`` runs (:func:`ragmeter.read.side_by_side.question_across`)."""
    datas = [cache.data(store, ref, thresholds) for ref in refs]
    return side_by_side.question_across(store, datas, item_id)


def tag_across(
    cache: RunViewCache,
    store: Store,
    refs: Sequence[str],
    tag: str,
    thresholds: HealthThresholds | None = None,
) -> dict[str, Any]:
    """One tag in up to ``MAX_RUNS`` runs (:func:`ragmeter.read.side_by_side.tag_across`)."""
    datas = [cache.data(store, ref, thresholds) for ref in refs]
    return side_by_side.tag_across(store, datas, tag)
