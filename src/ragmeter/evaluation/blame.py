"""Blame per question: did retrieval or generation fail?

A question *failed* when its answer check failed (``answer_ok`` = 0) or a judge
found the answer unsupported (``faithful`` = 0). Then:

- ``retrieval`` — no relevant chunk was in the context the generator saw: fix the
  retriever (chunking, k, hybrid search);
- ``generation`` — a relevant chunk was there: fix the prompt or the model.

Questions that passed are ``ok``; questions with nothing to judge (no answer, or
no check and no verdict) get no blame (``None``).

Finer blame from claims (issue 17.5, :func:`claim_blame`), first match wins:

- ``retrieval`` — the retrieved context lacks a claim of the reference answer
  (``context_claim_recall`` < 1);
- ``generation: hallucination`` — an answer claim no chunk entails (``hallucination`` > 0);
- ``generation: noise`` — an incorrect answer claim copied from a chunk
  (``noise_sensitivity`` > 0);
- ``ok`` — the context holds every reference claim and the answer adds nothing
  unsupported or wrong; if the coarse rule still saw a failure (a failed answer check),
  the answer left out what the context held: ``generation``.

Without a reference answer only hallucination can be told apart, and a question the coarse
rule blames on retrieval (no relevant chunk in the context) stays ``retrieval``; otherwise
the coarse blame stands. Runs judged before claims existed keep the coarse blame.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Literal

__all__ = ["BLAMES", "FINE_BLAMES", "Blame", "blame", "blame_columns", "claim_blame", "count_blame"]

Blame = Literal["ok", "retrieval", "generation", "generation: hallucination", "generation: noise"]
BLAMES: tuple[Blame, ...] = ("retrieval", "generation", "ok")
#: Every blame, in report order, once claims are judged.
FINE_BLAMES: tuple[Blame, ...] = (
    "retrieval",
    "generation: hallucination",
    "generation: noise",
    "generation",
    "ok",
)


def blame(
    *, answer_ok: bool | None, faithful: bool | None, relevant_in_context: bool
) -> Blame | None:
    """Where one question's failure happened.

    >>> blame(answer_ok=False, faithful=None, relevant_in_context=False)
    'retrieval'
    >>> blame(answer_ok=True, faithful=False, relevant_in_context=True)
    'generation'
    >>> blame(answer_ok=True, faithful=None, relevant_in_context=False)
    'ok'
    >>> blame(answer_ok=None, faithful=None, relevant_in_context=True) is None
    True
    """
    if answer_ok is None and faithful is None:
        return None
    if answer_ok is False or faithful is False:
        return "generation" if relevant_in_context else "retrieval"
    return "ok"


def claim_blame(coarse: Blame | None, metrics: Mapping[str, float] | None) -> Blame | None:
    """The finer blame of one question from its claim metrics (None: not judged).

    >>> claim_blame("ok", {"context_claim_recall": 0.5, "hallucination": 0.0})
    'retrieval'
    >>> claim_blame("generation", {"context_claim_recall": 1.0, "hallucination": 0.25})
    'generation: hallucination'
    >>> claim_blame(None, {"context_claim_recall": 1.0, "hallucination": 0.0,
    ...                    "noise_sensitivity": 0.5})
    'generation: noise'
    >>> claim_blame("generation", {"context_claim_recall": 1.0, "noise_sensitivity": 0.0})
    'generation'
    >>> claim_blame("retrieval", {"hallucination": 0.0})  # no reference: coarse stands
    'retrieval'
    >>> claim_blame("retrieval", {"hallucination": 0.5})  # nothing relevant reached it
    'retrieval'
    >>> claim_blame("generation", {"hallucination": 0.5})
    'generation: hallucination'
    """
    if metrics is None:
        return coarse
    has_reference = "context_claim_recall" in metrics
    if metrics.get("context_claim_recall", 1.0) < 1.0:
        return "retrieval"
    if not has_reference and coarse == "retrieval":
        # No reference to tell what the context lacked; no relevant chunk reached the
        # generator, and that comes first.
        return "retrieval"
    if metrics.get("hallucination", 0.0) > 0.0:
        return "generation: hallucination"
    if metrics.get("noise_sensitivity", 0.0) > 0.0:
        return "generation: noise"
    if not has_reference:
        return coarse
    return "ok" if coarse in (None, "ok") else "generation"


def count_blame(blames: Iterable[Blame | None], *, fine: bool = False) -> dict[str, int]:
    """Counts per blame, every tag present (0 when none); the finer tags appear when
    ``fine`` (claims were judged) or some question has one.

    >>> count_blame(["retrieval", "ok", None, "retrieval"])
    {'retrieval': 2, 'generation': 0, 'ok': 1}
    >>> count_blame(["generation: noise", "ok"])  # doctest: +NORMALIZE_WHITESPACE
    {'retrieval': 0, 'generation: hallucination': 0, 'generation: noise': 1,
     'generation': 0, 'ok': 1}
    """
    counts = Counter(b for b in blames if b is not None)
    tags = FINE_BLAMES if fine or set(counts) - set(BLAMES) else BLAMES
    return {tag: counts.get(tag, 0) for tag in tags}


def blame_columns(*counts: Mapping[str, Mapping[str, int]]) -> list[str]:
    """The blame columns of per-tag counts, in report order (the failures, not ``ok``).

    >>> blame_columns({"faq": {"retrieval": 1, "generation": 0, "ok": 2}})
    ['retrieval', 'generation']
    """
    seen = {name for table in counts for row in table.values() for name in row}
    return [tag for tag in FINE_BLAMES if tag in seen and tag != "ok"]
