"""A run, read back: metrics, per-question rows, and the misses by cluster.

Misses are the product: every question with no relevant item in the top k,
grouped by tag (each tag's hit rate beside the overall one, so clusters stand
out) and by expected document (a badly chunked document shows up as many
misses pointing at it).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ragmeter.goldset import GoldSet
from ragmeter.run import QuestionResult, RunInfo
from ragmeter.scoring import default_metrics, score_results

if TYPE_CHECKING:
    from ragmeter.scoring import Judgments
    from ragmeter.store import Store

__all__ = ["Miss", "QuestionRow", "RunReport", "TagSummary", "build_report"]

SNIPPET_WORDS = 12
MISS_TOP = 3


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


@dataclass(frozen=True)
class Miss:
    """A question with no relevant item in the top k."""

    id: str
    question: str
    tags: list[str]
    expected: list[str]
    retrieved: list[dict[str, Any]]
    first_relevant_rank: int | None


@dataclass(frozen=True)
class TagSummary:
    """How one cluster of questions did, beside the overall hit rate."""

    tag: str
    n: int
    misses: int
    hit_rate: float


@dataclass(frozen=True)
class RunReport:
    """Everything ``ragmeter show`` prints about a run."""

    run: RunInfo
    metrics: dict[str, float]
    per_query: dict[str, dict[str, float]]
    rows: list[QuestionRow]
    misses: list[Miss]
    by_tag: list[TagSummary]
    by_doc: list[tuple[str, int]]
    errors: list[QuestionRow]
    hit_rate: float
    warnings: list[str] = field(default_factory=list)

    @property
    def n_questions(self) -> int:
        return len(self.rows)

    @property
    def n_errors(self) -> int:
        return len(self.errors)

    @property
    def id(self) -> int:
        return self.run.id

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
        }
        if rows:
            out["questions"] = [asdict(r) for r in self.rows]
        return out


def _snippet(text: str | None) -> str:
    if not text:
        return ""
    words = text.split()
    more = " …" if len(words) > SNIPPET_WORDS else ""
    return " ".join(words[:SNIPPET_WORDS]) + more


def snippets(result_hits: Sequence[Any]) -> list[str]:
    """The first words of the top hits, kept with a result for the misses list."""
    return [_snippet(getattr(hit, "text", None)) for hit in result_hits[:MISS_TOP]]


def _first_relevant_rank(retrieved: list[dict[str, Any]], level: str) -> int | None:
    """Rank of the first relevant item, counting documents once at doc level."""
    seen: dict[str, int] = {}
    for entry in retrieved:
        key = entry["doc"] if level == "doc" else entry["id"]
        if key in seen:
            continue
        seen[key] = len(seen) + 1
        if entry["grade"] > 0:
            return seen[key]
    return None


def _row(item: Any, result: QuestionResult | None, k: int, level: str) -> QuestionRow:
    expected = list(dict.fromkeys(rel.doc_id for rel in item.relevant if rel.grade > 0))
    if result is None:
        return QuestionRow(
            item.id,
            item.question,
            list(item.tags),
            expected,
            [],
            None,
            False,
            None,
            "not evaluated",
        )
    grades = list(result.extra.get("grades") or [])
    texts = list(result.extra.get("snippets") or [])
    retrieved = [
        {
            "rank": rank,
            "id": hit.id,
            "doc": hit.doc,
            "score": hit.score,
            "grade": grades[rank - 1] if rank - 1 < len(grades) else 0,
            "text": texts[rank - 1] if rank - 1 < len(texts) else "",
        }
        for rank, hit in enumerate(result.hits, start=1)
    ]
    first = _first_relevant_rank(retrieved, level)
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
    )


def build_report(
    store: Store,
    run_ref: int | str,
    *,
    gold: GoldSet | None = None,
    metrics: Sequence[str] | None = None,
    judgments: Judgments | None = None,
    finalize: bool = False,
) -> RunReport:
    """Read a run back from ``store``; with ``finalize``, score it and store the metrics.

    ``show`` calls this without ``finalize`` (metrics come from the store);
    ``evaluate()`` calls it with ``finalize=True`` once every question is done.
    """
    run = store.get_run(run_ref)
    if gold is None:
        gold = GoldSet.from_records(store.load_gold_records(run.gold_hash), name=run.name)
    results = {r.item_id: r for r in store.results(run.id)}
    k = run.k
    rows = [_row(item, results.get(item.id), k, run.level) for item in gold]
    errors = [row for row in rows if row.error is not None]
    if finalize:
        wanted = list(
            metrics or default_metrics(k, has_answers=any(i.answer_contains for i in gold))
        )
        scores = score_results(
            gold,
            results.values(),
            level=run.level,
            k=k,
            metrics=wanted,
            qrels=judgments.qrels if judgments is not None else None,
        )
        store.set_metrics(run.id, scores.means, scores.per_query)
        status = "complete" if len(results) == len(gold) else "interrupted"
        run = store.finish_run(run.id, status, n_questions=len(gold), n_errors=len(errors))
        means, per_query = scores.means, scores.per_query
    else:
        means = dict(run.metrics)
        per_query = store.question_metrics(run.id)

    misses = [
        Miss(
            row.id,
            row.question,
            row.tags,
            row.expected,
            row.retrieved[:MISS_TOP],
            row.first_relevant_rank,
        )
        for row in rows
        if row.error is None and not row.hit
    ]
    evaluated = [row for row in rows if row.error is None]
    hit_rate = sum(row.hit for row in evaluated) / len(evaluated) if evaluated else 0.0
    tag_n: Counter[str] = Counter()
    tag_miss: Counter[str] = Counter()
    for row in evaluated:
        for tag in row.tags:
            tag_n[tag] += 1
            tag_miss[tag] += not row.hit
    by_tag = sorted(
        (TagSummary(tag, n, tag_miss[tag], (n - tag_miss[tag]) / n) for tag, n in tag_n.items()),
        key=lambda t: (t.hit_rate, -t.n, t.tag),
    )
    doc_miss: defaultdict[str, int] = defaultdict(int)
    for miss in misses:
        for doc in miss.expected:
            doc_miss[doc] += 1
    by_doc = sorted(doc_miss.items(), key=lambda kv: (-kv[1], kv[0]))
    return RunReport(
        run=run,
        metrics=means,
        per_query=per_query,
        rows=rows,
        misses=misses,
        by_tag=by_tag,
        by_doc=by_doc,
        errors=errors,
        hit_rate=hit_rate,
    )
