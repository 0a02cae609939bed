"""One run, read back: everything people read about it, in one object (issue 25.1).

:func:`read_run` reads a stored run once and computes what every surface shows: the report
(metrics, rows, misses by tag and document, blame), its health judged against the precision
ceiling of its gold set, the judge metrics corrected by people's labels with their intervals,
the verdicts whose repeats disagreed, each judge's identity and calibration (its trust),
the warnings, the retrieval misses and the failed answers, and the diff against a baseline
when one is given. :meth:`RunView.to_dict` is the one JSON behind ``show --json``,
``/api/runs/N``, the static report and ``export``; ``show``'s text, the dashboard and the
static report render a :class:`RunView` and compute nothing, so they cannot disagree.

>>> import ragmeter
>>> store = ragmeter.Store.memory()
>>> gold = ragmeter.GoldSet.from_records([{"id": "q1", "question": "refunds?",
...     "relevant": [{"doc": "refunds.md"}]}])
>>> _ = ragmeter.evaluate(gold, lambda q, k: [{"doc": "refunds.md"}], store=store, name="a",
...                       commit="")
>>> view = ragmeter.read_run(store, "a")
>>> view.metrics["mrr"], view.health_lines[0].split(" · ")[0]
(1.0, 'health: precision@5 0.20 (max 0.20) good')
>>> view.to_dict()["health"]["checks"][0]["label"]
'good'
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from ragmeter.compare.health import (
    Health,
    HealthThresholds,
    diagnose,
    format_health,
    report_ceiling,
)
from ragmeter.errors import RagmeterError
from ragmeter.evaluation.lazy_rows import light, where
from ragmeter.evaluation.report import QuestionRow, RunReport, build_report
from ragmeter.read.questions import (
    clean,
    failed_answer,
    hit_curve,
    latency_histogram,
    metric_order,
    question_dict,
    relevance_grades,
    without_text,
)

if TYPE_CHECKING:
    from pathlib import Path

    from ragmeter.compare.diff import RunDiff
    from ragmeter.evaluation.explain import Explanation
    from ragmeter.evaluation.export import ExportResult
    from ragmeter.gold.goldset import GoldSet
    from ragmeter.gold.stored import StoredGold
    from ragmeter.judging.judge_sides import JudgeSide
    from ragmeter.metrics.uncertainty import JudgedMean
    from ragmeter.run import RunInfo
    from ragmeter.store import Store

__all__ = ["RunView", "TagInterval", "judged_fields", "no_cyclic_gc", "read_run"]

#: The judges whose unstable verdicts ``show`` lists (``judge_unstable`` in the JSON).
UNSTABLE_JUDGES = ("faithfulness", "relevance")


@dataclass(frozen=True)
class TagInterval:
    """One tag's change of the diff's primary metric, with its interval and the smallest
    change the tag can detect (``None``: none on its own), issue 26."""

    tag: str
    delta: float
    low: float
    high: float
    detectable: float | None = None


@dataclass(frozen=True)
class RunView:
    """Everything people read about a stored run; build it with :func:`read_run`.

    Every field is computed when the view is read; the renderers (``show``, the dashboard,
    the static report, ``_repr_html_``) only lay it out.
    """

    report: RunReport
    #: The run's gold set, or the stored snapshot it is parsed from when first read (29.1).
    gold_source: GoldSet | StoredGold
    thresholds: HealthThresholds
    health: Health
    precision_ceiling: float | None
    judged: Mapping[str, JudgedMean]
    unstable: Mapping[str, Sequence[str]]
    judge_trust: Mapping[str, JudgeSide]
    grades: Mapping[tuple[str, str], int]
    answers: Mapping[str, str]
    judged_failure: RagmeterError | None = None
    diff: RunDiff | None = None
    tag_intervals: tuple[TagInterval, ...] = ()
    #: Why each miss was missed and each knob's ceiling, when ``ragmeter explain`` ran (28).
    explanation: Explanation | None = None
    #: Read with ``rankings="shown"``: only the rows a summary shows spell out ``retrieved``,
    #: and the report has no per-question metric values (``report.per_query`` is empty).
    brief: bool = False
    _questions: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    _by_id: dict[str, QuestionRow] = field(default_factory=dict, repr=False)
    _parsed: list[GoldSet] = field(default_factory=list, repr=False)

    @property
    def gold(self) -> GoldSet:
        """The run's gold set (a stored snapshot is validated the first time it is read)."""
        from ragmeter.gold.goldset import GoldSet  # pydantic: not for what show prints (29.1)

        if isinstance(self.gold_source, GoldSet):
            return self.gold_source
        if not self._parsed:
            records = self.gold_source.records()
            self._parsed.append(GoldSet.from_records(records, name=self.run.name))
        return self._parsed[0]

    @property
    def run(self) -> RunInfo:
        return self.report.run

    @property
    def metrics(self) -> dict[str, float]:
        """The run's metric means, in the runs table's order."""
        means = self.report.metrics
        return {name: means[name] for name in metric_order(list(means), self.run.k)}

    @property
    def rows(self) -> Sequence[QuestionRow]:
        return self.report.rows

    @property
    def warnings(self) -> list[str]:
        return self.report.warnings

    @property
    def health_lines(self) -> list[str]:
        """The health line and its hints: the same checks as ``health``, as text."""
        return format_health(self.health, self.thresholds)

    @property
    def failed_answers(self) -> Sequence[QuestionRow]:
        """Questions whose answer failed (answer check or judge), with a blame other than ok
        (in a brief view, built when read: issue 29.1)."""
        return where(self.rows, lambda r: r.error is None and r.blame not in (None, "ok"))

    @property
    def judged_error(self) -> str | None:
        """Why people's labels correct nothing (the judge has re-rated since), or None."""
        return None if self.judged_failure is None else str(self.judged_failure)

    def _whole(self, what: str) -> None:
        if self.brief:
            raise RagmeterError(
                f"{what} needs every question's ranking; this view was read with "
                "rankings='shown' (read_run(..., rankings='all') reads them)"
            )

    def question(self, item_id: str, *, texts: bool = False) -> dict[str, Any] | None:
        """One question as the JSON has it (None: the run has no such question)."""
        self._whole("question()")
        if not texts and item_id in self._questions:
            return self._questions[item_id]
        if not self._by_id:
            self._by_id.update((r.id, r) for r in self.rows)
        row = self._by_id.get(item_id)
        if row is None:
            return None
        built = question_dict(
            row, self.answers.get(row.id), self.report.per_query, self.grades, texts=texts
        )
        if not texts:
            self._questions[item_id] = built
        return built

    def questions(self, *, texts: bool = False) -> list[dict[str, Any]]:
        """Every question, in the gold set's order."""
        self._whole("questions()")
        per_query, answers = self.report.per_query, self.answers
        if texts:
            return [
                question_dict(r, answers.get(r.id), per_query, self.grades, texts=True)
                for r in self.rows
            ]
        out = []
        for row in self.rows:
            found = self._questions.get(row.id)
            if found is None:
                found = question_dict(row, answers.get(row.id), per_query, self.grades)
                self._questions[row.id] = found
            out.append(found)
        return out

    def summary(self, *, texts: bool = False) -> dict[str, Any]:
        """:meth:`to_dict` without its ``questions``: what the run page renders on the server."""
        report, run = self.report, self.run
        data = report.to_dict()
        misses = (
            data["misses"]
            if texts
            else [
                {**m, "retrieved": [without_text(h) for h in m["retrieved"]]}
                for m in data["misses"]
            ]
        )
        rows = light(self.rows)  # counted without building a brief view's rows (29.1)
        latencies = [row.latency_ms for row in rows if row.latency_ms is not None]
        out: dict[str, Any] = {
            "run": run.to_dict() | {"versions": data["run"]["versions"]},
            "metrics": self.metrics,
            "health": self.health.to_dict(),
            "health_lines": self.health_lines,
            "precision_ceiling": self.precision_ceiling,
            "hit_rate": report.hit_rate,
            "n_questions": report.n_questions,
            "n_errors": report.n_errors,
            "hit_curve": hit_curve([row.first_relevant_rank for row in rows], run.k),
            "latency_histogram": latency_histogram(latencies),
            "tags": sorted({tag for row in rows for tag in row.tags}),
            "warnings": list(report.warnings),
            "notes": list(report.notes),  # informational, not counted as warnings (24.6)
            "misses": misses,
            "misses_by_tag": data["misses_by_tag"],
            "misses_by_doc": data["misses_by_doc"],
            "failed_answers": [failed_answer(row) for row in self.failed_answers],
            "errors": data["errors"],
            "dumb_checks": data["dumb_checks"],
            "blame": data["blame"],
            "blame_by_tag": data["blame_by_tag"],
            "coverage": data["judged"],
            "judges": sorted(data["judges"]),
            "judge_runs": data["judges"],
            "judge_trust": {name: side.to_dict() for name, side in self.judge_trust.items()},
            "judge_unstable": {judge: list(ids) for judge, ids in self.unstable.items()},
            **judged_dict(self.judged, self.judged_error),
        }
        out["explanation"] = self.explanation.to_dict() if self.explanation else None
        if self.diff is not None:
            out["diff"] = self.diff.to_dict() | {
                "tag_intervals": [vars(t) for t in self.tag_intervals]
            }
        return cast(dict[str, Any], clean(out))

    def to_dict(self, *, questions: bool = True, texts: bool = False) -> dict[str, Any]:
        """The one JSON of a run: ``show --json`` (``texts=True``), ``/api/runs/N`` (chunk
        texts with ``?texts=1``), the static report and ``export`` read it.

        Keys: ``run``, ``metrics``, ``health`` (checks against the precision ceiling),
        ``health_lines``, ``hit_rate``, ``misses``, ``misses_by_tag``, ``misses_by_doc``,
        ``failed_answers``, ``errors``, ``warnings``, ``notes``, ``blame``, ``blame_by_tag``, ``coverage``
        (covered@k), ``judged`` (corrected judge metrics), ``judged_corrected``,
        ``judge_trust``, ``judge_unstable``, ``explanation`` (``ragmeter explain``, or None),
        ``questions``, and ``diff`` with a baseline.
        """
        out = self.summary(texts=texts)
        if questions:
            out["questions"] = self.questions(texts=texts)
        return out

    def export(
        self, fmt: str, out: str | Path | None = None, *, qrels_out: str | Path | None = None
    ) -> tuple[ExportResult, str | None]:
        """The run as ``ragmeter export`` writes it (``jsonl``, ``csv``, ``parquet``, ``trec``,
        ``ragas``, ``deepeval``): to ``out``, or returned as text when ``out`` is None.

        >>> view.export("csv", "run.csv")  # doctest: +SKIP
        """
        self._whole("export()")
        from ragmeter.evaluation.export import export_run

        return export_run(self.report, fmt, out, gold=self.gold, qrels_out=qrels_out)

    def _repr_html_(self) -> str:
        """The metrics table, the misses and the failed answers, in a notebook."""
        from ragmeter.read.fragments import view_html

        return view_html(self)


