"""Judging stored runs and calibration sets: the library behind ``ragmeter judge``.

Each function reads from the store, runs one judge, writes verdicts (and the
judge's config and usage, never its key) back, and merges the resulting metric
into the run. A judge failure is stored per question and shows as coverage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.evaluation.hit_text import stored_text
from ragmeter.gold.goldset import GoldSet
from ragmeter.judge.claims import (
    CLAIMS_VERSION,
    ClaimsCase,
    ClaimsVerdict,
    judge_claims,
    judge_claims_lexical,
)
from ragmeter.judge.client import JudgeBatch, JudgeClient
from ragmeter.judge.faithfulness import FaithfulnessCase, FaithfulnessVerdict, judge_faithfulness
from ragmeter.judge.lexical import LEXICAL_CLAIMS_VERSION, LEXICAL_VERSION, judge_lexical
from ragmeter.judge.prompts import FAITHFULNESS, RELEVANCE
from ragmeter.judge.relevance import RelevanceCase, judge_relevance
from ragmeter.judge.stability import Stability
from ragmeter.judging.calibration import Calibration, CalibrationItem, agreement_report
from ragmeter.judging.filling import filled_scores, ranking_metrics
from ragmeter.judging.identity import JudgeIdentity
from ragmeter.judging.stability import expected_flips, stability_dict
from ragmeter.metrics.claims import CLAIM_METRICS
from ragmeter.run import RunInfo
from ragmeter.store import Store

# (item id, target, verdict, error) as the store keeps them.
_Row = tuple[str, str, dict[str, Any] | None, str | None]

__all__ = [
    "RunJudgement",
    "calibrate",
    "claims_cases",
    "judge_run_claims",
    "judge_run_faithfulness",
    "judge_run_relevance",
]


@dataclass
class RunJudgement:
    """What judging a run did: how many cases, verdicts, errors, skips; usage; calibration."""

    run: RunInfo
    judge: str
    source: str
    n_cases: int
    n_verdicts: int
    errors: dict[str, str]
    skipped: int
    usage: dict[str, Any]
    calibration: dict[str, Any] | None
    metrics: dict[str, float] = field(default_factory=dict)
    # Repeats (issue 17.4): votes per request, unstable ids, expected flips with one more.
    stability: dict[str, Any] = field(default_factory=dict)
    # Claims (issue 17.5): tag -> metric -> mean over the tag's judged questions.
    by_tag: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def calibrated(self) -> bool:
        return self.calibration is not None and not self.calibration["flagged"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run.id,
            "judge": self.judge,
            "source": self.source,
            "cases": self.n_cases,
            "verdicts": self.n_verdicts,
            "errors": self.errors,
            "skipped": self.skipped,
            "usage": self.usage,
            "calibration": self.calibration,
            "calibrated": self.calibrated,
            "metrics": self.metrics,
            "stability": self.stability,
            "by_tag": self.by_tag,
        }


def stability_summary(
    batch: JudgeBatch[Any], repeats: int, *, name: Callable[[str], str] = str
) -> dict[str, Any]:
    """Repeats, how many requests disagreed with themselves, which, and expected flips.

    ``expected_flips``: verdicts expected to change with one more repeat at each
    question's observed rates (see :mod:`ragmeter.judging.stability`).
    """
    unstable = sorted(name(i) for i, s in batch.stability.items() if s.unstable)
    return {
        "repeats": repeats,
        "unstable": unstable,
        "n_unstable": len(unstable),
        "expected_flips": expected_flips(batch.stability.values()),
    }


def faithfulness_cases(store: Store, run: RunInfo) -> tuple[list[FaithfulnessCase], int]:
    """The run's answered questions as cases, and how many questions had no answer."""
    gold = GoldSet.from_records(store.load_gold_records(run.gold_hash), name=run.name)
    questions = {item.id: item.question for item in gold}
    cases: list[FaithfulnessCase] = []
    skipped = 0
    for result in store.results(run.id):
        if result.error is not None or not result.answer or result.item_id not in questions:
            skipped += 1
            continue
        context = tuple(c.get("text", "") for c in result.extra.get("context") or [])
        cases.append(
            FaithfulnessCase(result.item_id, questions[result.item_id], context, result.answer)
        )
    return cases, skipped


def _merge_metric(store: Store, run: RunInfo, name: str, per_item: dict[str, float]) -> float:
    means = dict(run.metrics)
    per_query = store.question_metrics(run.id)
    per_query[name] = per_item
    means[name] = sum(per_item.values()) / len(per_item) if per_item else 0.0
    store.set_metrics(run.id, means, per_query)
    return means[name]


