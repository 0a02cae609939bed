"""Runs side by side, as people read them (issue 25.1): two runs question by question, and
up to five runs for one question or one tag. The dashboard's ``/compare``, ``/question``
and ``/tag`` pages (and their ``/api/…``) render these dicts and compute nothing.

Each side is a run already read (:class:`RunRows`: the dashboard's cached
``web.cache.RunData``), so the chunks, relevance marks and ranks are exactly those of each
run's own page. Two runs at different levels or on different gold sets are shown next to
each other but never subtracted: no change per question and no "only changed" filter
(:func:`ragmeter.compare.comparable.not_comparable`; issue 15.2).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ragmeter.compare.comparable import not_comparable, rank_change
from ragmeter.errors import InputError
from ragmeter.read.questions import metric_order, with_texts
from ragmeter.run import RunInfo
from ragmeter.store import Store

__all__ = [
    "COMPARE_PAGE_SIZE",
    "RunRows",
    "compare_page",
    "compare_rows",
    "question_across",
    "tag_across",
]

#: Questions per page of the side-by-side view (each shows both runs' chunks).
COMPARE_PAGE_SIZE = 25
_CHUNK_KEYS = ("rank", "id", "doc", "score", "grade", "mark", "text")


class RunRows(Protocol):
    """A run read for a page: its id, ``summary`` (``RunView.summary()``), one small row per
    question (``rows``) and whole questions without chunk texts on demand."""

    id: int
    summary: dict[str, Any]
    rows: list[dict[str, Any]]

    def question(self, item_id: str) -> dict[str, Any] | None: ...

    def questions_of(self, item_ids: Sequence[str]) -> list[dict[str, Any]]: ...


def _chunks(question: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    if question is None:
        return []
    return [{key: hit.get(key) for key in _CHUNK_KEYS} for hit in question["retrieved"]]


def _pair(
    qa: Mapping[str, Any] | None, qb: Mapping[str, Any] | None, compared: bool
) -> dict[str, Any]:
    either = qb if qb is not None else qa
    assert either is not None  # one of the two runs asked it
    rank_a = qa["first_relevant_rank"] if qa is not None else None
    rank_b = qb["first_relevant_rank"] if qb is not None else None
    change = None
    if compared:
        change = rank_change(
            rank_a,
            rank_b,
            error_a=qa["error"] if qa is not None else None,
            error_b=qb["error"] if qb is not None else None,
            in_a=qa is not None,
            in_b=qb is not None,
        )
    return {
        "id": either["id"],
        "question": either["question"],
        "tags": list(either["tags"]),
        "expected": list(either["expected"]),
        "rank_a": rank_a,
        "rank_b": rank_b,
        "rank_delta": rank_b - rank_a if compared and rank_a and rank_b else None,
        "change": change,
        "error_a": qa["error"] if qa is not None else None,
        "error_b": qb["error"] if qb is not None else None,
    }


#: A side-by-side row's two question rows (either may be None): its chunks come from them.
_Sides = dict[str, tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]]


def _pairs(
    store: Store, data_a: RunRows, data_b: RunRows
) -> tuple[list[str], list[dict[str, Any]], _Sides]:
    # The pairs need each question's small row only (ranks, error, tags); whole questions,
    # with their chunks and texts, are built for the rows shown (issue 15.5).
    refused = not_comparable(store.get_run(data_a.id), store.get_run(data_b.id))
    by_id_b = {q["id"]: q for q in data_b.rows}
    ids_a = {q["id"] for q in data_a.rows}
    sides: _Sides = {q["id"]: (q, by_id_b.get(q["id"])) for q in data_a.rows}
    sides.update((q["id"], (None, q)) for q in data_b.rows if q["id"] not in ids_a)
    pairs = [_pair(qa, qb, not refused) for qa, qb in sides.values()]
    return refused, pairs, sides


def _with_chunks(
    store: Store, runs: tuple[RunRows, RunRows], shown: Sequence[dict[str, Any]], sides: _Sides
) -> list[dict[str, Any]]:
    """``shown`` rows with both runs' chunks (``a``, ``b``), texts read for these rows only:
    building and reading them for every question cost most of ``/compare`` (issue 15.5)."""
    texts = []
    for side, data in enumerate(runs):
        asked = [row["id"] for row in shown if sides[row["id"]][side] is not None]
        found = with_texts(store, data.id, data.questions_of(asked))
        texts.append({q["id"]: q for q in found})
    return [
        {**row, "a": _chunks(texts[0].get(row["id"])), "b": _chunks(texts[1].get(row["id"]))}
        for row in shown
    ]


def _filter(
    pairs: Sequence[dict[str, Any]], refused: Sequence[str], changed: bool, tag: str
) -> list[dict[str, Any]]:
    if changed and refused:
        raise InputError(
            f"'only changed questions' needs two runs that can be compared: {refused[0]}. "
            "Drop changed=1 to see both runs side by side."
        )
    return [
        p
        for p in pairs
        if (not tag or tag in p["tags"]) and (not changed or p["change"] not in ("same", None))
    ]


def compare_rows(
    store: Store, data_a: RunRows, data_b: RunRows, *, changed: bool = False, tag: str = ""
) -> list[dict[str, Any]]:
    """Every question the side-by-side view shows for these filters (all pages), in order."""
    refused, pairs, sides = _pairs(store, data_a, data_b)
    return _with_chunks(store, (data_a, data_b), _filter(pairs, refused, changed, tag), sides)


def _run_summary(view: Mapping[str, Any], gold_names: Mapping[str, str]) -> dict[str, Any]:
    run = dict(view["run"])
    run["gold_name"] = gold_names.get(run["gold_hash"], "")
    return run


def compare_page(
    store: Store,
    data_a: RunRows,
    data_b: RunRows,
    *,
    changed: bool = False,
    tag: str = "",
    page: int = 1,
    size: int = COMPARE_PAGE_SIZE,
) -> dict[str, Any]:
    """Run A and run B question by question: both rankings, first relevant ranks, the change.

    ``changed`` keeps the questions whose first relevant rank moved (or that failed, or were
    asked in one run only); ``tag`` those with that tag; ``page`` picks ``size`` of them.
    ``not_compared`` gives the reasons the runs may not be subtracted (then ``change`` is
    ``None`` everywhere and ``changed=True`` is an ``InputError``).
    """
    refused, pairs, sides = _pairs(store, data_a, data_b)
    view_a, view_b = data_a.summary, data_b.summary
    shown = _filter(pairs, refused, changed, tag)
    pages = max(1, math.ceil(len(shown) / size))
    page = min(max(1, page), pages)
    counts: dict[str, int] = {}
    for p in pairs:
        if p["change"] is not None:
            counts[p["change"]] = counts.get(p["change"], 0) + 1
    gold_names = store.gold_names()
    warnings = []
    if view_a["run"]["k"] != view_b["run"]["k"]:
        warnings.append(f"the runs used different k ({view_a['run']['k']} vs {view_b['run']['k']})")
    return {
        "a": _run_summary(view_a, gold_names),
        "b": _run_summary(view_b, gold_names),
        "not_compared": refused,
        "warnings": warnings,
        "filters": {"changed": changed, "tag": tag},
        "tags": sorted({t for p in pairs for t in p["tags"]}),
        "n_questions": len(pairs),
        "n_changed": sum(n for change, n in counts.items() if change != "same"),
        "changes": counts,
        "n_shown": len(shown),
        "page": page,
        "pages": pages,
        "page_size": size,
        "questions": _with_chunks(
            store, (data_a, data_b), shown[(page - 1) * size : page * size], sides
        ),  # fmt: skip
    }


def _level_notes(store: Store, datas: Sequence[RunRows]) -> list[list[str]]:
    """Per run, why its numbers do not compare with the first run's (empty: they do)."""
    infos: list[RunInfo] = [store.get_run(data.id) for data in datas]
    return [not_comparable(infos[0], info) for info in infos]


