"""A run's judged ``faithful`` with people's labels: the corrected estimate (issue 17.2).

People label a run's answers (the dashboard's label page stores them as a calibration set
named after the run, ``run-<id>``). With the judge's verdicts on every answer, the
prediction-powered estimate (:func:`ragmeter.metrics.uncertainty.ppi_mean`) corrects the
run's ``faithful`` for the judge's bias and gives it an interval. Without labels the plain
mean is reported as "uncalibrated"; without verdicts there is nothing to report.

``gate`` decides a rule on ``faithful`` on these corrected estimates when people's labels
exist (:func:`gate_corrected_drop`, :func:`corrected_value`), and says "uncalibrated" when
it has to fall back to the plain judge mean.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragmeter.metrics.uncertainty import JudgedMean, ppi_mean

__all__ = [
    "LABEL_SET",
    "Corrected",
    "corrected_faithful",
    "corrected_faithful_line",
    "corrected_value",
    "gate_corrected_drop",
    "gate_judged_line",
    "label_set",
    "run_corrected",
    "uncalibrated_note",
]

# Floats: a drop of exactly the allowed amount passes (as in ``gate``).
_ATOL = 1e-12

_JUDGE = "faithfulness"


#: Labels of a run's answers form one calibration set in the store, named after the run
#: (the dashboard's label page writes them; show, report and the run page read them).
LABEL_SET = "run-{id}"


def label_set(run_id: int) -> str:
    """The calibration-set name under which a run's answer labels are stored.

    >>> label_set(7)
    'run-7'
    """
    return LABEL_SET.format(id=run_id)


def corrected_faithful(store: Any, run_id: int, *, label_set: str) -> JudgedMean | None:
    """The run's ``faithful`` corrected by the labels of ``label_set``; None if never judged.

    Answers the judge failed on are left out (they are coverage, not a score), and so are
    labels of answers the judge did not rate: they cannot measure its bias.

    >>> from ragmeter.store import Store
    >>> with Store.memory() as store:
    ...     corrected_faithful(store, 1, label_set="run-1") is None
    True
    """
    verdicts = {
        item: entry["verdict"]
        for (item, _), entry in store.judge_verdicts(run_id, _JUDGE).items()
        if entry.get("verdict") is not None
    }
    if not verdicts:
        return None
    labels = store.labels(label_set)
    judge = {item: 1.0 if verdict.get("supported") else 0.0 for item, verdict in verdicts.items()}
    labelled = [item for item in judge if item in labels]
    return ppi_mean(
        list(judge.values()),
        [judge[item] for item in labelled],
        [1.0 if labels[item] == "supported" else 0.0 for item in labelled],
    )


def corrected_faithful_line(judged: JudgedMean) -> str:
    """One line for ``show``.

    >>> from ragmeter.metrics.uncertainty import ppi_mean
    >>> corrected_faithful_line(ppi_mean([1.0, 0.0], [], []))
    'faithful 0.500 (uncalibrated: no labels)'
    """
    return f"faithful {judged.describe()}"


#: ``{metric: {"a": baseline's, "b": candidate's}}``: what the gate decides judge rules on.
Corrected = Mapping[str, Mapping[str, JudgedMean | None]]


def corrected_value(mean: JudgedMean | None) -> float | None:
    """The number a gate rule is decided on: the corrected estimate, or None when uncalibrated.

    >>> corrected_value(ppi_mean([1.0, 0.0], [1.0, 0.0], [0.0, 0.0])), corrected_value(None)
    (0.0, None)
    """
    return None if mean is None or mean.estimate is None else mean.estimate


def gate_judged_line(metric: str, sides: Mapping[str, JudgedMean | None]) -> str:
    """How ``gate`` shows a judge metric: each side corrected with its interval, or
    "uncalibrated".

    >>> gate_judged_line("faithful", {"a": ppi_mean([1.0, 0.0], [], []), "b": None})
    'faithful: baseline 0.500 (uncalibrated: no labels) -> candidate not judged'
    """

    def one(mean: JudgedMean | None) -> str:
        return "not judged" if mean is None else mean.describe()

    return f"{metric}: baseline {one(sides.get('a'))} -> candidate {one(sides.get('b'))}"


def gate_corrected_drop(
    metric: str, allowed: float, sides: Mapping[str, JudgedMean | None]
) -> tuple[bool, str] | None:
    """A ``--max-drop`` on a judge metric decided on both runs' corrected estimates.

    Returns ``(failed, text)``, or None when either run is uncalibrated (the gate then
    decides on the plain judge means and says so).

    >>> a = ppi_mean([1.0, 1.0, 1.0, 1.0], [1.0, 1.0], [1.0, 1.0])
    >>> b = ppi_mean([1.0, 1.0, 1.0, 1.0], [1.0, 1.0], [0.0, 1.0])
    >>> gate_corrected_drop("faithful", 0.1, {"a": a, "b": b})[0]
    True
    """
    a, b = corrected_value(sides.get("a")), corrected_value(sides.get("b"))
    if a is None or b is None:
        return None
    drop = a - b
    text = (
        f"{metric} (corrected by people's labels) dropped by {drop:.3f} ({a:.3f} -> {b:.3f}), "
        f"more than the allowed {allowed:g} [{gate_judged_line(metric, sides)}]"
    )
    return drop > allowed + _ATOL, text


def uncalibrated_note(metric: str, sides: Mapping[str, JudgedMean | None], rule: str) -> str:
    """The note a judge rule decided on plain judge means gets.

    >>> uncalibrated_note("faithful", {"a": None, "b": None}, "--min")
    'faithful: --min decided on the plain judge mean (uncalibrated: the candidate has no labels)'
    """
    sides_needed = ("b",) if rule == "--min" else ("a", "b")
    which = [w for w in sides_needed if corrected_value(sides.get(w)) is None]
    names = " and ".join({"a": "the baseline", "b": "the candidate"}[w] for w in which)
    verb = "have" if len(which) > 1 else "has"
    return (
        f"{metric}: {rule} decided on the plain judge mean (uncalibrated: {names} {verb} no labels)"
    )


def run_corrected(store: Any, run_a: int, run_b: int) -> dict[str, dict[str, JudgedMean | None]]:
    """What ``check_gate(judged=)`` decides judge rules on, for a baseline and a candidate.

    ``{"faithful": {"a": ..., "b": ...}}`` from each run's own label set, or ``{}`` when
    neither run was judged. ``ragmeter gate`` and the pytest plugin's gate share it.

    >>> from ragmeter.store import Store
    >>> with Store.memory() as store:
    ...     run_corrected(store, 1, 2)
    {}
    """
    faithful = {
        side: corrected_faithful(store, run, label_set=label_set(run))
        for side, run in (("a", run_a), ("b", run_b))
    }
    return {"faithful": faithful} if any(faithful.values()) else {}
