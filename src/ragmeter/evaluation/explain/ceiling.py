"""The measured ceiling of each knob: the misses it would recover and the metric it would reach.

A knob "recovers" a miss when one of the miss's causes is that knob's (the evidence
came from a probe: a covering unit seen within the top k). For hybrid search that is not
enough: the other retriever finding it is the cause, but the knob recovers the miss only
when RRF of the run's ranking and the other's puts a covering unit within k (``fused_rank``). The ceiling is the hit rate
if the knob recovered exactly those misses and lost nothing — an upper bound, which
``explain --verify`` checks by running the knob.

>>> from ragmeter.evaluation.explain.model import Cause, MissExplanation
>>> dense = lambda fused: Cause("other_retriever", "dense: rank 2", {"fused_rank": fused})
>>> misses = [MissExplanation("q1", "?", ["faq"], [Cause("ranked_too_low", "rank 7")]),
...           MissExplanation("q2", "?", ["faq"], [dense(9)])]
>>> [c.line() for c in knob_ceilings(misses, k=5, n_evaluated=10, n_hits=8,
...                                  tags={"faq": (4, 2)})]
['re-ranking: recovers 1 of 2 misses → hit@5 ≤ 0.90 (now 0.80)']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragmeter.evaluation.explain.model import KNOBS, KnobCeiling, MissExplanation

__all__ = ["knob_ceilings"]


def knob_ceilings(
    misses: Sequence[MissExplanation],
    *,
    k: int,
    n_evaluated: int,
    n_hits: int,
    tags: Mapping[str, tuple[int, int]],
) -> list[KnobCeiling]:
    """One :class:`KnobCeiling` per knob that recovers a miss, most recovered first.

    ``tags`` is ``tag -> (questions, misses)`` over the run's answered questions.
    """
    metric = f"hit@{k}"
    value = n_hits / n_evaluated if n_evaluated else 0.0
    out: list[KnobCeiling] = []
    for knob in dict.fromkeys(KNOBS.values()):
        recovered = [m for m in misses if _recovers(m, knob, k)]
        if not recovered:
            continue
        out.append(
            KnobCeiling(
                knob=knob,
                metric=metric,
                recovered=len(recovered),
                misses=len(misses),
                value=value,
                ceiling=(n_hits + len(recovered)) / n_evaluated if n_evaluated else 0.0,
                items=[m.item_id for m in recovered],
                by_tag=_by_tag(recovered, tags),
            )
        )
    return sorted(out, key=lambda c: (-c.recovered, c.knob))


def _recovers(miss: MissExplanation, knob: str, k: int) -> bool:
    """Whether the knob recovers ``miss``: one of its causes is the knob's — for hybrid search,
    an *other retriever* cause whose RRF-fused rank is within k (the fusion the knob runs)."""
    if knob != KNOBS["other_retriever"]:
        return knob in miss.knobs
    return any(
        c.kind == "other_retriever"
        and c.evidence.get("fused_rank") is not None
        and int(c.evidence["fused_rank"]) <= k
        for c in miss.causes
    )


def _by_tag(
    recovered: Sequence[MissExplanation], tags: Mapping[str, tuple[int, int]]
) -> list[dict[str, object]]:
    counts: dict[str, int] = {}
    for miss in recovered:
        for tag in dict.fromkeys(miss.tags):
            counts[tag] = counts.get(tag, 0) + 1
    rows: list[dict[str, object]] = []
    for tag, n_recovered in counts.items():
        n, n_missed = tags.get(tag, (0, 0))
        if not n:
            continue
        rows.append(
            {
                "tag": tag,
                "n": n,
                "misses": n_missed,
                "recovered": n_recovered,
                "hit_rate": (n - n_missed) / n,
                "ceiling": (n - n_missed + n_recovered) / n,
            }
        )
    return sorted(rows, key=lambda r: (-int(r["recovered"]), str(r["tag"])))  # type: ignore[call-overload]
