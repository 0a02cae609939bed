"""``ragmeter gate``: turn a diff into pass or fail for CI, with the reasons.

Each gated metric and tag gets one of three verdicts (issue 26, :mod:`ragmeter.compare.verdicts`):
*fail* when the drop is beyond the allowed one and the paired test says it is real,
*pass* when the interval rules such a drop out, *inconclusive* otherwise -- printed with
the smallest drop the gold set could have detected. Inconclusive passes (exit 0) unless
``fail_inconclusive``; ``strict`` restores the raw-threshold gate (any observed drop beyond
the allowed one fails, evidence or not).

Rules (all optional, any number of metrics):

- ``max_drop={"hit@5": 0.02}``: the candidate's mean may fall at most this much
  below the baseline's (for latency, lower is better: it may *rise* at most this
  many milliseconds);
- ``min={"hit@5": 0.7}``: the candidate's mean must be at least this;
- ``tag_max_drop=0.1``: no tag (cluster) may fall by more than this on any gated
  metric -- the metrics named in ``max_drop``/``min``, or every compared metric when
  none is named. This is on by default (0.1): a change that helps one cluster while
  quietly breaking another is exactly what a gate is for. ``None`` turns it off;
- ``require_significance``: with ``strict``, a drop fails only when it is also
  significant (paired randomization test p < ``alpha``; per tag, the Holm-adjusted p).
  Without ``strict`` the evidence rule already requires it. ``min`` is an absolute floor
  and ignores both; so do run-level numbers (latency), which have no per-question test.

A rule on a judge metric with people's labels (``faithful``, issue 17.2) is decided on
the prediction-powered corrected estimate, not the judge's plain mean: ``max_drop``
when both runs have labels, ``min`` when the candidate has. Otherwise the plain mean
decides and a note says "uncalibrated". The paired test does not apply to corrected
estimates, so ``require_significance`` does not soften a corrected drop.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ragmeter.compare.comparison import TagDelta, lower_is_better
from ragmeter.compare.diff import DEFAULT_TAG_DROP, RunDiff
from ragmeter.compare.judged import (
    Corrected,
    corrected_value,
    gate_corrected_drop,
    gate_judged_line,
    uncalibrated_note,
)
from ragmeter.compare.judges import DEFAULT_MIN_KAPPA, calibration_reasons, stability_notes
from ragmeter.compare.markdown import gate_markdown
from ragmeter.compare.verdicts import FAIL, INCONCLUSIVE, Verdict, decide
from ragmeter.errors import ConfigError, InputError

__all__ = ["DEFAULT_ALPHA", "GateResult", "GateRules", "check_gate", "gate_markdown"]

#: Significance level of ``--require-significance``.
DEFAULT_ALPHA = 0.05
#: Floats: a drop of exactly the allowed amount passes even if it came out a hair larger.
_ATOL = 1e-12


def _lower_is_better(metric: str) -> bool:
    return lower_is_better(metric)


def parse_assignment(text: str, flag: str) -> tuple[str, float]:
    """``"hit@5=0.02"`` -> ``("hit@5", 0.02)``, with the metric name made canonical.

    >>> parse_assignment("nDCG@10=0.01", "--max-drop")
    ('ndcg@10', 0.01)
    """
    from ragmeter.metrics import parse_metric

    name, sep, number = text.partition("=")
    if not sep or not name.strip() or not number.strip():
        raise ConfigError(f'{flag} "{text}": expected METRIC=NUMBER, e.g. {flag} hit@5=0.02')
    try:
        value = float(number)
    except ValueError:
        raise ConfigError(f'{flag} "{text}": "{number.strip()}" is not a number') from None
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f'{flag} "{text}": the value must be a finite number >= 0')
    return str(parse_metric(name.strip())), value


@dataclass(frozen=True)
class GateRules:
    """What a candidate run must satisfy; build from CLI strings with :meth:`parse`."""

    max_drop: Mapping[str, float] = field(default_factory=dict)
    min: Mapping[str, float] = field(default_factory=dict)
    tag_max_drop: float | None = DEFAULT_TAG_DROP
    require_significance: bool = False
    alpha: float = DEFAULT_ALPHA
    # Issue 17.6: the candidate's judge metrics must come from a calibrated judge.
    require_calibrated: bool = False
    min_kappa: float = DEFAULT_MIN_KAPPA
    # Issue 26: an inconclusive verdict fails too; or the raw-threshold gate of old.
    fail_inconclusive: bool = False
    strict: bool = False

    def __post_init__(self) -> None:
        if not -1.0 <= self.min_kappa <= 1.0:
            raise ConfigError(f"--min-kappa must be between -1 and 1, got {self.min_kappa}")
        if self.tag_max_drop is not None and not (
            math.isfinite(self.tag_max_drop) and self.tag_max_drop >= 0
        ):
            raise ConfigError(f"--tag-max-drop must be a number >= 0, got {self.tag_max_drop}")
        if not 0.0 < self.alpha < 1.0:
            raise ConfigError(f"alpha must be between 0 and 1, got {self.alpha}")
        for metric in self.min:
            if _lower_is_better(metric):
                what = "latency" if metric.startswith("latency_") else metric
                raise ConfigError(
                    f"--min {metric}: {what} is better when lower, so a minimum makes no "
                    f"sense; use --max-drop {metric}=N to cap how much it may rise"
                )

    @classmethod
    def parse(
        cls,
        max_drop: Iterable[str] = (),
        min: Iterable[str] = (),
        *,
        tag_max_drop: float | None = DEFAULT_TAG_DROP,
        require_significance: bool = False,
        alpha: float = DEFAULT_ALPHA,
        require_calibrated: bool = False,
        min_kappa: float = DEFAULT_MIN_KAPPA,
        fail_inconclusive: bool = False,
        strict: bool = False,
    ) -> GateRules:
        """Rules from ``METRIC=X`` strings, as the CLI receives them.

        >>> GateRules.parse(["hit@5=0.02"], ["mrr=0.5"]).metrics
        ['hit@5', 'mrr']
        """
        return cls(
            max_drop=dict(parse_assignment(t, "--max-drop") for t in max_drop),
            min=dict(parse_assignment(t, "--min") for t in min),
            tag_max_drop=tag_max_drop,
            require_significance=require_significance,
            alpha=alpha,
            require_calibrated=require_calibrated,
            min_kappa=min_kappa,
            fail_inconclusive=fail_inconclusive,
            strict=strict,
        )

    @property
    def metrics(self) -> list[str]:
        """The metrics named by a rule, in the order given."""
        return list(dict.fromkeys([*self.max_drop, *self.min]))

    def describe(self) -> list[str]:
        out = [
            f"{m} may {'rise' if _lower_is_better(m) else 'drop'} at most {x:g}"
            for m, x in self.max_drop.items()
        ]
        out += [f"{m} must be at least {x:g}" for m, x in self.min.items()]
        if self.tag_max_drop is not None:
            out.append(f"no tag may drop more than {self.tag_max_drop:g}")
        if self.strict:
            out.append("strict: any drop beyond the allowed one fails, evidence or not")
            if self.require_significance:
                out.append(f"drops count only when significant (p < {self.alpha:g})")
        else:
            out.append(
                f"a drop fails when it is real (p < {self.alpha:g}, Holm per tag); "
                + ("inconclusive fails" if self.fail_inconclusive else "inconclusive passes")
            )
        if self.require_calibrated:
            out.append(
                f"judge metrics need a calibrated judge (kappa lower bound >= {self.min_kappa:g})"
            )
        return out


@dataclass(frozen=True)
class GateResult:
    """``passed`` and, when it did not, one reason per failing metric or cluster.

    ``notes`` lists drops that exceeded a limit but were not significant (with
    ``require_significance``) -- worth a look, not a failure. ``verdicts`` holds a
    fail/pass/inconclusive verdict per gated metric and tag (issue 26; empty with
    ``strict``); ``inconclusive`` lines say what the gold set could not tell.
    """

    passed: bool
    reasons: list[str]
    notes: list[str] = field(default_factory=list)
    failed_tags: list[TagDelta] = field(default_factory=list)
    rules: GateRules = field(default_factory=GateRules)
    # Judge metrics with each run's corrected (or uncalibrated) mean (issue 17.2).
    judged: Corrected = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)
    inconclusive: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        """``fail``, ``inconclusive`` or ``pass``: the gate as a whole."""
        if self.reasons:
            return FAIL
        return INCONCLUSIVE if self.inconclusive else "pass"

    def judged_lines(self) -> list[str]:
        """One line per judge metric: each run's corrected estimate, or "uncalibrated"."""
        return [gate_judged_line(metric, sides) for metric, sides in self.judged.items()]

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "verdict": self.verdict,
            "reasons": list(self.reasons),
            "notes": list(self.notes),
            "inconclusive": list(self.inconclusive),
            "verdicts": [v.to_dict() for v in self.verdicts],
            "rules": {
                "max_drop": dict(self.rules.max_drop),
                "min": dict(self.rules.min),
                "tag_max_drop": self.rules.tag_max_drop,
                "require_significance": self.rules.require_significance,
                "alpha": self.rules.alpha,
                "require_calibrated": self.rules.require_calibrated,
                "min_kappa": self.rules.min_kappa,
                "fail_inconclusive": self.rules.fail_inconclusive,
                "strict": self.rules.strict,
            },
            "failed_tags": [
                {
                    "tag": t.tag,
                    "metric": t.metric,
                    "n": t.n,
                    "delta": t.delta,
                    "p_holm": t.p_holm,
                    "ci_low": t.ci_low,
                    "ci_high": t.ci_high,
                }
                for t in self.failed_tags
            ],
            "judged": {
                metric: {w: m.to_dict() if m is not None else None for w, m in sides.items()}
                for metric, sides in self.judged.items()
            },
        }


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def check_gate(diff: RunDiff, rules: GateRules, *, judged: Corrected | None = None) -> GateResult:
    """Apply ``rules`` to a diff of baseline (A) and candidate (B).

    ``judged`` maps a judge metric to each run's :class:`~ragmeter.metrics.uncertainty.JudgedMean`
    (``{"faithful": {"a": ..., "b": ...}}``, see ``compare.judged.corrected_faithful``): a
    rule on it is decided on the corrected estimates. A rule naming a metric the diff does
    not have is an :class:`InputError`.

    >>> from ragmeter.compare.comparison import compare_runs
    >>> # see tests/compare/test_gate.py for gates over real stored runs
    >>> GateRules.parse(["hit@5=0.02", "hallucination=0.05"]).describe()[:2]
    ['hit@5 may drop at most 0.02', 'hallucination may rise at most 0.05']
    """
    by_metric = {m.metric: m for m in diff.metrics}
    run_level = {r.metric: r for r in diff.run_level}
    known = sorted([*by_metric, *run_level])
    refused = {r.metric: r for r in diff.judge_refusals}
    reasons: list[str] = [
        f"{r.message()}: the gate cannot compare it"
        for m, r in refused.items()
        if m in rules.max_drop
    ]
    if rules.require_calibrated:
        reasons += calibration_reasons(diff.judges.get("b", {}), rules.min_kappa)
    for metric in rules.metrics:
        if metric in refused:
            continue
        if metric not in by_metric and metric not in run_level:
            raise InputError(
                f'the gate names metric "{metric}" but the diff has no such metric '
                f"(it has: {', '.join(known) or 'none'})"
            )

    notes: list[str] = [r.message() for m, r in refused.items() if m not in rules.max_drop]
    notes += stability_notes(diff.judges.get("b", {}))  # issue 17.4: flagged, not failed
    sig = rules.require_significance
    judged = dict(judged or {})
    evidence: dict[str, float] = {}
    for metric, allowed in rules.max_drop.items():
        if metric in refused:
            continue
        if metric in judged:
            decided = gate_corrected_drop(metric, allowed, judged[metric])
            if decided is not None:
                if decided[0]:
                    reasons.append(decided[1])
                continue
            notes.append(uncalibrated_note(metric, judged[metric], "--max-drop"))
        if metric in run_level:
            r = run_level[metric]
            worse = r.delta if _lower_is_better(metric) else -r.delta
            if worse > allowed + _ATOL:
                verb = "rose" if _lower_is_better(metric) else "dropped"
                reasons.append(
                    f"{metric} {verb} by {worse:.1f} ({r.value_a:.1f} -> {r.value_b:.1f}), "
                    f"more than the allowed {allowed:g}"
                )
            continue
        if not rules.strict:
            evidence[metric] = allowed  # decided below, on evidence (issue 26)
            continue
        m = by_metric[metric]
        drop = m.delta if _lower_is_better(metric) else -m.delta  # hallucination: up is worse
        if drop > allowed + _ATOL:
            verb = "rose" if _lower_is_better(metric) else "dropped"
            text = (
                f"{metric} {verb} by {drop:.3f} ({m.mean_a:.3f} -> {m.mean_b:.3f}), "
                f"more than the allowed {allowed:g} ({_p(m.p_value)})"
            )
            if sig and m.p_value >= rules.alpha:
                notes.append(f"{text}: not significant, not failing")
            else:
                reasons.append(text)
    for metric, floor in rules.min.items():
        candidate = judged[metric].get("b") if metric in judged else None
        corrected = corrected_value(candidate)
        if candidate is not None and corrected is not None:
            if corrected < floor - _ATOL:
                reasons.append(
                    f"{metric} (corrected by people's labels) is {corrected:.3f}, below the "
                    f"minimum {floor:g} [candidate {candidate.describe()}]"
                )
            continue
        if metric in judged:
            notes.append(uncalibrated_note(metric, judged[metric], "--min"))
        if metric in refused:  # a floor needs only the candidate's own number
            value = diff.b.metrics.get(metric, 0.0)
        elif metric in run_level:
            value = run_level[metric].value_b
        else:
            value = by_metric[metric].mean_b
        if value < floor - _ATOL:
            reasons.append(f"{metric} is {value:.3f}, below the minimum {floor:g}")

    failed_tags: list[TagDelta] = []
    gated = set(rules.metrics) or set(by_metric)
    verdicts: list[Verdict] = []
    inconclusive: list[str] = []
    if not rules.strict:
        verdicts = decide(
            diff.comparison,
            max_drop=evidence,
            tag_max_drop=rules.tag_max_drop,
            tag_metrics=gated,
            alpha=rules.alpha,
        )
        reasons, failed_tags, inconclusive = _apply(verdicts, diff, reasons, rules.alpha)
    if rules.tag_max_drop is not None and rules.strict:
        for t in diff.tags:
            sign = -1.0 if _lower_is_better(t.metric) else 1.0  # hallucination: up is worse
            if t.metric not in gated or -sign * t.delta <= rules.tag_max_drop + _ATOL:
                continue
            verb = "rose" if sign < 0 else "dropped"
            text = (
                f'cluster "{t.tag}": {t.metric} {verb} by {-sign * t.delta:.3f} '
                f"({t.mean_a:.3f} -> {t.mean_b:.3f}, n = {t.n}), more than the allowed "
                f"{rules.tag_max_drop:g} (Holm-adjusted {_p(t.p_holm)})"
            )
            total = by_metric[t.metric]
            if sign * total.delta >= 0:
                text += f" although {t.metric} overall went {total.delta:+.3f}"
            if sig and t.p_holm >= rules.alpha:
                notes.append(f"{text}: not significant, not failing")
                continue
            reasons.append(text)
            failed_tags.append(t)
    return GateResult(
        passed=not reasons and not (rules.fail_inconclusive and inconclusive),
        reasons=reasons,
        notes=notes,
        failed_tags=failed_tags,
        rules=rules,
        judged=judged,
        verdicts=verdicts,
        inconclusive=inconclusive,
    )


