"""The data behind every dashboard page, as plain JSON-able dicts.

Each page renders one of these dicts and the JSON API returns the same dict, so
what a person sees and what a script reads never drift apart. Everything comes
from the library (``Store``, ``build_report``, ``diagnose``); this
module only reshapes it. NaN (an undefined metric) becomes ``None`` here, because
JSON has no NaN.

A run view keeps no chunk text: a 2,000-question run with 1 KB chunks holds 20 MB of it,
and only an expanded question (or a page of the side-by-side view) shows any.
:func:`with_texts` reads the texts of the questions shown from the store (issue 15.5).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, cast

from ragmeter.compare.health import (
    HealthThresholds,
    diagnose,
    precision_ceiling,
    report_health_lines,
)
from ragmeter.compare.judged import corrected_metrics
from ragmeter.errors import RagmeterError
from ragmeter.evaluation.hit_text import stored_text
from ragmeter.evaluation.report import QuestionRow, RunReport, build_report
from ragmeter.evaluation.scoring import default_metrics
from ragmeter.gold.goldset import GoldSet
from ragmeter.store import Store

__all__ = [
    "clean",
    "export_rows",
    "judged_view",
    "hit_curve",
    "latency_histogram",
    "metric_order",
    "page_row",
    "question_rows",
    "question_view",
    "relevance_grades",
    "run_summary",
    "run_view",
    "shown_questions",
    "with_texts",
]

# Which metrics are better when lower is ragmeter.compare.comparison.lower_is_better, the
# one definition the CLI, the gate, the static report and every page use.
HISTOGRAM_BINS = 20
#: Relevance marks of a retrieved chunk: the gold set says so, a judge says so, or neither.
MARK_GOLD, MARK_JUDGE, MARK_NONE = "gold", "judge", "none"


def clean(value: Any) -> Any:
    """A copy of ``value`` with every non-finite float replaced by ``None``.

    >>> clean({"a": float("nan"), "b": [1.5, float("inf")]})
    {'a': None, 'b': [1.5, None]}
    """
    kind = type(value)
    # Exact type checks: this walks every value of a 2,000-question run, and most values are
    # plain strings, ints or None, which must not reach the (slow) abstract Mapping check.
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is dict:
        return {key: clean(item) for key, item in value.items()}
    if kind is list or kind is tuple:
        return [clean(item) for item in value]
    if isinstance(value, Mapping):
        return {key: clean(item) for key, item in value.items()}
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value


def _clean_dict(value: dict[str, Any]) -> dict[str, Any]:
    return cast(dict[str, Any], clean(value))


def _finite(value: Any) -> Any:
    """``value``, or ``None`` for a non-finite float: :func:`clean` for one scalar."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def metric_order(names: Sequence[str], k: int = 10) -> list[str]:
    """Metric names in the runs table's order (``default_metrics``), then the rest sorted.

    >>> metric_order(["mrr", "zzz", "hit@5"])
    ['hit@5', 'mrr', 'zzz']
    """
    rank = {name: i for i, name in enumerate(default_metrics(k, has_answers=True))}
    return sorted(set(names), key=lambda name: (rank.get(name, len(rank)), name))


def hit_curve(ranks: Sequence[int | None], k: int) -> list[float]:
    """hit@k for k = 1..K from each question's first relevant rank (``None``: not found).

    Every question stays in the denominator, as in the stored ``hit@k``.

    >>> hit_curve([1, 3, None, 2], 3)
    [0.25, 0.5, 0.75]
    """
    n = len(ranks)
    if n == 0:
        return [0.0] * k
    return [sum(1 for r in ranks if r is not None and r <= cut) / n for cut in range(1, k + 1)]


def latency_histogram(latencies: Sequence[float], bins: int = HISTOGRAM_BINS) -> dict[str, Any]:
    """Equal-width bins over the observed latencies: ``{"edges": [...], "counts": [...]}``.

    >>> latency_histogram([1.0, 2.0, 3.0], bins=2)
    {'edges': [1.0, 2.0, 3.0], 'counts': [1, 2]}
    """
    values = [v for v in latencies if math.isfinite(v)]
    if not values:
        return {"edges": [], "counts": []}
    low, high = min(values), max(values)
    width = (high - low) / bins if high > low else 1.0
    counts = [0] * bins
    for v in values:
        counts[min(int((v - low) / width), bins - 1)] += 1
    return {"edges": [low + i * width for i in range(bins + 1)], "counts": counts}


def relevance_grades(store: Store, run_id: int) -> dict[tuple[str, str], int]:
    """``(item id, chunk id or doc) -> grade`` from the relevance judge of a run (may be empty).

    >>> relevance_grades(Store.memory(), 1)
    {}
    """
    found = getattr(store, "judge_verdicts", None)
    if found is None:
        return {}
    grades: dict[tuple[str, str], int] = {}
    for (item_id, target), entry in found(run_id, "relevance").items():
        verdict = entry.get("verdict")
        if isinstance(verdict, Mapping) and isinstance(verdict.get("grade"), int | float):
            grades[(item_id, str(target))] = int(verdict["grade"])
    return grades


