"""Judge metrics across runs: which judge made them, and whether to trust them (issue 17.6).

A judge metric (``faithful``; the claim metrics of ``judge claims``; the ranking metrics of a run rescored with judge labels,
``labels = "gold+judge"``) is only as comparable as its judges: a delta between two
models, or two prompts, measures the judges, not the change. :func:`judge_sides` reads
what each run's judges were; :func:`refusals` lists the judge metrics ``diff`` must not
subtract; :func:`calibration_reasons` is what ``gate --require-calibrated`` fails on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragmeter.errors import MetricNameError
from ragmeter.judging.identity import JudgeIdentity
from ragmeter.metrics import parse_metric
from ragmeter.metrics.claims import CLAIM_METRICS
from ragmeter.run import RunInfo

if TYPE_CHECKING:
    from ragmeter.store import Store

__all__ = [
    "DEFAULT_MIN_KAPPA",
    "JudgeRefusal",
    "JudgeSide",
    "calibration_reasons",
    "judge_metrics",
    "judge_sides",
    "refusals",
    "stability_notes",
    "unstable_verdicts",
]

#: ``gate --require-calibrated`` fails when the lower bound of the judge's kappa interval
#: is under this: 0.4 is the bottom of "moderate" agreement (Landis & Koch 1977), and the
#: *lower bound* must clear it, so a judge calibrated on few labels does not pass by luck.
DEFAULT_MIN_KAPPA = 0.4


@dataclass(frozen=True)
class JudgeSide:
    """One judge of one run: its identity, calibration (or None) and the metrics it made."""

    judge: str
    identity: JudgeIdentity
    calibration: Mapping[str, Any] | None
    metrics: tuple[str, ...]
    # Verdicts whose repeats disagreed (issue 17.4): "item" or "item chunk".
    unstable: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "identity": self.identity.to_dict(),
            "calibration": dict(self.calibration) if self.calibration is not None else None,
            "metrics": list(self.metrics),
            "unstable": list(self.unstable),
        }


@dataclass(frozen=True)
class JudgeRefusal:
    """A judge metric both runs have but ``diff`` will not subtract, and why."""

    metric: str
    judge: str
    a: JudgeIdentity
    b: JudgeIdentity
    differences: tuple[str, ...]

    def message(self) -> str:
        """The line ``diff`` prints instead of a delta.

        >>> r = JudgeRefusal("faithful", "faithfulness", JudgeIdentity("m1", "f/1"),
        ...                  JudgeIdentity("m2", "f/1"), ("model 'm1' vs 'm2'",))
        >>> r.message()
        "faithful not compared: the faithfulness judges differ (model 'm1' vs 'm2')"
        """
        return (
            f"{self.metric} not compared: the {self.judge} judges differ "
            f"({'; '.join(self.differences)})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "judge": self.judge,
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "differences": list(self.differences),
            "reason": self.message(),
        }


def judge_metrics(run: RunInfo, judge: str, names: Sequence[str]) -> tuple[str, ...]:
    """The metrics among ``names`` that ``judge`` produced for ``run``.

    >>> run = RunInfo(id=1, name="r", created="", gold_hash="", retriever="", k=5,
    ...               level="doc", status="complete", config={"labels": "gold+judge"})
    >>> judge_metrics(run, "relevance", ["hit@5", "faithful", "latency_p50_ms"])
    ('hit@5',)
    >>> judge_metrics(run, "faithfulness", ["hit@5", "faithful"])
    ('faithful',)
    """
    if judge == "faithfulness":
        return tuple(n for n in names if n == "faithful")
    if judge == "claims":
        return tuple(n for n in names if n in CLAIM_METRICS)
    if judge == "relevance" and run.config.get("labels") == "gold+judge":
        return tuple(n for n in names if _is_ranking(n))
    return ()


def _is_ranking(name: str) -> bool:
    try:
        return parse_metric(name).kind == "ranking"
    except MetricNameError:  # a name no metric spells (latency) is not a judge metric
        return False


def judge_sides(store: Store, run: RunInfo, names: Sequence[str]) -> dict[str, JudgeSide]:
    """judge -> what judged ``run`` (only judges that produced one of ``names``)."""
    out: dict[str, JudgeSide] = {}
    for judge, entry in store.judge_runs(run.id).items():
        made = judge_metrics(run, judge, names)
        if made:
            identity = JudgeIdentity.from_config(entry["config"])
            unstable = tuple(unstable_verdicts(store, run.id, judge))
            out[judge] = JudgeSide(judge, identity, entry["calibration"], made, unstable)
    return out


def unstable_verdicts(store: Store, run_id: int, judge: str) -> list[str]:
    """The verdicts of ``judge`` on a run whose repeats disagreed, as ``item`` or
    ``item chunk`` (empty when the judge ran once per request)."""
    out: list[str] = []
    for (item, target), entry in sorted(store.judge_verdicts(run_id, judge).items()):
        counts = ((entry["verdict"] or {}).get("stability") or {}).get("counts") or {}
        if len(counts) > 1:
            out.append(f"{item} {target}" if target else item)
    return out


def stability_notes(sides: Mapping[str, JudgeSide]) -> list[str]:
    """One line per judge with unstable verdicts: flagged by the gate, not failed.

    >>> side = JudgeSide("faithfulness", JudgeIdentity("m", "f/1"), None, ("faithful",), ("q1",))
    >>> stability_notes({"faithfulness": side})
    ['faithful: 1 faithfulness verdict(s) unstable across repeats: q1']
    """
    out: list[str] = []
    for judge, side in sorted(sides.items()):
        if side.unstable:
            shown = ", ".join(side.unstable[:10]) + (" …" if len(side.unstable) > 10 else "")
            out.append(
                f"{', '.join(side.metrics)}: {len(side.unstable)} {judge} verdict(s) "
                f"unstable across repeats: {shown}"
            )
    return out


def refusals(a: Mapping[str, JudgeSide], b: Mapping[str, JudgeSide]) -> list[JudgeRefusal]:
    """The judge metrics of both runs whose judges differ (model, prompt, parameters…).

    A metric judged in one run only (or by a judge the other run lacks) is refused too:
    one side is a judge's number and the other is not.
    """
    out: list[JudgeRefusal] = []
    unknown = JudgeIdentity(None, None, repeats=None)
    for judge in sorted(set(a) | set(b)):
        side_a, side_b = a.get(judge), b.get(judge)
        ident_a = side_a.identity if side_a else unknown
        ident_b = side_b.identity if side_b else unknown
        differences = tuple(ident_a.differences(ident_b))
        if side_a is None or side_b is None:
            missing = "A" if side_a is None else "B"
            differences = (f"run {missing} was not judged by a {judge} judge",)
        if not differences:
            continue
        metrics = sorted(
            set(side_a.metrics if side_a else ()) | set(side_b.metrics if side_b else ())
        )
        out += [JudgeRefusal(m, judge, ident_a, ident_b, differences) for m in metrics]
    return out


def calibration_reasons(sides: Mapping[str, JudgeSide], min_kappa: float) -> list[str]:
    """Why the candidate's judge metrics are not trusted (empty: they are).

    A judge with no calibration of its model and prompt, or whose kappa interval's
    lower bound is under ``min_kappa`` (or unknown), makes every metric it produced fail.
    """
    out: list[str] = []
    for judge, side in sorted(sides.items()):
        names = ", ".join(side.metrics)
        who = f"{side.identity.model} (prompt {side.identity.prompt_version})"
        calibration = side.calibration
        if calibration is None:
            out.append(
                f"{names}: the {judge} judge {who} has no calibration "
                "(run `ragmeter judge calibrate`)"
            )
            continue
        interval = calibration.get("kappa_interval")
        if not interval or interval[0] is None:
            out.append(
                f"{names}: the {judge} judge {who} has no kappa interval "
                f"(calibration {calibration.get('id')}: too few labels to tell)"
            )
        elif interval[0] < min_kappa:
            out.append(
                f"{names}: the {judge} judge {who} has kappa's 95% interval "
                f"[{interval[0]:.2f}, {interval[1]:.2f}], lower bound under {min_kappa:g}"
            )
    return out
