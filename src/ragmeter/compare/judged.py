"""A run's judged ``faithful`` with people's labels: the corrected estimate (issue 17.2).

People label a run's answers (the dashboard's label page stores them as a calibration set
named after the run, ``run-<id>``). With the judge's verdicts on every answer, the
prediction-powered estimate (:func:`ragmeter.metrics.uncertainty.ppi_mean`) corrects the
run's ``faithful`` for the judge's bias and gives it an interval. Without labels the plain
mean is reported as "uncalibrated"; without verdicts there is nothing to report.
"""

from __future__ import annotations

from typing import Any

from ragmeter.metrics.uncertainty import JudgedMean, ppi_mean

__all__ = ["corrected_faithful", "corrected_faithful_line"]

_JUDGE = "faithfulness"


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
