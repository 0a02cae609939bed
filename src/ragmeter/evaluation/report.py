"""A run, read back: metrics, per-question rows, and the misses by cluster.

Misses are the product: every question with no relevant item in the top k,
grouped by tag (each tag's hit rate beside the overall one, so clusters stand
out) and by expected document (a badly chunked document shows up as many
misses pointing at it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ragmeter.evaluation.blame import Blame, blame, claim_blame
from ragmeter.evaluation.hit_text import stored_text
from ragmeter.evaluation.summary import covered, first_relevant_rank, relevant_in_context
from ragmeter.evaluation.tallies import TagSummary, Tallies, tally
from ragmeter.run import QuestionResult, RunInfo

if TYPE_CHECKING:
    from ragmeter.evaluation.scoring import Judgments
    from ragmeter.gold.goldset import GoldSet
    from ragmeter.store import Store

__all__ = [
    "Miss",
    "QuestionRow",
    "RunReport",
    "TagSummary",
    "build_report",
    "finalize_run",
    "gold_fields",
    "miss_of",
    "refine_blame",
    "report_of",
    "retrieved_entries",
    "with_answer",
]

MISS_TOP = 3
#: Called with every ``QuestionRow`` and ``Miss`` built: an injection point for tests that
#: count the rows a read builds (issue 29.1).
ROW_OBSERVERS: list[Callable[[QuestionRow | Miss], None]] = []


@dataclass(frozen=True)
class QuestionRow:
    """One question of a run: what came back and whether it counted."""

    id: str
    question: str
    tags: list[str]
    expected: list[str]
    retrieved: list[dict[str, Any]]
    first_relevant_rank: int | None
    hit: bool
    latency_ms: float | None
    error: str | None
    answer: str | None = None
    answer_ok: bool | None = None
    faithful: bool | None = None
    blame: Blame | None = None
    generation_error: str | None = None
    judge: dict[str, Any] | None = None  # the faithfulness verdict, when one exists
    # The gold entries: {"doc", "quote", "chunk", "grade"} as the gold set gives them.
    gold: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        _built(self)


@dataclass(frozen=True)
class Miss:
    """A question with no relevant item in the top k."""

    id: str
    question: str
    tags: list[str]
    expected: list[str]
    retrieved: list[dict[str, Any]]
    first_relevant_rank: int | None

    def __post_init__(self) -> None:
        _built(self)


def _built(row: QuestionRow | Miss) -> None:
    for observe in ROW_OBSERVERS:
        observe(row)


@dataclass(frozen=True)
class RunReport:
    """Everything ``ragmeter show`` prints about a run."""

    run: RunInfo
    metrics: dict[str, float]
    per_query: Mapping[str, dict[str, float]]
    # Lists, or in a brief report sequences built when read (issue 29.1).
    rows: Sequence[QuestionRow]
    misses: Sequence[Miss]
    by_tag: list[TagSummary]
    by_doc: list[tuple[str, int]]
    errors: Sequence[QuestionRow]
    hit_rate: float
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # informational, said once (not ⚠)
    dumb_checks: tuple[int, int] | None = None  # (passed, checked): "dumb checks 37/41"
    blame: dict[str, int] = field(default_factory=dict)  # retrieval / generation / ok
    blame_by_tag: dict[str, dict[str, int]] = field(default_factory=dict)
    judged: dict[str, Any] = field(default_factory=dict)  # covered@k label coverage, sources
    judges: dict[str, Any] = field(default_factory=dict)  # judge runs: config, usage, calibration
    # The stored rows the report was built from (item id -> result), for views that need
    # more than the rows spell out; not part of to_dict().
    results: Mapping[str, QuestionResult] = field(default_factory=dict, repr=False)

    @property
    def n_questions(self) -> int:
        return len(self.rows)

    @property
    def n_errors(self) -> int:
        return len(self.errors)

    @property
    def id(self) -> int:
        return self.run.id

    def question_metrics(self, item_id: str) -> dict[str, float]:
        """One question's metric values (``per_query`` is keyed by metric, then question)."""
        return {
            name: values[item_id] for name, values in self.per_query.items() if item_id in values
        }

    def to_pandas(self) -> Any:
        """One DataFrame row per question: the columns of ``ragmeter export --format csv``.

        pandas is optional and imported here (``pip install pandas``).

        >>> report.to_pandas()[["id", "hit", "ndcg@10"]]  # doctest: +SKIP
        """
        try:
            import pandas as pd
        except ImportError:
            from ragmeter.errors import ConfigError

            raise ConfigError("RunReport.to_pandas() needs pandas: pip install pandas") from None
        from ragmeter.evaluation.rows import BASE_COLUMNS, export_rows, flat_row, metric_columns

        rows = export_rows(self)
        columns = metric_columns(rows)
        return pd.DataFrame(
            [flat_row(row, columns) for row in rows], columns=[*BASE_COLUMNS, *columns]
        )

    def to_dict(self, *, rows: bool = False) -> dict[str, Any]:
        """A JSON-able dict: ``{"run", "metrics", "n_questions", "n_errors", "misses", …}``."""
        out: dict[str, Any] = {
            "run": {
                "id": self.run.id,
                "name": self.run.name,
                "note": self.run.note,
                "created": self.run.created,
                "commit": self.run.commit,
                "retriever": self.run.retriever,
                "k": self.run.k,
                "level": self.run.level,
                "status": self.run.status,
                "gold_hash": self.run.gold_hash,
                "versions": dict(self.run.config.get("versions") or {}),
            },
            "metrics": self.metrics,
            "n_questions": self.n_questions,
            "n_errors": self.n_errors,
            "hit_rate": self.hit_rate,
            "misses": [asdict(m) for m in self.misses],
            "misses_by_tag": [asdict(t) for t in self.by_tag],
            "misses_by_doc": [{"doc": d, "misses": n} for d, n in self.by_doc],
            "errors": [{"id": e.id, "question": e.question, "error": e.error} for e in self.errors],
            "warnings": self.warnings,
            "notes": self.notes,
            "dumb_checks": list(self.dumb_checks) if self.dumb_checks else None,
            "blame": self.blame,
            "blame_by_tag": self.blame_by_tag,
            "judged": self.judged,
            "judges": self.judges,
        }
        if rows:
            # Each question carries its own metric values (issue 18.2), as exports do.
            out["questions"] = [
                asdict(r) | {"metrics": self.question_metrics(r.id)} for r in self.rows
            ]
        return out