def _apply(
    verdicts: list[Verdict], diff: RunDiff, reasons: list[str], alpha: float
) -> tuple[list[str], list[TagDelta], list[str]]:
    """Reasons (failures), failed tags and inconclusive lines from the verdicts.

    Inconclusive lines whose observed change is beyond the allowed one come first: those
    are the drops a person should look at; the rest only could not be ruled out.
    """
    reasons = list(reasons)
    failed: list[TagDelta] = []
    tag_rows = {(t.tag, t.metric): t for t in diff.tags}
    by_metric = {m.metric: m for m in diff.metrics}
    tests = {m: sum(1 for t in diff.tags if t.metric == m) for m in by_metric}
    beyond: list[str] = []
    within: dict[str, list[Verdict]] = {}
    for v in verdicts:
        line = v.line(alpha=alpha, tests=tests.get(v.metric, 1) if v.tag is not None else 1)
        if v.verdict == FAIL:
            total = by_metric[v.metric]
            sign = -1.0 if _lower_is_better(v.metric) else 1.0
            if v.tag is not None and sign * total.delta >= 0:
                line += f" although {v.metric} overall went {total.delta:+.3f}"
            reasons.append(line)
            if v.tag is not None:
                failed.append(tag_rows[(v.tag, v.metric)])
        elif v.verdict == INCONCLUSIVE and (v.worse > v.allowed + _ATOL or v.tag is None):
            beyond.append(line)
        elif v.verdict == INCONCLUSIVE:
            within.setdefault(v.metric, []).append(v)
    return reasons, failed, beyond + [_too_small(m, rows) for m, rows in within.items()]