def question_across(store: Store, datas: Sequence[RunRows], item_id: str) -> dict[str, Any]:
    """One question in up to five runs: each run's chunks, first relevant rank, metrics.

    A run that did not ask the question has ``question: None``; ``not_compared`` says, per
    run, why its numbers do not compare with the first run's.
    """
    views = [data.summary for data in datas]
    found = [data.question(item_id) for data in datas]
    asked = next((q for q in found if q is not None), None)
    if asked is None:
        names = ", ".join(str(v["run"]["id"]) for v in views)
        raise InputError(f"no question {item_id!r} in runs {names}")
    gold_names = store.gold_names()
    columns: list[dict[str, Any]] = []
    for view, question, reasons in zip(views, found, _level_notes(store, datas), strict=True):
        entry: dict[str, Any] | None = None
        if question is not None:
            entry = {key: question[key] for key in ("first_relevant_rank", "hit", "error",
                     "latency_ms", "answer", "blame", "metrics")}  # fmt: skip
            entry["chunks"] = _chunks(with_texts(store, view["run"]["id"], [question])[0])
        columns.append({"run": _run_summary(view, gold_names), "not_compared": reasons,
                        "question": entry})  # fmt: skip
    metrics = metric_order([m for c in columns if c["question"] for m in c["question"]["metrics"]])
    return {
        "id": item_id,
        "question": asked["question"],
        "tags": list(asked["tags"]),
        "expected": list(asked["expected"]),
        "metrics": metrics,
        "runs": columns,
    }


def tag_across(store: Store, datas: Sequence[RunRows], tag: str) -> dict[str, Any]:
    """One tag in up to five runs: each run's per-question metric means over the tag.

    Every question with the tag stays in the mean (an error row scores 0, as in the run's
    own metrics); a metric some tagged question lacks has no mean (``None``), never a mean
    over the others.
    """
    gold_names = store.gold_names()
    columns: list[dict[str, Any]] = []
    names: list[str] = []
    for data, reasons in zip(datas, _level_notes(store, datas), strict=True):
        view = data.summary
        tagged = data.questions_of([r["id"] for r in data.rows if tag in r["tags"]])
        have = sorted({m for q in tagged for m in q["metrics"]})
        means: dict[str, float | None] = {}
        for m in have:
            values = [float(q["metrics"][m]) for q in tagged if q["metrics"].get(m) is not None]
            means[m] = sum(values) / len(values) if values and len(values) == len(tagged) else None
        names += have
        misses = sum(1 for q in tagged if not q["hit"] and q["error"] is None)
        columns.append({"run": _run_summary(view, gold_names), "not_compared": reasons,
                        "n": len(tagged), "misses": misses,
                        "errors": sum(1 for q in tagged if q["error"]), "metrics": means})  # fmt: skip
    if not any(c["n"] for c in columns):
        refs = ", ".join(str(data.summary["run"]["id"]) for data in datas)
        raise InputError(f"no question has tag {tag!r} in runs {refs}")
    return {"tag": tag, "metrics": metric_order(names), "runs": columns}