def question_view(
    row: Any,
    result: Any,
    per_query: Mapping[str, Mapping[str, float]],
    judged: Mapping[tuple[str, str], int],
) -> dict[str, Any]:
    """One question of a run view, from its report row (chunks without their text)."""
    # Blame and the faithfulness verdict live on the report's row (the judge tables), not in
    # the result's extra: reading extra showed "verdict: null" for every question.
    # Built already clean (no NaN), field by field: walking 2,000 questions with clean()
    # cost a quarter of the run page's server time (issue 15.5). The chunk text stays out.
    retrieved = []
    for hit in row.retrieved:
        judge_grade = judged.get((row.id, str(hit["id"])), judged.get((row.id, str(hit["doc"]))))
        if hit["grade"] > 0:
            mark = MARK_GOLD
        elif judge_grade is not None and judge_grade > 0:
            mark = MARK_JUDGE
        else:
            mark = MARK_NONE
        entry = _without_text(hit)
        entry["score"] = _finite(entry.get("score"))
        entry["judge_grade"] = judge_grade
        entry["mark"] = mark
        retrieved.append(entry)
    verdict = row.judge
    return {
        "id": row.id,
        "question": row.question,
        "tags": list(row.tags),
        "expected": list(row.expected),
        "gold": clean(row.gold),
        "retrieved": retrieved,
        "first_relevant_rank": row.first_relevant_rank,
        "hit": row.hit,
        "latency_ms": _finite(row.latency_ms),
        "error": row.error,
        "answer": row.answer if row.answer is not None else getattr(result, "answer", None),
        "answer_ok": row.answer_ok,
        "faithful": row.faithful,
        "verdict": clean(dict(verdict)) if isinstance(verdict, Mapping) else None,
        "blame": row.blame,
        "generation_error": row.generation_error,
        "metrics": {
            name: _finite(values[row.id]) for name, values in per_query.items() if row.id in values
        },
    }


def _without_text(hit: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in hit.items() if key != "text"}