def _store_verdicts(
    store: Store,
    run: RunInfo,
    judge: str,
    rows: list[_Row],
    batch: JudgeBatch[Any],
    *,
    source: str,
    version: str,
    ids: Sequence[str],
) -> dict[str, Any] | None:
    """Save the verdicts and the judge run (config, usage, calibration); return the calibration.

    Each verdict carries the judge's identity under ``"judge"`` (issue 17.6), so a
    verdict read on its own still says which model, prompt and parameters made it.
    """
    identity = JudgeIdentity.from_config(batch.judge).to_dict()
    rows = [(i, t, {**v, "judge": identity} if v else None, e) for i, t, v, e in rows]
    if batch.stability:  # repeats (issue 17.4): each verdict keeps its votes
        rows = [
            (i, t, {**v, "stability": stability_dict(batch.stability[key])}, e)
            if v and key in batch.stability
            else (i, t, v, e)
            for (i, t, v, e), key in zip(rows, ids, strict=True)
        ]
    store.save_judge_verdicts(run.id, judge, rows, source=source)
    calibration = store.latest_calibration(source, version)
    if calibration is not None and JudgeIdentity.from_config(calibration["config"]).differences(
        JudgeIdentity.from_config(batch.judge)
    ):
        # Calibrated with another prompt text, temperature, seed or number of repeats: its
        # agreement says nothing about this judge (issue 17.6).
        calibration = None
    store.record_judge_run(
        run.id,
        judge,
        config=batch.judge,
        usage=batch.usage.to_dict(),
        calibration_id=calibration["id"] if calibration else None,
    )
    return calibration


def judge_run_faithfulness(
    store: Store, run_ref: int | str, *, client: JudgeClient | None = None
) -> RunJudgement:
    """Judge every answer of a run (``client=None``: the offline lexical judge).

    Verdicts land in the store; the run's ``faithful`` metric is updated.
    """
    run = store.get_run(run_ref)
    cases, skipped = faithfulness_cases(store, run)
    batch: JudgeBatch[FaithfulnessVerdict]
    if client is None:
        batch, source, version = judge_lexical(cases), "lexical", LEXICAL_VERSION
    else:
        client.cache = client.cache if client.cache is not None else store
        batch = judge_faithfulness(client, cases)
        source, version = client.model, FAITHFULNESS.version
    rows: list[_Row] = [(i, "", v.to_dict(), None) for i, v in batch.verdicts.items()]
    rows += [(i, "", None, error) for i, error in batch.errors.items()]
    ids = [*batch.verdicts, *batch.errors]
    calibration = _store_verdicts(
        store, run, "faithfulness", rows, batch, source=source, version=version, ids=ids
    )
    faithful = {i: float(v.supported) for i, v in batch.verdicts.items()}
    mean = _merge_metric(store, run, "faithful", faithful)
    return RunJudgement(
        run=store.get_run(run.id),
        judge="faithfulness",
        source=source,
        n_cases=len(cases),
        n_verdicts=len(batch.verdicts),
        errors=dict(batch.errors),
        skipped=skipped,
        usage=batch.usage.to_dict(),
        calibration=calibration,
        metrics={"faithful": mean},
        stability=stability_summary(batch, client.repeats if client else 1),
    )


def relevance_cases(
    store: Store, run: RunInfo
) -> tuple[list[RelevanceCase], dict[str, tuple[str, str]], int]:
    """Retrieved top-k chunks without a gold label (and with stored text) as cases.

    A chunk's text is the generator's context when it saw the chunk, else the text the
    run kept for the hit (``extra["texts"]``, cut at 4,000 characters with the cut
    marked); a one-line snippet of an older run is not enough to grade. Returns the
    cases, ``case id -> (item id, chunk id)`` and how many unlabelled chunks were
    skipped because the run kept no text for them.
    """
    gold = GoldSet.from_records(store.load_gold_records(run.gold_hash), name=run.name)
    questions = {item.id: item.question for item in gold}
    cases: list[RelevanceCase] = []
    keys: dict[str, tuple[str, str]] = {}
    no_text = 0
    for result in store.results(run.id):
        if result.error is not None or result.item_id not in questions:
            continue
        texts = {c["id"]: c.get("text") for c in result.extra.get("context") or []}
        grades = list(result.extra.get("grades") or [])
        for rank, hit in enumerate(result.hits[: run.k]):
            if rank < len(grades) and grades[rank] > 0:
                continue
            kept, source, _ = stored_text(result.extra, rank + 1)
            text = texts.get(hit.id) or hit.text or (kept if source == "run" else "")
            if not text:
                no_text += 1
                continue
            case_id = str(len(cases))
            keys[case_id] = (result.item_id, hit.id)
            cases.append(RelevanceCase(case_id, questions[result.item_id], text))
    return cases, keys, no_text


