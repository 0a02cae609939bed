"""A run's questions as JSON-able dicts, and the small series the pages draw (issue 25.1).

The one place a question of a run becomes the dict that ``show --json``, ``/api/runs/N``
and the dashboard read. NaN (an undefined metric) becomes ``None`` here, because JSON has
no NaN. A question's chunks carry no ``text`` unless asked: a 2,000-question run with 1 KB
chunks holds 20 MB of it, and only an expanded question shows any (issue 15.5);
:func:`with_texts` reads the texts of the questions shown from the store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragmeter.evaluation.hit_text import stored_text

if TYPE_CHECKING:
    from ragmeter.evaluation.report import QuestionRow
    from ragmeter.store import Store

__all__ = [
    "MARK_GOLD",
    "MARK_JUDGE",
    "MARK_NONE",
    "clean",
    "failed_answer",
    "finite",
    "hit_curve",
    "latency_histogram",
    "metric_order",
    "question_dict",
    "relevance_grades",
    "with_texts",
    "without_text",
]

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


def finite(value: Any) -> Any:
    """``value``, or ``None`` for a non-finite float: :func:`clean` for one scalar.

    >>> finite(float("nan")) is None, finite(0.5)
    (True, 0.5)
    """
    return None if isinstance(value, float) and not math.isfinite(value) else value


def metric_order(names: Sequence[str], k: int = 10) -> list[str]:
    """Metric names in the runs table's order (``default_metrics``), then the rest sorted.

    >>> metric_order(["mrr", "zzz", "hit@5"])
    ['hit@5', 'mrr', 'zzz']
    """
    from ragmeter.evaluation.scoring import default_metrics  # numpy, pydantic: not for show

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

    >>> from ragmeter.store import Store
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


def without_text(hit: Mapping[str, Any]) -> dict[str, Any]:
    """A retrieved chunk's dict without its ``text``."""
    return {key: value for key, value in hit.items() if key != "text"}


def question_dict(
    row: QuestionRow,
    answer: str | None,
    per_query: Mapping[str, Mapping[str, float]],
    judged: Mapping[tuple[str, str], int],
    *,
    texts: bool = False,
) -> dict[str, Any]:
    """One question of a run: its report row, chunks marked (without their text unless
    ``texts``), verdict, blame and metric values. ``answer`` is the stored answer."""
    # Built already clean (no NaN), field by field: walking 2,000 questions with clean()
    # cost a quarter of the run page's server time (issue 15.5).
    retrieved = []
    for hit in row.retrieved:
        judge_grade = judged.get((row.id, str(hit["id"])), judged.get((row.id, str(hit["doc"]))))
        if hit["grade"] > 0:
            mark = MARK_GOLD
        elif judge_grade is not None and judge_grade > 0:
            mark = MARK_JUDGE
        else:
            mark = MARK_NONE
        entry = dict(hit) if texts else without_text(hit)
        if texts:
            entry["text"] = entry.get("text") or ""
        entry["score"] = finite(entry.get("score"))
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
        "latency_ms": finite(row.latency_ms),
        "error": row.error,
        "answer": row.answer if row.answer is not None else answer,
        "answer_ok": row.answer_ok,
        "faithful": row.faithful,
        "verdict": clean(dict(verdict)) if isinstance(verdict, Mapping) else None,
        "blame": row.blame,
        "generation_error": row.generation_error,
        "metrics": {
            name: finite(values[row.id]) for name, values in per_query.items() if row.id in values
        },
    }


def failed_answer(row: QuestionRow) -> dict[str, Any]:
    """A question whose answer failed (its check, or the judge), with where it went wrong.

    The static report and the run page list these beside the retrieval misses: a run whose
    failures are all on the generation side has no miss but has failed answers.
    """
    verdict = row.judge if isinstance(row.judge, Mapping) else {}
    return {
        "id": row.id,
        "question": row.question,
        "tags": list(row.tags),
        "expected": list(row.expected),
        "first_relevant_rank": row.first_relevant_rank,
        "hit": row.hit,
        "answer": row.answer,
        "answer_ok": row.answer_ok,
        "faithful": row.faithful,
        "blame": row.blame,
        "reason": verdict.get("reason"),
        "unsupported_claims": list(verdict.get("unsupported_claims") or []),
        "generation_error": row.generation_error,
    }


def with_texts(
    store: Store, run_id: int, questions: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Copies of ``questions`` (or misses) of run ``run_id`` whose chunks carry ``text`` again.

    The text is the one stored with the run (:func:`~ragmeter.evaluation.hit_text.stored_text`),
    read for these questions only; a chunk without one gets ``""``, as the report gives it.

    >>> from ragmeter.store import Store
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