def _row(
    item: Any, result: QuestionResult | None, k: int, level: str, keep: int | None = None
) -> QuestionRow:
    """One question's row; ``keep`` limits the retrieved entries spelled out (all by default)."""
    expected, gold = gold_fields(item)
    if result is None:
        return QuestionRow(item.id, item.question, list(item.tags), expected, [], None, False,
                           None, "not evaluated", gold=gold)  # fmt: skip
    grades = list(result.extra.get("grades") or [])
    retrieved = retrieved_entries(result, keep)
    first = first_relevant_rank(result.hits, grades, level)
    return QuestionRow(
        id=item.id,
        question=item.question,
        tags=list(item.tags),
        expected=expected,
        retrieved=retrieved,
        first_relevant_rank=first,
        hit=first is not None and first <= k,
        latency_ms=result.latency_ms,
        error=result.error,
        gold=gold,
    )


def retrieved_entries(result: QuestionResult, keep: int | None = None) -> list[dict[str, Any]]:
    """A row's ``retrieved``: the first ``keep`` hits (all by default) with their gold grade
    and the text kept with the run."""
    grades = result.extra.get("grades") or []
    out = []
    for rank, hit in enumerate(result.hits[:keep], start=1):
        text, source, cut = stored_text(result.extra, rank)
        out.append(
            {
                "rank": rank,
                "id": hit.id,
                "doc": hit.doc,
                "score": hit.score,
                "grade": grades[rank - 1] if rank - 1 < len(grades) else 0,
                "text": text,
                "text_source": source,
                "text_cut": cut,
            }
        )
    return out


def gold_fields(item: Any) -> tuple[list[str], list[dict[str, Any]]]:
    """A gold item's expected documents and its gold entries, as rows spell them out (a
    stored item, :mod:`ragmeter.gold.stored`, carries them already)."""
    stored: tuple[list[str], list[dict[str, Any]]] | None = getattr(item, "row_fields", None)
    if stored is not None:
        return list(stored[0]), list(stored[1])
    expected = list(dict.fromkeys(rel.doc_id for rel in item.relevant if rel.grade > 0))
    gold = [
        {"doc": rel.doc_id, "quote": rel.quote, "chunk": rel.chunk, "grade": rel.grade}
        for rel in item.relevant
    ]
    return expected, gold


