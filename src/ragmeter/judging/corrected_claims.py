"""A run's claim metrics corrected by people's claim labels (issue 17.2 for claims).

People label the claims judge's decisions on a random sample of a run's questions
(``ragmeter judge claim-labels export|import``, :mod:`ragmeter.judging.claim_label_files`); their
:class:`~ragmeter.judge.claims.ClaimsVerdict` (the judge's claims, chunks and relevance,
people's decisions) gives each labelled question's metrics through the same
:func:`~ragmeter.metrics.claims.claim_metrics` as the judge's. Then, per claim metric:

- **judge values**: every question whose judge verdict defines the metric;
- **labelled pairs**: the labelled questions where *both* the judge's and the people's
  verdicts define it;
- the estimate is :func:`~ragmeter.metrics.uncertainty.ppi_mean` over them (cut to [0, 1]).

Which metrics can be undefined under one side only: the claims and the reference answer are
shared, so ``hallucination``, ``context_claim_recall`` and the ``noise_sensitivity`` metrics
are defined for the judge exactly when they are for people. ``context_utilisation`` is not:
its denominator (reference claims some chunk entails) depends on the decisions. A labelled
question where one side leaves it undefined is no pair for it (a difference with one side
missing is not a measurement of the judge's bias); the question still counts among the judge
values when the judge defines it.
"""

from __future__ import annotations

from typing import Any

from ragmeter.errors import ClaimLabelError
from ragmeter.judging.claim_label_files import claims_verdicts, judged_questions
from ragmeter.judging.claim_labels import ClaimLabels
from ragmeter.metrics.claims import CLAIM_METRICS
from ragmeter.metrics.uncertainty import JudgedMean, ppi_mean

__all__ = ["corrected_claims"]

#: Stale questions named in the error before "and N more".
_SHOWN_STALE = 10


def corrected_claims(store: Any, run_id: int) -> dict[str, JudgedMean]:
    """Each claim metric of the run: the judge mean, corrected by people's claim labels.

    ``{}`` when the run was never claims-judged; a metric without labelled pairs is an
    uncalibrated :class:`~ragmeter.metrics.uncertainty.JudgedMean`. Labels given on claims
    the judge has since replaced (the run was re-judged with another split) raise
    ``ClaimLabelError`` naming the questions: pairing them with the new claims would be a
    number that looks right and is not.

    >>> from ragmeter.store import Store
    >>> with Store.memory() as store:
    ...     corrected_claims(store, 1)
    {}
    """
    verdicts = claims_verdicts(store, run_id)
    if not verdicts:
        return {}
    # In question-id order: the same store gives the same figures, to the last bit.
    judge = {item: verdicts[item].metrics for item in sorted(verdicts)}
    stored = {
        item: ClaimLabels.from_dict(row["labels"])
        for item, row in store.claim_labels(run_id).items()
    }
    # The contexts are read only when there are labels to check against them.
    judged = judged_questions(store, run_id) if stored else {}
    stale = [
        item
        for item, labels in stored.items()
        if item in judged and not labels.matches(judged[item].verdict, judged[item].chunk_ids)
    ]
    if stale:
        shown = ", ".join(stale[:_SHOWN_STALE]) + (" …" if len(stale) > _SHOWN_STALE else "")
        raise ClaimLabelError(
            f"run {run_id}: the claim labels of {len(stale)} question(s) ({shown}) were given "
            "on claims the judge has since replaced (the run was re-judged); export them "
            f"again (ragmeter judge claim-labels export {run_id}) and label them afresh"
        )
    # Labels of a question the judge failed on since cannot measure its bias: left out.
    human = {
        item: labels.verdict(judged[item].verdict).metrics
        for item, labels in stored.items()
        if item in judged
    }
    out: dict[str, JudgedMean] = {}
    for name in CLAIM_METRICS:
        values = [m[name] for m in judge.values() if name in m]
        if not values:
            continue
        pairs = [item for item, m in human.items() if name in m and name in judge[item]]
        out[name] = ppi_mean(
            values, [judge[i][name] for i in pairs], [human[i][name] for i in pairs]
        )
    return out
