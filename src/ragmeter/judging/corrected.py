"""A run's judge metrics with people's labels: the corrected estimates (issue 17.2).

Every judge metric of a run comes from one *source*: a function ``(store, run_id) ->
{metric: JudgedMean}`` that pairs the judge's per-question values with people's values on
the questions they labelled (``_SOURCES``; :func:`corrected_metrics` merges them). A source
returns nothing for a run its judge never rated, and an uncalibrated
:class:`~ragmeter.metrics.uncertainty.JudgedMean` when there are verdicts but no labels.

``faithful``: people label a run's answers (the dashboard's label page stores them as a calibration set
named after the run, ``run-<id>``). With the judge's verdicts on every answer, the
prediction-powered estimate (:func:`ragmeter.metrics.uncertainty.ppi_mean`) corrects the
run's ``faithful`` for the judge's bias and gives it an interval. Without labels the plain
mean is reported as "uncalibrated"; without verdicts there is nothing to report.

The claim metrics (``hallucination``, ``context_claim_recall``, ...): people label the claims
judge's decisions (``ragmeter judge claim-labels``), and
:func:`ragmeter.judging.corrected_claims.corrected_claims` is their source.

Judge-filled ranking metrics (a run rescored with ``judge relevance --fill-with-judge``):
people grade the chunks the judge graded, on a random sample of questions
(``judge relevance-labels``); :func:`ragmeter.judging.corrected_relevance.corrected_relevance`.

``gate`` decides a rule on ``faithful`` on these corrected estimates when people's labels
exist (:func:`gate_corrected_drop`, :func:`corrected_value`), and says "uncalibrated" when
it has to fall back to the plain judge mean.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ragmeter.judging.corrected_claims import corrected_claims
from ragmeter.judging.corrected_relevance import corrected_relevance
from ragmeter.metrics import lower_is_better
from ragmeter.metrics.uncertainty import JudgedMean, ppi_mean

__all__ = [
    "LABEL_SET",
    "Corrected",
    "corrected_faithful",
    "corrected_faithful_line",
    "corrected_line",
    "corrected_metrics",
    "corrected_value",
    "gate_corrected_drop",
    "gate_corrected_line",
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
    return corrected_line("faithful", judged)


def corrected_line(metric: str, judged: JudgedMean) -> str:
    """One line per judge metric for ``show``, ``diff`` and the static report.

    >>> corrected_line("hallucination", ppi_mean([0.5, 0.0], [], []))
    'hallucination 0.250 (uncalibrated: no labels)'
    """
    return f"{metric} {judged.describe()}"


#: A source of corrected judge metrics: ``(store, run_id) -> {metric: JudgedMean}``.
Source = Callable[[Any, int], Mapping[str, JudgedMean]]


def _faithful_source(store: Any, run_id: int) -> dict[str, JudgedMean]:
    judged = corrected_faithful(store, run_id, label_set=label_set(run_id))
    return {} if judged is None else {"faithful": judged}


#: Every judge metric's source, in the order reports list them (claim metrics: issue 17.2,
#: corrected by people's claim labels, ``ragmeter judge claim-labels``; judge-filled ranking
#: metrics, ``--fill-with-judge``, corrected by people's chunk grades,
#: ``ragmeter judge relevance-labels``).
_SOURCES: tuple[Source, ...] = (_faithful_source, corrected_claims, corrected_relevance)


def corrected_metrics(store: Any, run_id: int) -> dict[str, JudgedMean]:
    """Every judge metric of a run, corrected by people's labels where there are some.

    ``{metric: JudgedMean}``; a metric whose judge never rated the run is absent, one
    with verdicts but no labels is there as "uncalibrated".

    >>> from ragmeter.store import Store
    >>> with Store.memory() as store:
    ...     corrected_metrics(store, 1)
    {}
    """
    out: dict[str, JudgedMean] = {}
    for source in _SOURCES:
        out.update(source(store, run_id))
    return out


#: ``{metric: {"a": baseline's, "b": candidate's}}``: what the gate decides judge rules on.
Corrected = Mapping[str, Mapping[str, JudgedMean | None]]


def corrected_value(mean: JudgedMean | None) -> float | None:
    """The number a gate rule is decided on: the corrected estimate, or None when uncalibrated.

    >>> corrected_value(ppi_mean([1.0, 0.0], [1.0, 0.0], [0.0, 0.0])), corrected_value(None)
    (0.0, None)
    """
    return None if mean is None or mean.estimate is None else mean.estimate


def gate_corrected_line(metric: str, sides: Mapping[str, JudgedMean | None]) -> str:
    """How ``gate`` shows a judge metric: each side corrected with its interval, or
    "uncalibrated".

    >>> gate_corrected_line("faithful", {"a": ppi_mean([1.0, 0.0], [], []), "b": None})
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
    decides on the plain judge means and says so). For a lower-is-better metric
    (``hallucination``, ``noise_sensitivity``) a rise is the regression.

    >>> a = ppi_mean([1.0, 1.0, 1.0, 1.0], [1.0, 1.0], [1.0, 1.0])
    >>> b = ppi_mean([1.0, 1.0, 1.0, 1.0], [1.0, 1.0], [0.0, 1.0])
    >>> gate_corrected_drop("faithful", 0.1, {"a": a, "b": b})[0]
    True
    >>> gate_corrected_drop("hallucination", 0.1, {"a": a, "b": b})[0]  # it fell: better
    False
    """
    a, b = corrected_value(sides.get("a")), corrected_value(sides.get("b"))
    if a is None or b is None:
        return None
    lower = lower_is_better(metric)
    drop = b - a if lower else a - b
    verb = "rose" if lower else "dropped"
    text = (
        f"{metric} (corrected by people's labels) {verb} by {drop:.3f} ({a:.3f} -> {b:.3f}), "
        f"more than the allowed {allowed:g} [{gate_corrected_line(metric, sides)}]"
    )
    return drop > allowed + _ATOL, text


def uncalibrated_note(metric: str, sides: Mapping[str, JudgedMean | None], rule: str) -> str:
    """The note a judge rule decided on plain judge means gets.

    >>> uncalibrated_note("faithful", {"a": None, "b": ppi_mean([1.0], [], [])}, "--min")
    'faithful: --min decided on the plain judge mean (uncalibrated: the candidate has no labels)'
    >>> uncalibrated_note("faithful", {"a": None, "b": ppi_mean([1.0], [], [])}, "--max-drop")
    'faithful: --max-drop decided on the plain judge mean (uncalibrated: the baseline was not judged and the candidate has no labels)'
    """  # noqa: E501
    sides_needed = ("b",) if rule == "--min" else ("a", "b")
    name = {"a": "the baseline", "b": "the candidate"}
    why = [
        f"{name[w]} {'was not judged' if sides.get(w) is None else 'has no labels'}"
        for w in sides_needed
        if corrected_value(sides.get(w)) is None
    ]
    if len(why) == 2 and why[0].endswith("has no labels") and why[1].endswith("has no labels"):
        why = ["the baseline and the candidate have no labels"]
    return f"{metric}: {rule} decided on the plain judge mean (uncalibrated: {' and '.join(why)})"


def run_corrected(store: Any, run_a: int, run_b: int) -> dict[str, dict[str, JudgedMean | None]]:
    """What ``check_gate(judged=)`` decides judge rules on, for a baseline and a candidate.

    ``{metric: {"a": ..., "b": ...}}`` for every judge metric either run has (a side
    whose judge never rated it is None), or ``{}`` when neither run was judged.
    ``ragmeter gate``, ``diff`` and the pytest plugin's gate share it.

    >>> from ragmeter.store import Store
    >>> with Store.memory() as store:
    ...     run_corrected(store, 1, 2)
    {}
    """
    sides = {"a": corrected_metrics(store, run_a), "b": corrected_metrics(store, run_b)}
    names = [*sides["a"], *(m for m in sides["b"] if m not in sides["a"])]
    return {name: {side: sides[side].get(name) for side in ("a", "b")} for name in names}