def build_report(store: Store, run_ref: int | str, *, gold: GoldSet | None = None) -> RunReport:
    """Read a stored run back as a report; this reads only (``finalize_run`` writes).

    ``show``, ``diff``, ``export`` and the dashboard call this; the metrics are the
    ones stored when the run was finalized. ``gold`` saves reading the run's gold set.

    >>> import ragmeter
    >>> from ragmeter.store import Store
    >>> store = Store.memory()
    >>> gold = ragmeter.GoldSet.from_records([{"id": "q1", "question": "refunds?",
    ...     "relevant": [{"doc": "refunds.md"}]}])
    >>> run = ragmeter.evaluate(gold, lambda q, k: [{"doc": "refunds.md"}], store=store).run
    >>> build_report(store, run.id).metrics["mrr"]
    1.0
    """
    run = store.get_run(run_ref)
    gold = gold if gold is not None else _stored_gold(store, run)
    results = {r.item_id: r for r in store.results(run.id)}
    verdicts = _faithfulness(store, run.id)
    rows = _rows(gold, results, run, None, verdicts)
    return _assemble(store, run, rows, dict(run.metrics), store.question_metrics(run.id), results)


def finalize_run(
    store: Store,
    run_ref: int | str,
    *,
    gold: GoldSet | None = None,
    metrics: Sequence[str] | None = None,
    judgments: Judgments | None = None,
    results: Mapping[str, QuestionResult] | None = None,
) -> RunReport:
    """Score a run, store its metrics and close it (``complete``, or ``interrupted`` when
    questions are missing); returns its report.

    ``evaluate()`` calls this once every question is done and passes the ``results``
    it already holds, so they are not read back and decoded (the report's rows then
    spell out only the top hits that the misses list shows).
    """
    from ragmeter.evaluation.scoring import default_metrics, score_results

    run = store.get_run(run_ref)
    gold = gold if gold is not None else _stored_gold(store, run)
    keep = MISS_TOP if results is not None else None
    if results is None:
        results = {r.item_id: r for r in store.results(run.id)}
    verdicts = _faithfulness(store, run.id)
    rows = _rows(gold, results, run, keep, verdicts)
    wanted = list(
        metrics or default_metrics(run.k, has_answers=any(i.answer_contains for i in gold))
    )
    if any(r.answer is not None for r in results.values()):
        if any(i.answer_contains for i in gold):
            wanted.append("answer_ok")
        if verdicts:
            wanted.append("faithful")
    scores = score_results(
        gold,
        results.values(),
        level=run.level,
        k=run.k,
        metrics=list(dict.fromkeys(wanted)),
        qrels=judgments.qrels if judgments is not None else None,
        faithful={i: bool(v["supported"]) for i, v in verdicts.items()},
    )
    store.set_metrics(run.id, scores.means, scores.per_query)
    status = "complete" if len(results) == len(gold) else "interrupted"
    n_errors = sum(row.error is not None for row in rows)
    run = store.finish_run(run.id, status, n_questions=len(gold), n_errors=n_errors)
    return _assemble(store, run, rows, scores.means, scores.per_query, results)


def _stored_gold(store: Store, run: RunInfo) -> GoldSet:
    from ragmeter.gold.goldset import GoldSet  # pydantic: not for a brief report (29.1)

    return GoldSet.from_records(store.load_gold_records(run.gold_hash), name=run.name)


def _rows(
    gold: GoldSet,
    results: Mapping[str, QuestionResult],
    run: RunInfo,
    keep: int | None,
    verdicts: dict[str, dict[str, Any]],
) -> list[QuestionRow]:
    return [
        _with_generation(
            _row(item, results.get(item.id), run.k, run.level, keep), item, results, verdicts
        )
        for item in gold
    ]


def _assemble(
    store: Store,
    run: RunInfo,
    rows: list[QuestionRow],
    means: dict[str, float],
    per_query: Mapping[str, dict[str, float]],
    results: Mapping[str, QuestionResult],
) -> RunReport:
    """The report of ``rows``: misses, per-tag and per-document summaries, judges."""
    claims = _claim_metrics(_faithfulness(store, run.id, "claims"))
    rows = refine_blame(rows, claims)
    counts = tally(rows, fine=bool(claims))
    return report_of(
        store,
        run,
        counts,
        rows=rows,
        misses=[miss_of(rows[i]) for i in counts.misses],
        errors=[rows[i] for i in counts.errors],
        means=means,
        per_query=per_query,
        judged=covered(store, run, rows),
        results=results,
    )