def judge_run_relevance(
    store: Store, run_ref: int | str, *, client: JudgeClient, fill_with_judge: bool = False
) -> RunJudgement:
    """Grade a run's unlabelled retrieved chunks 0–3; ``fill_with_judge`` rescores with them.

    Without ``fill_with_judge`` metrics keep using gold labels only; with it the
    ranking metrics are recomputed over gold + judge labels and the run's config
    says ``labels = "gold+judge"``.
    """
    run = store.get_run(run_ref)
    cases, keys, no_text = relevance_cases(store, run)
    client.cache = client.cache if client.cache is not None else store
    batch = judge_relevance(client, cases)
    rows: list[_Row] = [(*keys[i], v.to_dict(), None) for i, v in batch.verdicts.items()]
    rows += [(*keys[i], None, error) for i, error in batch.errors.items()]
    ids = [*batch.verdicts, *batch.errors]
    calibration = _store_verdicts(
        store,
        run,
        "relevance",
        rows,
        batch,
        source=client.model,
        version=RELEVANCE.version,
        ids=ids,
    )
    metrics: dict[str, float] = {}
    if fill_with_judge:
        metrics = _fill(store, run, {keys[i]: v.grade for i, v in batch.verdicts.items()})
    return RunJudgement(
        run=store.get_run(run.id),
        judge="relevance",
        source=client.model,
        n_cases=len(cases),
        n_verdicts=len(batch.verdicts),
        errors={f"{keys[i][0]} {keys[i][1]}": e for i, e in batch.errors.items()},
        skipped=no_text,
        usage=batch.usage.to_dict(),
        calibration=calibration,
        metrics=metrics,
        stability=stability_summary(batch, client.repeats, name=lambda i: " ".join(keys[i])),
    )


def _fill(store: Store, run: RunInfo, grades: dict[tuple[str, str], int]) -> dict[str, float]:
    gold = GoldSet.from_records(store.load_gold_records(run.gold_hash), name=run.name)
    results = list(store.results(run.id))
    names = ranking_metrics(run.metrics)
    scores = filled_scores(gold, results, run, grades, names)
    means = dict(run.metrics)
    per_query = store.question_metrics(run.id)
    means.update(scores.means)
    per_query.update(scores.per_query)
    store.set_metrics(run.id, means, per_query)
    store.update_run(run.id, config={**run.config, "labels": "gold+judge"})
    return {name: scores.means[name] for name in names if name in scores.means}


def claims_cases(
    store: Store, run: RunInfo
) -> tuple[list[ClaimsCase], dict[str, str], dict[str, list[str]], int]:
    """The run's answered questions as claims cases (each context chunk relevant or not
    per its gold grade), the questions that cannot be checked (a context chunk without
    stored text) with why, item id -> tags, and how many questions had no answer."""
    gold = GoldSet.from_records(store.load_gold_records(run.gold_hash), name=run.name)
    items = {item.id: item for item in gold}
    cases: list[ClaimsCase] = []
    unusable: dict[str, str] = {}
    skipped = 0
    for result in store.results(run.id):
        item = items.get(result.item_id)
        if result.error is not None or not result.answer or item is None:
            skipped += 1
            continue
        grades = dict.fromkeys((h.id for h in result.hits), 0)
        for hit, grade in zip(result.hits, result.extra.get("grades") or [], strict=False):
            grades[hit.id] = max(grades[hit.id], int(grade))
        context = list(result.extra.get("context") or [])
        blank = [str(c.get("id")) for c in context if not str(c.get("text") or "").strip()]
        if blank:
            # An empty premise entails nothing: every claim would look hallucinated.
            unusable[item.id] = f"no stored text for context chunk {blank[0]}"
            continue
        cases.append(
            ClaimsCase(
                item.id,
                item.question,
                result.answer,
                tuple(str(c.get("text", "")) for c in context),
                tuple(grades.get(str(c.get("id")), 0) > 0 for c in context),
                reference=item.reference_answer,
            )
        )
    return cases, unusable, {item.id: list(item.tags) for item in gold}, skipped


def _claims_batch(
    client: JudgeClient | None, cases: Sequence[ClaimsCase]
) -> tuple[JudgeBatch[ClaimsVerdict], dict[str, list[Stability]], str, str]:
    if client is None:
        return judge_claims_lexical(cases), {}, "lexical", LEXICAL_CLAIMS_VERSION
    batch, unstable = judge_claims(client, cases)
    return batch, unstable, client.model, CLAIMS_VERSION