def judged_fields(store: Store, run_id: int) -> tuple[dict[str, JudgedMean], RagmeterError | None]:
    """A run's judge metrics corrected by people's labels, read now (a new label changes
    them); when the labels no longer fit the verdicts, nothing and the reason."""
    from ragmeter.judging.corrected import corrected_metrics

    try:
        return corrected_metrics(store, run_id), None
    except RagmeterError as error:  # stale labels: the run is still shown, with why
        return {}, error


def _label_how(metric: str) -> str:
    """The command that exports a random sample for people to label, per judge metric
    (faithfulness is labelled on the dashboard's label page instead).

    >>> _label_how("hallucination")
    'ragmeter judge claim-labels export RUN --sample 30 --out claims.yaml'
    """
    from ragmeter.metrics.claims import CLAIM_METRICS

    if metric == "faithful":
        return ""
    if metric in CLAIM_METRICS:
        return "ragmeter judge claim-labels export RUN --sample 30 --out claims.yaml"
    return "ragmeter judge relevance-labels export RUN --sample 30 --out grades.yaml"


def judged_dict(judged: Mapping[str, JudgedMean], error: str | None) -> dict[str, Any]:
    """The JSON of the corrected judge metrics (issue 17.2): ``judged`` lists them with the
    line people read and how to label more; ``judged_corrected`` maps metric to estimate;
    ``faithful_judged`` / ``faithful_corrected`` are faithfulness alone (None: not judged);
    ``judged_error`` says why labels correct nothing."""
    entries = [
        {**mean.to_dict(), "metric": metric, "line": mean.describe(), "how": _label_how(metric)}
        for metric, mean in judged.items()
    ]
    faithful = judged.get("faithful")
    return cast(
        dict[str, Any],
        clean(
            {
                "judged": entries,
                "faithful_judged": next((e for e in entries if e["metric"] == "faithful"), None),
                "judged_error": error,
                "judged_corrected": {metric: mean.to_dict() for metric, mean in judged.items()},
                "faithful_corrected": faithful.to_dict() if faithful is not None else None,
            }
        ),
    )


