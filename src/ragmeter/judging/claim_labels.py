"""People's labels of one question's claim decisions, and the verdict they make (issue 17.2).

People label the claims judge's *decisions*, not its splitting: for the judge's own claims
of a question (:class:`~ragmeter.judge.claims.ClaimsVerdict`), a person says

- for each **answer claim**: ``supported_by``, the ids of the question's chunks that entail
  it (``[]`` = none), and ``correct``, whether the reference answer entails it (only when the
  item has a reference answer);
- for each **reference claim**: ``in_chunks``, the ids of the chunks that entail it, and
  ``in_answer``, whether the answer entails it.

:meth:`ClaimLabels.verdict` turns those into a ``ClaimsVerdict`` with the judge's claims,
chunk order and chunk relevance, so the people's per-question claim metrics come from the
very same :func:`~ragmeter.metrics.claims.claim_metrics` as the judge's.

>>> from ragmeter.judge.claims import ClaimsVerdict
>>> judge = ClaimsVerdict(("Refunds take 30 days.",), (True, False), ((True, False),))
>>> entry = blank_entry("q1", judge, chunk_ids=("a#0", "b#0"))
>>> entry["answer_claims"]
[{'claim': 'Refunds take 30 days.', 'supported_by': None}]
>>> read_entry(entry, judge, chunk_ids=("a#0", "b#0"), where="q1") is None   # not filled
True
>>> entry["answer_claims"][0]["supported_by"] = []                 # no chunk entails it
>>> people = read_entry(entry, judge, chunk_ids=("a#0", "b#0"), where="q1")
>>> judge.metrics["hallucination"], people.verdict(judge).metrics["hallucination"]
(0.0, 1.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragmeter.errors import ClaimLabelError
from ragmeter.judge.claims import ClaimsVerdict

__all__ = [
    "ANSWER_FIELDS",
    "REFERENCE_FIELDS",
    "ClaimLabels",
    "blank_entry",
    "read_entry",
]

#: The decisions a person gives on each answer claim and on each reference claim.
ANSWER_FIELDS = ("supported_by", "correct")
REFERENCE_FIELDS = ("in_chunks", "in_answer")
#: Characters of a claim quoted in an error message.
_QUOTED_CHARS = 60


def _quoted(claim: str) -> str:
    short = claim if len(claim) <= _QUOTED_CHARS else claim[: _QUOTED_CHARS - 1] + "…"
    return '"' + short.replace("\n", " ") + '"'


@dataclass(frozen=True)
class ClaimLabels:
    """Every decision people made on one question's claims (complete: no decision missing).

    ``correct`` is ``None`` when the item has no reference answer (then there are no
    reference claims either). Chunk ids are the question's context, in the judge's order.
    """

    chunks: tuple[str, ...]
    answer_claims: tuple[str, ...]
    supported_by: tuple[frozenset[str], ...]
    correct: tuple[bool, ...] | None
    reference_claims: tuple[str, ...] = ()
    in_chunks: tuple[frozenset[str], ...] = ()
    in_answer: tuple[bool, ...] = ()

    def matches(self, judge: ClaimsVerdict, chunk_ids: Sequence[str]) -> bool:
        """True while ``judge`` still has the claims and chunks these labels were given on."""
        return (
            self.answer_claims == judge.answer_claims
            and self.reference_claims == judge.reference_claims
            and self.chunks == tuple(chunk_ids)
            and (self.correct is None) == (judge.answer_in_reference is None)
        )

    def verdict(self, judge: ClaimsVerdict) -> ClaimsVerdict:
        """The people's verdict: the judge's claims, chunks and relevance; people's decisions.

        A chunk id that occurs twice in a context (a retriever returned it twice) entails
        at each of its places, as the judge saw the same text at both.
        """

        def row(ids: frozenset[str]) -> tuple[bool, ...]:
            return tuple(chunk in ids for chunk in self.chunks)

        return ClaimsVerdict(
            answer_claims=judge.answer_claims,
            relevant=judge.relevant,
            answer_in_chunks=tuple(row(ids) for ids in self.supported_by),
            answer_in_reference=self.correct,
            reference_claims=judge.reference_claims,
            reference_in_chunks=tuple(row(ids) for ids in self.in_chunks),
            reference_in_answer=self.in_answer,
        )

    def to_dict(self) -> dict[str, Any]:
        """The stored form (the file's fields, sorted chunk lists)."""
        answer: list[dict[str, Any]] = [
            {"claim": claim, "supported_by": sorted(ids)}
            for claim, ids in zip(self.answer_claims, self.supported_by, strict=True)
        ]
        if self.correct is not None:
            for entry, correct in zip(answer, self.correct, strict=True):
                entry["correct"] = correct
        return {
            "chunks": list(self.chunks),
            "has_reference": self.correct is not None,
            "answer_claims": answer,
            "reference_claims": [
                {"claim": claim, "in_chunks": sorted(ids), "in_answer": stated}
                for claim, ids, stated in zip(
                    self.reference_claims, self.in_chunks, self.in_answer, strict=True
                )
            ],
        }

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> ClaimLabels:
        """Read the stored form back."""
        answer = list(value.get("answer_claims") or [])
        reference = list(value.get("reference_claims") or [])
        return cls(
            chunks=tuple(str(c) for c in value.get("chunks") or ()),
            answer_claims=tuple(str(a["claim"]) for a in answer),
            supported_by=tuple(frozenset(a["supported_by"]) for a in answer),
            correct=tuple(bool(a["correct"]) for a in answer)
            if value.get("has_reference")
            else None,
            reference_claims=tuple(str(r["claim"]) for r in reference),
            in_chunks=tuple(frozenset(r["in_chunks"]) for r in reference),
            in_answer=tuple(bool(r["in_answer"]) for r in reference),
        )


def blank_entry(
    item_id: str,
    judge: ClaimsVerdict,
    *,
    chunk_ids: Sequence[str],
    question: str = "",
    answer: str = "",
    reference: str | None = None,
    chunk_texts: Sequence[str] = (),
) -> dict[str, Any]:
    """One question of a labels file with every decision ``None``.

    Never pre-filled with the judge's decisions: people shown the judge's answer tend to
    agree with it, and the correction would then measure less of the judge's bias.
    """
    has_reference = judge.answer_in_reference is not None
    texts = list(chunk_texts) or [""] * len(chunk_ids)
    answer_claims: list[dict[str, Any]] = []
    for claim in judge.answer_claims:
        entry: dict[str, Any] = {"claim": claim, "supported_by": None}
        if has_reference:
            entry["correct"] = None
        answer_claims.append(entry)
    return {
        "id": item_id,
        "question": question,
        "answer": answer,
        "reference": reference if has_reference else None,
        "chunks": [
            {"id": chunk, "relevant": relevant, "text": text}
            for chunk, relevant, text in zip(chunk_ids, judge.relevant, texts, strict=True)
        ],
        "answer_claims": answer_claims,
        "reference_claims": [
            {"claim": claim, "in_chunks": None, "in_answer": None}
            for claim in judge.reference_claims
        ],
    }


_QUESTION_KEYS = frozenset(
    {"id", "question", "answer", "reference", "chunks", "answer_claims", "reference_claims"}
)


class _Reader:
    """Collects every problem of one question, so one import names them all."""

    def __init__(self, where: str, chunk_ids: Sequence[str]) -> None:
        self.where = where
        self.chunk_ids = tuple(chunk_ids)
        self.problems: list[str] = []
        self.missing = 0

    def fail(self, message: str) -> None:
        self.problems.append(f"{self.where}: {message}")

    def chunks(self, value: Any, at: str) -> frozenset[str] | None:
        if value is None:
            self.missing += 1
            return None
        if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
            self.fail(f"{at}: expected a list of chunk ids ([] = no chunk), got {value!r}")
            return None
        unknown = [c for c in value if c not in self.chunk_ids]
        if unknown:
            self.fail(
                f"{at}: {unknown[0]!r} is not one of this question's chunks "
                f"({', '.join(self.chunk_ids) or 'none'})"
            )
            return None
        return frozenset(value)

    def flag(self, value: Any, at: str) -> bool | None:
        if value is None:
            self.missing += 1
            return None
        if not isinstance(value, bool):
            self.fail(f"{at}: expected true or false, got {value!r}")
            return None
        return value

    def claims(
        self, value: Any, field: str, expected: Sequence[str], keys: tuple[str, ...]
    ) -> list[dict[str, Any]] | None:
        entries = [] if value is None else value
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            self.fail(f"{field}: expected a list of {{claim, ...}} entries")
            return None
        texts = [e.get("claim") for e in entries]
        if texts != list(expected):
            self.fail(
                f"{field}: the claims no longer match the stored claims judge's "
                f"({len(texts)} in the file, {len(expected)} stored; the run was re-judged "
                "since the export?): export this question again and label it afresh"
            )
            return None
        for number, entry in enumerate(entries, start=1):
            extra = sorted(set(entry) - {"claim", *keys})
            if extra:
                self.fail(
                    f"{field} {number} {_quoted(str(entry['claim']))}: unknown field "
                    f"{extra[0]!r}; the fields are {', '.join(keys)}"
                )
        return entries


def read_entry(
    entry: Any, judge: ClaimsVerdict, *, chunk_ids: Sequence[str], where: str
) -> ClaimLabels | None:
    """Check one question of a labels file against the judge's verdict on it.

    Returns the labels, or ``None`` when some decision is still ``null`` (not fully
    labelled). Every problem (claims that no longer match the judge's, a chunk id not among
    the question's, a value of the wrong type, an unknown field) is named, with the
    question, claim and field, in one :class:`~ragmeter.errors.ClaimLabelError`.
    """
    reader = _Reader(where, chunk_ids)
    if not isinstance(entry, dict):
        raise ClaimLabelError(f"{where}: expected a mapping with id, answer_claims, ...")
    extra = sorted(set(entry) - _QUESTION_KEYS)
    if extra:
        known = ", ".join(sorted(_QUESTION_KEYS))
        reader.fail(f"unknown field {extra[0]!r}; the fields are {known}")
    has_reference = judge.answer_in_reference is not None
    answer = reader.claims(
        entry.get("answer_claims"), "answer_claims", judge.answer_claims, ANSWER_FIELDS
    )
    reference = reader.claims(
        entry.get("reference_claims"),
        "reference_claims",
        judge.reference_claims,
        REFERENCE_FIELDS,
    )
    supported, correct, in_chunks, in_answer = [], [], [], []
    for number, claim in enumerate(answer or [], start=1):
        at = f"answer claim {number} {_quoted(claim['claim'])}"
        supported.append(reader.chunks(claim.get("supported_by"), f"{at} supported_by"))
        if has_reference:
            correct.append(reader.flag(claim.get("correct"), f"{at} correct"))
        elif claim.get("correct") is not None:
            reader.fail(f"{at} correct: the item has no reference answer, so this stays null")
    for number, claim in enumerate(reference or [], start=1):
        at = f"reference claim {number} {_quoted(claim['claim'])}"
        in_chunks.append(reader.chunks(claim.get("in_chunks"), f"{at} in_chunks"))
        in_answer.append(reader.flag(claim.get("in_answer"), f"{at} in_answer"))
    if reader.problems:
        raise ClaimLabelError("\n".join(reader.problems))
    if reader.missing:
        return None
    return ClaimLabels(
        chunks=tuple(chunk_ids),
        answer_claims=judge.answer_claims,
        supported_by=tuple(s for s in supported if s is not None),
        correct=tuple(c for c in correct if c is not None) if has_reference else None,
        reference_claims=judge.reference_claims,
        in_chunks=tuple(s for s in in_chunks if s is not None),
        in_answer=tuple(a for a in in_answer if a is not None),
    )