def with_texts(
    store: Store, run_id: int, questions: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Copies of ``questions`` (or misses) of run ``run_id`` whose chunks carry ``text`` again.

    The text is the one stored with the run (:func:`~ragmeter.evaluation.hit_text.stored_text`),
    read for these questions only; a chunk without one gets ``""``, as the report gives it.

    >>> with_texts(Store.memory(), 1, [])
    []
    """
    extras = store.result_extras(run_id, [str(q["id"]) for q in questions])
    out = []
    for question in questions:
        extra = extras.get(str(question["id"]), {})
        retrieved = [
            {**hit, "text": stored_text(extra, int(hit["rank"]))[0]}
            for hit in question["retrieved"]
        ]
        out.append({**question, "retrieved": retrieved})
    return out


def run_view(
    store: Store,
    ref: int | str,
    thresholds: HealthThresholds | None = None,
    *,
    gold: GoldSet | None = None,
) -> dict[str, Any]:
    """The run page: metrics, health, charts' data, misses by tag and doc, every question.

    Chunks carry no ``text`` (see :func:`with_texts`). ``gold`` saves reading the run's gold
    set. The dashboard builds the same dict in parts, the questions only when asked for
    (``web/cache.py``).

    >>> import ragmeter
    >>> store = Store.memory()
    >>> gold = ragmeter.GoldSet.from_records([{"id": "q1", "question": "refunds?",
    ...     "relevant": [{"doc": "refunds.md"}]}])
    >>> _ = ragmeter.evaluate(gold, lambda q, k: [{"doc": "faq.md"}, {"doc": "refunds.md"}],
    ...                       store=store, name="a", commit="")
    >>> run_view(store, "a")["hit_curve"][:2]
    [0.0, 1.0]
    """
    report = build_report(store, ref, gold=gold)
    judged = relevance_grades(store, report.run.id)
    questions = [
        question_view(row, report.results.get(row.id), report.per_query, judged)
        for row in report.rows
    ]
    return {**run_summary(store, report, thresholds), "questions": questions}


def run_summary(
    store: Store, report: RunReport, thresholds: HealthThresholds | None = None
) -> dict[str, Any]:
    """:func:`run_view` without its ``questions``: what the run page renders on the server."""
    t = thresholds or HealthThresholds()
    ceiling = None
    if report.run.level == "doc":
        ceiling = precision_ceiling(len(row.expected) for row in report.rows)
    health = diagnose(report.metrics, t, precision_ceiling=ceiling)
    latencies = [row.latency_ms for row in report.rows if row.latency_ms is not None]
    summary = report.to_dict()
    misses = [{**m, "retrieved": [_without_text(h) for h in m["retrieved"]]}
              for m in summary["misses"]]  # fmt: skip
    return _clean_dict(
        {
            "run": report.run.to_dict(),
            "metrics": {name: report.metrics[name] for name in metric_order(list(report.metrics))},
            "health": health.to_dict(),
            "health_lines": report_health_lines(report, t),
            "hit_rate": report.hit_rate,
            "n_questions": report.n_questions,
            "n_errors": report.n_errors,
            "hit_curve": hit_curve([row.first_relevant_rank for row in report.rows], report.run.k),
            "latency_histogram": latency_histogram(latencies),
            "tags": sorted({tag for row in report.rows for tag in row.tags}),
            "misses": misses,
            "misses_by_tag": summary["misses_by_tag"],
            "misses_by_doc": summary["misses_by_doc"],
            "errors": summary["errors"],
            "blame": summary["blame"],
            "blame_by_tag": summary["blame_by_tag"],
            "judges": sorted(summary["judges"]),
            "explanation": explanation_view(store, report.run.id),
            **judged_view(store, report.run.id),
        }
    )


def explanation_view(store: Store, run_id: int) -> dict[str, Any] | None:
    """What ``ragmeter explain`` stored for the run (issue 28): knobs and each miss's why."""
    from ragmeter.evaluation.explain import stored_explanation

    explanation = stored_explanation(store, run_id)
    return explanation.to_dict() if explanation is not None else None


def _label_how(metric: str) -> str:
    """The command that exports a random sample for people to label, per judge metric
    (faithfulness is labelled on the label page instead).

    >>> _label_how("hallucination")
    'ragmeter judge claim-labels export RUN --sample 30 --out claims.yaml'
    """
    from ragmeter.metrics.claims import CLAIM_METRICS

    if metric == "faithful":
        return ""
    if metric in CLAIM_METRICS:
        return "ragmeter judge claim-labels export RUN --sample 30 --out claims.yaml"
    return "ragmeter judge relevance-labels export RUN --sample 30 --out grades.yaml"


def judged_view(store: Store, run_id: int) -> dict[str, Any]:
    """The run's judge metrics, each corrected by people's labels with its interval or
    marked uncalibrated (issue 17.2): ``judged`` lists them all; ``faithful_judged`` is
    faithfulness alone (None when no judge rated the run's answers). People's labels that
    no longer fit the run's verdicts (re-judged since) correct nothing: ``judged_error``
    says why, and the rest of the page is unaffected."""
    try:
        corrected = corrected_metrics(store, run_id)
    except RagmeterError as error:  # stale labels: the page still shows the run, and why
        return {"judged": [], "faithful_judged": None, "judged_error": str(error)}
    judged = [
        {**mean.to_dict(), "metric": metric, "line": mean.describe(), "how": _label_how(metric)}
        for metric, mean in corrected.items()
    ]
    faithful = next((entry for entry in judged if entry["metric"] == "faithful"), None)
    return {"judged": judged, "faithful_judged": faithful, "judged_error": None}


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


def page_row(row: QuestionRow) -> dict[str, Any]:
    """:func:`question_rows`' row of one question, straight from its report row: the run page
    needs no full question to draw its table (issue 15.5)."""
    return {
        "id": row.id,
        "question": row.question,
        "tags": list(row.tags),
        "expected": list(row.expected),
        "hit": row.hit,
        "error": row.error,
        "first_relevant_rank": row.first_relevant_rank,
        "latency_ms": _finite(row.latency_ms),
        "blame": row.blame,
        "got": _got(row.hit, row.error, row.retrieved),
    }


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


def find_question(data: dict[str, Any], item_id: str) -> dict[str, Any] | None:
    """One question of a run view, with everything the expanded row shows (None: no such)."""
    for question in data["questions"]:
        if question["id"] == item_id:
            return cast(dict[str, Any], question)
    return None


def filter_questions(
    data: dict[str, Any], *, tag: str | None = None, misses_only: bool = False
) -> dict[str, Any]:
    """A run view keeping only the questions (and misses) with ``tag`` / that missed.

    >>> view = {"questions": [{"tags": ["a"], "hit": True}, {"tags": ["b"], "hit": False}],
    ...         "misses": [{"tags": ["b"]}]}
    >>> len(filter_questions(view, tag="a")["questions"]), filter_questions(view, tag="a")["misses"]
    (1, [])
    """
    if tag is None and not misses_only:
        return data
    out = dict(data)
    keep = [q for q in data["questions"] if (tag is None or tag in q["tags"])]
    out["questions"] = [q for q in keep if not (misses_only and q["hit"])]
    out["misses"] = [m for m in data["misses"] if tag is None or tag in m["tags"]]
    return out
