"""Blame per question: did retrieval or generation fail?

A question *failed* when its answer check failed (``answer_ok`` = 0) or a judge
found the answer unsupported (``faithful`` = 0). Then:

- ``retrieval`` — no relevant chunk was in the context the generator saw: fix the
  retriever (chunking, k, hybrid search);
- ``generation`` — a relevant chunk was there: fix the prompt or the model.

Questions that passed are ``ok``; questions with nothing to judge (no answer, or
no check and no verdict) get no blame (``None``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Literal

__all__ = ["BLAMES", "Blame", "blame", "count_blame"]

Blame = Literal["ok", "retrieval", "generation"]
BLAMES: tuple[Blame, ...] = ("retrieval", "generation", "ok")


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


def count_blame(blames: Iterable[Blame | None]) -> dict[str, int]:
    """Counts per blame, every tag present (0 when none).

    >>> count_blame(["retrieval", "ok", None, "retrieval"])
    {'retrieval': 2, 'generation': 0, 'ok': 1}
    """
    counts = Counter(b for b in blames if b is not None)
    return {tag: counts.get(tag, 0) for tag in BLAMES}