def _by_tag(
    per_item: dict[str, dict[str, float]], tags: dict[str, list[str]]
) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for tag in sorted({t for i in per_item for t in tags.get(i, [])}):
        members = [i for i in per_item if tag in tags.get(i, [])]
        out[tag] = {}
        for name in CLAIM_METRICS:
            values = [per_item[i][name] for i in members if name in per_item[i]]
            if values:
                out[tag][name] = sum(values) / len(values)
    return out


def judge_run_claims(
    store: Store, run_ref: int | str, *, client: JudgeClient | None = None
) -> RunJudgement:
    """Split each answer (and reference answer) of a run into claims and check them
    against each chunk of its context (``client=None``: the offline lexical rule).

    Verdicts land in the store under judge ``claims``; the run gains the claim metrics
    (:data:`~ragmeter.metrics.claims.CLAIM_METRICS`), each averaged over the questions
    where it is defined (``coverage`` in the result says how many).
    """
    run = store.get_run(run_ref)
    cases, unusable, tags, skipped = claims_cases(store, run)
    if client is not None and client.cache is None:
        client.cache = store
    batch, unstable, source, version = _claims_batch(client, cases)
    batch.errors.update(unusable)
    rows: list[_Row] = [(i, "", v.to_dict(), None) for i, v in batch.verdicts.items()]
    rows += [(i, "", None, error) for i, error in batch.errors.items()]
    calibration = _store_verdicts(
        store, run, "claims", rows, batch, source=source, version=version, ids=[]
    )
    per_item = {i: v.metrics for i, v in batch.verdicts.items()}
    metrics: dict[str, float] = {}
    for name in CLAIM_METRICS:
        values = {i: m[name] for i, m in per_item.items() if name in m}
        if values:
            metrics[name] = _merge_metric(store, store.get_run(run.id), name, values)
    flips = [s for shaky in unstable.values() for s in shaky]
    return RunJudgement(
        run=store.get_run(run.id),
        judge="claims",
        source=source,
        n_cases=len(cases) + len(unusable),
        n_verdicts=len(batch.verdicts),
        errors=dict(batch.errors),
        skipped=skipped,
        usage=batch.usage.to_dict(),
        calibration=calibration,
        metrics=metrics,
        stability={
            "repeats": client.repeats if client else 1,
            "unstable": sorted(unstable),
            "n_unstable": len(unstable),
            "expected_flips": expected_flips(flips),
        },
        by_tag=_by_tag(per_item, tags),
    )


def calibrate(
    items: Sequence[CalibrationItem],
    *,
    client: JudgeClient | None = None,
    store: Store | None = None,
    set_name: str = "calibration",
    judge: str = "faithfulness",
) -> tuple[Calibration, JudgeBatch[Any]]:
    """Judge a calibration set and compare with the people's labels.

    Every item is judged; agreement and kappa use the labelled ones. People's labels are the items' ``label`` fields, overridden by labels stored
    with ``ragmeter judge label`` under ``set_name``. With a ``store`` the result is
    saved, so runs judged by the same model and prompt show as calibrated.
    ``judge="claims"`` calibrates the claims judge (issue 17.5): its verdict on an item is
    "supported" when no chunk fails to entail an answer claim (``hallucination`` = 0).
    """
    human = {item.id: item.label for item in items if item.label is not None}
    if store is not None:
        human.update(store.labels(set_name))
    # Unlabelled items are judged too: they feed the corrected faithfulness and
    # `calibrate --suggest` (issue 17); agreement counts only the labelled ones.
    cases = [item.case() for item in items]
    batch: JudgeBatch[Any]
    if judge == "claims":
        if store is not None and client is not None and client.cache is None:
            client.cache = store
        batch, _, model, version = _claims_batch(client, [item.claims_case() for item in items])
    elif client is None:
        batch, model, version = judge_lexical(cases), "lexical", LEXICAL_VERSION
    else:
        if store is not None and client.cache is None:
            client.cache = store
        batch = judge_faithfulness(client, cases)
        model, version = client.model, FAITHFULNESS.version
    judged = {i: "supported" if v.supported else "unsupported" for i, v in batch.verdicts.items()}
    reasons = {i: _reason(v) for i, v in batch.verdicts.items()}
    result = agreement_report(
        {i: str(label) for i, label in human.items()}, judged, reasons=reasons
    )
    if store is not None:
        store.save_calibration(
            model=model,
            prompt_version=version,
            set_name=set_name,
            config=batch.judge,
            result=result.to_dict(),
        )
    return result, batch


def _reason(verdict: FaithfulnessVerdict | ClaimsVerdict) -> str:
    if isinstance(verdict, FaithfulnessVerdict):
        return verdict.reason
    missing = verdict.unsupported_claims
    return f"no chunk entails: {'; '.join(missing)}" if missing else "every claim entailed"
