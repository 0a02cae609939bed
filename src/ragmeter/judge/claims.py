"""Claim-level diagnosis (issue 17.5): split answers into claims, check each against each chunk.

The judge splits the answer and, when the gold item has one, the ``reference_answer`` into
atomic claims (prompt ``claims/1``), then decides entailment (prompt ``claim-check/1``) for

- every answer claim against every retrieved chunk and against the reference answer;
- every reference claim against every retrieved chunk and against the answer.

From those tables :func:`ragmeter.metrics.claims.claim_metrics` gives
``context_claim_recall``, ``hallucination``, ``noise_sensitivity`` (relevant and irrelevant
chunks apart) and ``context_utilisation``. :func:`judge_claims` asks a model;
:func:`judge_claims_lexical` is the offline approximation (claims = sentences, entailment =
the lexical rule of :mod:`ragmeter.judge.lexical`).

>>> case = ClaimsCase("q1", "How long?", "Refunds take 30 days.",
...                   ("Refunds are accepted within 30 days.",), (True,),
...                   reference="Refunds are accepted for 30 days.")
>>> verdict = judge_claims_lexical([case]).verdicts["q1"]
>>> verdict.answer_claims, verdict.metrics["hallucination"], verdict.supported
(('Refunds take 30 days.',), 0.0, True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragmeter.judge._claim_checks import check_pairs, once
from ragmeter.judge._types import JudgeBatch, JudgeRequest, Usage
from ragmeter.judge.lexical import LEXICAL_CLAIMS_VERSION, lexical_claims, lexical_entails
from ragmeter.judge.prompts import CLAIM_CHECK, CLAIMS, prompt_hash
from ragmeter.judge.stability import Stability
from ragmeter.metrics.claims import claim_metrics

__all__ = [
    "CLAIMS_VERSION",
    "ClaimsCase",
    "ClaimsVerdict",
    "judge_claims",
    "judge_claims_lexical",
    "mean_metrics",
]

#: The claims judge's prompt version: both prompts it sends, as one identity.
CLAIMS_VERSION = f"{CLAIMS.version}+{CLAIM_CHECK.version}"

Entails = Callable[[str, str], bool]


@dataclass(frozen=True, slots=True)
class ClaimsCase:
    """One answered question: the answer, the chunks it saw (relevant or not), the reference."""

    id: str
    question: str
    answer: str
    context: tuple[str, ...]
    relevant: tuple[bool, ...]
    reference: str | None = None


def _table(rows: Any) -> tuple[tuple[bool, ...], ...]:
    return tuple(tuple(bool(x) for x in row) for row in rows or ())


@dataclass(frozen=True)
class ClaimsVerdict:
    """The claims of one question and every entailment decision about them.

    ``answer_in_chunks[i][k]``: chunk k entails answer claim i. ``answer_in_reference`` is
    ``None`` when the item has no reference answer.
    """

    answer_claims: tuple[str, ...]
    relevant: tuple[bool, ...]
    answer_in_chunks: tuple[tuple[bool, ...], ...]
    answer_in_reference: tuple[bool, ...] | None = None
    reference_claims: tuple[str, ...] = ()
    reference_in_chunks: tuple[tuple[bool, ...], ...] = ()
    reference_in_answer: tuple[bool, ...] = ()

    @property
    def metrics(self) -> dict[str, float]:
        return claim_metrics(
            answer_in_chunks=self.answer_in_chunks,
            relevant=self.relevant,
            answer_in_reference=self.answer_in_reference,
            reference_in_chunks=self.reference_in_chunks,
            reference_in_answer=self.reference_in_answer,
        )

    @property
    def supported(self) -> bool:
        """Every answer claim is entailed by some chunk (the faithfulness reading)."""
        return all(any(row) for row in self.answer_in_chunks)

    @property
    def unsupported_claims(self) -> tuple[str, ...]:
        return tuple(
            c
            for c, row in zip(self.answer_claims, self.answer_in_chunks, strict=True)
            if not any(row)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer_claims": list(self.answer_claims),
            "reference_claims": list(self.reference_claims),
            "relevant": list(self.relevant),
            "answer_in_chunks": [list(r) for r in self.answer_in_chunks],
            "answer_in_reference": (
                None if self.answer_in_reference is None else list(self.answer_in_reference)
            ),
            "reference_in_chunks": [list(r) for r in self.reference_in_chunks],
            "reference_in_answer": list(self.reference_in_answer),
            "supported": self.supported,
            "unsupported_claims": list(self.unsupported_claims),
            "metrics": self.metrics,
        }

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> ClaimsVerdict:
        """Read a stored verdict back (the ``metrics`` are recomputed, not trusted)."""
        in_reference = value.get("answer_in_reference")
        return cls(
            answer_claims=tuple(str(c) for c in value.get("answer_claims") or ()),
            relevant=tuple(bool(x) for x in value.get("relevant") or ()),
            answer_in_chunks=_table(value.get("answer_in_chunks")),
            answer_in_reference=None
            if in_reference is None
            else tuple(bool(x) for x in in_reference),
            reference_claims=tuple(str(c) for c in value.get("reference_claims") or ()),
            reference_in_chunks=_table(value.get("reference_in_chunks")),
            reference_in_answer=tuple(bool(x) for x in value.get("reference_in_answer") or ()),
        )


def build_verdict(
    case: ClaimsCase,
    answer_claims: Sequence[str],
    reference_claims: Sequence[str],
    entails: Entails,
) -> ClaimsVerdict:
    """Fill a verdict's tables by asking ``entails(claim, premise)`` for every pair."""
    has_reference = case.reference is not None
    return ClaimsVerdict(
        answer_claims=tuple(answer_claims),
        relevant=case.relevant,
        answer_in_chunks=tuple(
            tuple(entails(claim, chunk) for chunk in case.context) for claim in answer_claims
        ),
        answer_in_reference=tuple(entails(c, case.reference) for c in answer_claims)
        if case.reference is not None
        else None,
        reference_claims=tuple(reference_claims) if has_reference else (),
        reference_in_chunks=tuple(
            tuple(entails(claim, chunk) for chunk in case.context) for claim in reference_claims
        )
        if has_reference
        else (),
        reference_in_answer=tuple(entails(c, case.answer) for c in reference_claims)
        if has_reference
        else (),
    )


