"""Claim-level metrics of one answer (issue 17.5), after RAGChecker (Ru et al., NeurIPS 2024).

The judge splits the answer into claims ``a_1..a_n`` and the gold reference answer into
claims ``r_1..r_m``, and decides entailment for every claim against every retrieved chunk
``c_1..c_K`` (plus answer claims against the reference text, reference claims against the
answer text). Chunks are relevant or not per the gold set. Then, per question:

- ``context_claim_recall`` = |{r : some chunk entails r}| / m
- ``hallucination`` = |{a : no chunk entails a}| / n
- ``noise_sensitivity_relevant`` = |{a : a incorrect, some relevant chunk entails a}| / n
- ``noise_sensitivity_irrelevant`` = |{a : a incorrect, no relevant but some irrelevant
  chunk entails a}| / n
- ``noise_sensitivity`` = the sum of the two (incorrect claims entailed by any chunk)
- ``context_utilisation`` = |{r : some chunk entails r, the answer entails r}|
  / |{r : some chunk entails r}|

where *incorrect* means "not entailed by the reference answer". A metric whose denominator
is zero, or that needs a reference the gold item lacks, is left out (absent, never 0).

>>> m = claim_metrics(
...     answer_in_chunks=[[True, False], [False, True], [False, False]],
...     answer_in_reference=[True, False, False],
...     reference_in_chunks=[[True, False], [False, False]],
...     reference_in_answer=[True, False],
...     relevant=[True, False])
>>> {name: round(value, 3) for name, value in m.items()}  # doctest: +NORMALIZE_WHITESPACE
{'hallucination': 0.333, 'context_claim_recall': 0.5, 'noise_sensitivity_relevant': 0.0,
 'noise_sensitivity_irrelevant': 0.333, 'noise_sensitivity': 0.333, 'context_utilisation': 1.0}
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragmeter.metrics._base import Family, register

__all__ = ["CLAIM_METRICS", "claim_metrics"]

_CITATION = "Ru et al., RAGChecker, NeurIPS 2024 (datasets and benchmarks track)"


def _family(name: str, summary: str, formula: str, *, lower_is_better: bool = False) -> Family:
    return register(
        Family(
            name=name,
            kind="judge",
            cutoff="none",
            summary=summary,
            formula=formula,
            citation=_CITATION,
            lower_is_better=lower_is_better,
        )
    )


_FAMILIES = (
    _family(
        "context_claim_recall",
        "Share of the reference answer's claims that some retrieved chunk entails "
        "(did retrieval bring the facts the answer needs?). Needs `reference_answer`.",
        "context_claim_recall = |{r : exists c, c entails r}| / |R|",
    ),
    _family(
        "hallucination",
        "Share of the answer's claims that no retrieved chunk entails (RAGChecker's "
        "hallucination plus self-knowledge: a true claim absent from the context counts).",
        "hallucination = |{a : for all c, c does not entail a}| / |A|",
        lower_is_better=True,
    ),
    _family(
        "noise_sensitivity",
        "Share of the answer's claims that are incorrect (not entailed by the reference) "
        "yet entailed by a retrieved chunk. Needs `reference_answer`.",
        "noise_sensitivity = |{a : ref does not entail a, exists c, c entails a}| / |A|",
        lower_is_better=True,
    ),
    _family(
        "noise_sensitivity_relevant",
        "The part of `noise_sensitivity` copied from a relevant chunk (per the gold set).",
        "|{a : ref does not entail a, exists relevant c, c entails a}| / |A|",
        lower_is_better=True,
    ),
    _family(
        "noise_sensitivity_irrelevant",
        "The part of `noise_sensitivity` entailed only by irrelevant chunks.",
        "|{a : ref does not entail a, no relevant c entails a, exists irrelevant c entails a}|"
        " / |A|",
        lower_is_better=True,
    ),
    _family(
        "context_utilisation",
        "Of the reference claims the context holds, the share the answer also states.",
        "|{r : exists c entails r, answer entails r}| / |{r : exists c entails r}|",
    ),
)
#: The claim metrics, in report order.
CLAIM_METRICS: tuple[str, ...] = tuple(f.name for f in _FAMILIES)


def _matrix(rows: Sequence[Sequence[bool]], columns: int) -> np.ndarray:
    if not rows:
        return np.zeros((0, columns), dtype=bool)
    out = np.asarray(rows, dtype=bool).reshape(len(rows), -1)
    if out.shape[1] != columns:
        raise ValueError(f"entailment rows have {out.shape[1]} chunks, expected {columns}")
    return out


def claim_metrics(
    *,
    answer_in_chunks: Sequence[Sequence[bool]],
    relevant: Sequence[bool],
    answer_in_reference: Sequence[bool] | None = None,
    reference_in_chunks: Sequence[Sequence[bool]] = (),
    reference_in_answer: Sequence[bool] = (),
) -> dict[str, float]:
    """The claim metrics of one question from its entailment tables (see the module doc).

    ``answer_in_chunks[i][k]``: chunk k entails answer claim i; ``relevant[k]``: chunk k is
    relevant per the gold set; ``answer_in_reference`` is ``None`` when the item has no
    reference answer (then only ``hallucination`` is defined).

    >>> claim_metrics(answer_in_chunks=[[False]], relevant=[True])
    {'hallucination': 1.0}
    >>> claim_metrics(answer_in_chunks=[], relevant=[])
    {}
    """
    chunks = len(relevant)
    rel = np.asarray(relevant, dtype=bool).reshape(chunks)
    answer = _matrix(answer_in_chunks, chunks)
    out: dict[str, float] = {}
    n = answer.shape[0]
    if n:
        out["hallucination"] = float((~answer.any(axis=1)).mean())
    if answer_in_reference is None:
        return out
    reference = _matrix(reference_in_chunks, chunks)
    m = reference.shape[0]
    if m:
        out["context_claim_recall"] = float(reference.any(axis=1).mean())
    if n:
        incorrect = ~np.asarray(answer_in_reference, dtype=bool).reshape(n)
        by_relevant = answer[:, rel].any(axis=1)
        by_irrelevant = answer[:, ~rel].any(axis=1) & ~by_relevant
        out["noise_sensitivity_relevant"] = float((incorrect & by_relevant).mean())
        out["noise_sensitivity_irrelevant"] = float((incorrect & by_irrelevant).mean())
        out["noise_sensitivity"] = float((incorrect & (by_relevant | by_irrelevant)).mean())
    in_context = reference.any(axis=1) if m else np.zeros(0, dtype=bool)
    if in_context.any():
        stated = np.asarray(reference_in_answer, dtype=bool).reshape(m)
        out["context_utilisation"] = float((in_context & stated).sum() / in_context.sum())
    return out