#: Tags named in the one line that sums up the tags too small to rule a drop out.
_NAMED_TAGS = 5


def _too_small(metric: str, rows: list[Verdict]) -> str:
    """One line for the tags that did not drop beyond the limit but cannot rule it out.

    >>> from ragmeter.compare.verdicts import Verdict
    >>> v = Verdict("hit@5", "faq", 20, "inconclusive", 0.0, 0.0, 0.1, 1.0, 1.0, -0.17,
    ...             0.17, 1.0, 0.35)
    >>> _too_small("hit@5", [v])
    'hit@5: 1 tag within the allowed 0.1 cannot rule out a larger drop (too few questions): faq (n = 20, detects >= 0.35)'
    """
    named = ", ".join(
        f"{v.tag} (n = {v.n}, "
        + ("detects >= " + f"{v.detectable:.2f}" if v.detectable is not None else "none alone")
        + ")"
        for v in rows[:_NAMED_TAGS]
    )
    more = f" and {len(rows) - _NAMED_TAGS} more" if len(rows) > _NAMED_TAGS else ""
    change = "rise" if _lower_is_better(metric) else "drop"
    count = f"{len(rows)} tag{'s' if len(rows) != 1 else ''}"
    return (
        f"{metric}: {count} within the allowed {rows[0].allowed:g} "
        f"cannot rule out a larger {change} (too few questions): "
        f"{named}{more}"
    )