def mean_metrics(verdicts: Mapping[str, ClaimsVerdict]) -> dict[str, tuple[float, int]]:
    """Each claim metric's mean over the verdicts where it is defined, and how many those are.

    >>> v = ClaimsVerdict(("a",), (True,), ((False,),))
    >>> mean_metrics({"q1": v, "q2": ClaimsVerdict(("a",), (True,), ((True,),))})
    {'hallucination': (0.5, 2)}
    """
    from ragmeter.metrics.claims import CLAIM_METRICS

    per_item = [v.metrics for v in verdicts.values()]
    out: dict[str, tuple[float, int]] = {}
    for name in CLAIM_METRICS:
        values = [m[name] for m in per_item if name in m]
        if values:
            out[name] = (sum(values) / len(values), len(values))
    return out


def lexical_identity() -> dict[str, Any]:
    """The offline claims judge's identity (the rule is the version)."""
    return {
        "model": "lexical",
        "prompt_version": LEXICAL_CLAIMS_VERSION,
        "prompt_hash": prompt_hash(LEXICAL_CLAIMS_VERSION),
        "repeats": 1,
    }


def judge_claims_lexical(cases: Sequence[ClaimsCase]) -> JudgeBatch[ClaimsVerdict]:
    """The offline claims judge: sentences for claims, the lexical rule for entailment."""
    batch: JudgeBatch[ClaimsVerdict] = JudgeBatch(judge=lexical_identity())
    for case in cases:
        reference = lexical_claims(case.reference) if case.reference is not None else []
        batch.verdicts[case.id] = build_verdict(
            case, lexical_claims(case.answer), reference, lexical_entails
        )
    return batch


def _pairs(case: ClaimsCase, answer: Sequence[str], reference: Sequence[str]) -> list[Any]:
    premises = list(case.context)
    pairs = [(claim, p) for claim in answer for p in premises]
    if case.reference is not None:
        pairs += [(claim, case.reference) for claim in answer]
        pairs += [(claim, p) for claim in reference for p in [*premises, case.answer]]
    return pairs


def judge_claims(
    client: Any, cases: Sequence[ClaimsCase]
) -> tuple[JudgeBatch[ClaimsVerdict], dict[str, list[Stability]]]:
    """Judge every case with a model; failures are recorded per case, never raised.

    Returns the batch and, with ``repeats > 1``, each case's pair decisions whose repeats
    disagreed. Claim extraction is sent once per text (a list of claims is not a vote);
    the entailment checks are repeated. With an executor other than the local one (Ray) both the
    extraction and every repeat of the checks run on the workers; the cache stays here.
    """
    usage = Usage()
    texts: dict[str, tuple[str, str]] = {}
    for case in cases:
        texts[f"{case.id}\x1fanswer"] = (case.question, case.answer)
        if case.reference is not None:
            texts[f"{case.id}\x1freference"] = (case.question, case.reference)
    requests = [
        JudgeRequest(
            id=key,
            messages=CLAIMS.messages(question=question, text=text),
            inputs={"question": question, "text": text},
        )
        for key, (question, text) in texts.items()
    ]
    results, spent = once(client).judge_many(
        requests, schema=CLAIMS.schema, prompt_version=CLAIMS.version
    )
    usage.add(spent)
    claims = {r.id: [str(c) for c in r.value["claims"]] for r in results if r.value is not None}
    failed = {r.id.split("\x1f")[0]: r.error or "no claims" for r in results if r.value is None}
    ready = [c for c in cases if c.id not in failed]
    split = {
        c.id: (claims[f"{c.id}\x1fanswer"], claims.get(f"{c.id}\x1freference", [])) for c in ready
    }
    checks = check_pairs(client, [p for c in ready for p in _pairs(c, *split[c.id])], usage)
    batch: JudgeBatch[ClaimsVerdict] = JudgeBatch(
        usage=usage,
        judge={
            **client.describe(),
            "prompt_version": CLAIMS_VERSION,
            "prompt_hash": prompt_hash(CLAIMS.digest, CLAIM_CHECK.digest),
            "repeats": client.repeats,
        },
    )
    batch.errors.update({i: f"claim extraction failed: {e}" for i, e in failed.items()})
    unstable: dict[str, list[Stability]] = {}
    for case in ready:
        pairs = _pairs(case, *split[case.id])
        broken = next((checks.errors[p] for p in pairs if p in checks.errors), None)
        if broken is not None:
            batch.errors[case.id] = f"claim check failed: {broken}"
            continue
        batch.verdicts[case.id] = build_verdict(
            case, *split[case.id], lambda claim, premise: checks.entailed[(claim, premise)]
        )
        shaky = [checks.stability[p] for p in dict.fromkeys(pairs) if p in checks.stability]
        if any(s.unstable for s in shaky):
            unstable[case.id] = [s for s in shaky if s.unstable]
    client._price(usage)
    return batch, unstable