def refine_blame(rows: list[QuestionRow], claims: Mapping[str, Any]) -> list[QuestionRow]:
    """``rows`` with the finer blame their claims verdicts give (issue 17.5); only the rows
    whose blame changes are copied."""
    fine = [claim_blame(r.blame, claims.get(r.id)) for r in rows]
    return [r if b == r.blame else replace(r, blame=b) for r, b in zip(rows, fine, strict=True)]


def miss_of(row: QuestionRow) -> Miss:
    """A missed question's entry in the report's misses: its top :data:`MISS_TOP` hits."""
    return Miss(
        row.id,
        row.question,
        row.tags,
        row.expected,
        row.retrieved[:MISS_TOP],
        row.first_relevant_rank,
    )


def report_of(
    store: Store,
    run: RunInfo,
    counts: Tallies,
    *,
    rows: Sequence[QuestionRow],
    misses: Sequence[Miss],
    errors: Sequence[QuestionRow],
    means: dict[str, float],
    per_query: Mapping[str, dict[str, float]],
    judged: dict[str, Any],
    results: Mapping[str, QuestionResult],
) -> RunReport:
    """The report of a run from its counts (:func:`~ragmeter.evaluation.tallies.tally`) and
    its rows, misses and errors (lists, or sequences built when read)."""
    return RunReport(
        run=run,
        metrics=means,
        per_query=per_query,
        rows=rows,
        misses=misses,
        by_tag=counts.by_tag,
        by_doc=counts.by_doc,
        errors=errors,
        hit_rate=counts.hit_rate,
        warnings=[str(w) for w in run.config.get("warnings") or ()],
        notes=[str(n) for n in run.config.get("notes") or ()],
        dumb_checks=counts.dumb_checks,
        blame=counts.blame,
        blame_by_tag=counts.blame_by_tag,
        judged=judged,
        judges=_judge_runs(store, run.id),
        results=results,
    )


def _claim_metrics(verdicts: Mapping[str, Any]) -> dict[str, Any]:
    """item id -> the metrics of its stored claims verdict (none: the judge module stays
    unimported, issue 29.3)."""
    if not verdicts:
        return {}
    from ragmeter.judge.claims import ClaimsVerdict

    return {item_id: ClaimsVerdict.from_dict(v).metrics for item_id, v in verdicts.items()}


def _faithfulness(store: Store, run_id: int, judge: str = "faithfulness") -> dict[str, Any]:
    """item id -> the judge's verdict, for questions the judge answered."""
    found = getattr(store, "judge_verdicts", None)
    if found is None:
        return {}
    return {
        item_id: entry["verdict"]
        for (item_id, _), entry in found(run_id, judge).items()
        if entry["verdict"] is not None
    }


def _with_generation(
    row: QuestionRow,
    item: Any,
    results: Mapping[str, QuestionResult],
    verdicts: dict[str, dict[str, Any]],
) -> QuestionRow:
    result = results.get(item.id)
    if result is None or result.error is not None:
        return row
    has_answer = result.answer is not None or "generation_error" in result.extra
    if not has_answer:
        return row
    relevant = relevant_in_context(result, list(result.extra.get("grades") or []))
    return with_answer(row, item, result.answer, relevant, result.extra, verdicts)


def with_answer(
    row: QuestionRow,
    item: Any,
    answer: str | None,
    relevant: bool,
    extra: Mapping[str, Any],
    verdicts: dict[str, dict[str, Any]],
) -> QuestionRow:
    """``row`` with its answer, the answer check, the faithfulness verdict and the blame;
    ``relevant``: a relevant chunk was in the generator's context."""
    from ragmeter.evaluation.scoring import answer_ok  # numpy: not for show (29.1)

    ok = answer_ok(answer, item.answer_contains)
    verdict = verdicts.get(item.id)
    faithful = bool(verdict["supported"]) if verdict is not None else None
    return replace(
        row,
        answer=answer,
        answer_ok=ok,
        faithful=faithful,
        blame=blame(answer_ok=ok, faithful=faithful, relevant_in_context=relevant),
        generation_error=extra.get("generation_error"),
        judge=verdict,
    )


def _judge_runs(store: Store, run_id: int) -> dict[str, Any]:
    found = getattr(store, "judge_runs", None)
    return dict(found(run_id)) if found is not None else {}