def tag_intervals(store: Store, diff: RunDiff, report: RunReport) -> tuple[TagInterval, ...]:
    """Per-tag delta of the diff's primary metric with the interval diff and gate show
    (issue 26: a t interval whose spread is at least the run's, so a tag of five is not
    given a bootstrap interval like [-1, -1]); ``detectable`` is what the tag can detect."""
    return tuple(
        TagInterval(t.tag, t.delta, t.ci_low, t.ci_high, t.detectable)
        for t in diff.tags
        if t.metric == diff.primary
    )


def read_run(
    store: Store,
    ref: int | str,
    *,
    against: int | str | None = None,
    thresholds: HealthThresholds | None = None,
    gold: GoldSet | None = None,
    rankings: Literal["all", "shown"] = "all",
) -> RunView:
    """Read run ``ref`` (an id, a name or ``"latest"``) and everything people read about it.

    ``against`` adds the diff against that baseline run (``diff``, ``tag_intervals``);
    ``thresholds`` are the health thresholds (``[health]`` in ``ragmeter.toml``); ``gold``
    saves reading the run's gold set. This only reads. ``rankings="shown"`` decodes only
    the rankings the summary shows (the misses; issue 29.1): what ``show`` prints and
    :meth:`RunView.summary` returns are the same, ``questions()`` and ``export()`` refuse,
    and the report holds no per-question metric values.

    >>> import ragmeter
    >>> view = ragmeter.read_run(ragmeter.Store.open("runs.db"), "latest")  # doctest: +SKIP
    >>> view.to_dict()["health"]["checks"][0]["label"]  # doctest: +SKIP
    'good'
    """
    with no_cyclic_gc():
        return _read_run(store, ref, against, thresholds, gold, rankings)


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """The cyclic garbage collector paused: a read builds a few objects per question and frees
    none, and at 100,000 questions the collector's passes over them were 40% of ``show``
    (issue 29.1). Reference counting still frees what has no cycle; the collector is back on
    (if it was on) when the block ends. Objects still alive then are passed over once when
    it next runs (0.15 s at 100,000 questions): ``show`` drops its view inside the block."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _explanation(store: Store, run_id: int) -> Explanation | None:
    """The explanation ``ragmeter explain`` stored with the run (its package is imported only
    when there is one: issue 29.1)."""
    data = store.explanation(run_id)
    if data is None:
        return None
    from ragmeter.evaluation.explain import Explanation

    return Explanation.from_dict(data)


def _judges(
    store: Store, run: RunInfo, report: RunReport
) -> tuple[dict[str, JudgedMean], RagmeterError | None, dict[str, list[str]], dict[str, JudgeSide]]:
    """The judge fields of a view: corrected judge metrics (and why not), unstable verdicts,
    judge trust. A run no judge rated (no verdict, no judge run, no judge-filled labels)
    has none, and the judging package is not imported for it (issue 29.1)."""
    found = getattr(store, "verdict_judges", None)  # a store that cannot say: read them all
    judges = found(run.id) if found is not None else {"?"}
    if not judges and not report.judges and run.config.get("labels") != "gold+judge":
        return {}, None, {judge: [] for judge in UNSTABLE_JUDGES}, {}
    from ragmeter.judging.judge_sides import judge_sides, unstable_verdicts

    judged, failure = judged_fields(store, run.id)
    unstable = {judge: unstable_verdicts(store, run.id, judge) for judge in UNSTABLE_JUDGES}
    return judged, failure, unstable, judge_sides(store, run, list(report.metrics))


def _read_run(
    store: Store,
    ref: int | str,
    against: int | str | None,
    thresholds: HealthThresholds | None,
    gold: GoldSet | None,
    rankings: Literal["all", "shown"],
) -> RunView:
    t = thresholds or HealthThresholds()
    run = store.get_run(ref)
    source: GoldSet | StoredGold
    if rankings == "shown":
        from ragmeter.evaluation.brief import build_brief_report
        from ragmeter.gold.stored import StoredGold

        # Read a record at a time, kept as the columns a report counts (issue 29.1).
        source = (
            gold
            if gold is not None
            else StoredGold(store.load_gold_text(run.gold_hash), name=run.name)
        )
        report = build_brief_report(store, run.id, gold=source, per_query=False)
    else:
        if gold is None:
            from ragmeter.gold.goldset import GoldSet

            gold = GoldSet.from_records(store.load_gold_records(run.gold_hash), name=run.name)
        source = gold
        report = build_report(store, run.id, gold=gold)
    run = report.run
    ceiling = report_ceiling(report)
    judged, failure, unstable, trust = _judges(store, run, report)
    diff = None
    if against is not None:
        from ragmeter.compare.diff import diff_runs

        diff = diff_runs(store, against, run.id, thresholds=t)
    return RunView(
        report=report,
        gold_source=source,
        thresholds=t,
        health=diagnose(report.metrics, t, precision_ceiling=ceiling),
        precision_ceiling=ceiling,
        judged=judged,
        unstable=unstable,
        judge_trust=trust,
        grades=relevance_grades(store, run.id),
        answers={r.id: r.answer for r in light(report.rows) if r.answer is not None}
        if rankings == "shown"
        else {i: r.answer for i, r in report.results.items() if r.answer is not None},
        judged_failure=failure,
        diff=diff,
        tag_intervals=tag_intervals(store, diff, report) if diff is not None else (),
        explanation=_explanation(store, run.id),
        brief=rankings == "shown",
    )
