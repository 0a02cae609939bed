"""What ``explain`` finds: a cause per miss with its evidence, and the ceiling of each knob.

A :class:`Cause` is only ever recorded with the measurement that supports it (a rank seen
when the question was asked again, an overlap counted, an offset read from the index);
a miss that no probe could explain is ``unexplained``, never given a likely-sounding
cause. Everything here is plain data that round-trips through JSON (the store keeps it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "CAUSES",
    "KNOBS",
    "UNEXPLAINED",
    "Cause",
    "Explanation",
    "KnobCeiling",
    "MissExplanation",
]

#: Cause name -> the knob that addresses it (the order is the order causes are listed in).
KNOBS: Mapping[str, str] = {
    "not_in_index": "indexing",
    "ranked_too_low": "re-ranking",
    "other_retriever": "hybrid search",
    "vocabulary": "query rewriting",
    "chunking": "chunking",
    "gold_may_be_wrong": "gold set",
}
CAUSES: tuple[str, ...] = tuple(KNOBS)
#: What a miss with no supported cause says.
UNEXPLAINED = "unexplained"


@dataclass(frozen=True)
class Cause:
    """One reason a question was missed, with the evidence that shows it.

    ``suggestion`` is set for ``gold_may_be_wrong``: the gold edit, in the fields the
    dashboard's "mark relevant" form posts (``/api/gold-edits``).

    >>> c = Cause("ranked_too_low", "first covering unit at rank 14 of 50", {"rank": 14})
    >>> c.knob, Cause.from_dict(c.to_dict()) == c
    ('re-ranking', True)
    """

    kind: str
    summary: str
    evidence: Mapping[str, Any] = field(default_factory=dict)
    suggestion: Mapping[str, Any] | None = None

    @property
    def knob(self) -> str:
        return KNOBS[self.kind]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"cause": self.kind, "knob": self.knob, "summary": self.summary}
        out["evidence"] = dict(self.evidence)
        if self.suggestion is not None:
            out["suggestion"] = dict(self.suggestion)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Cause:
        return cls(
            str(data["cause"]),
            str(data["summary"]),
            dict(data.get("evidence") or {}),
            dict(data["suggestion"]) if data.get("suggestion") is not None else None,
        )


@dataclass(frozen=True)
class MissExplanation:
    """The causes of one missed question (none: ``unexplained``) and probe notes."""

    item_id: str
    question: str
    tags: Sequence[str]
    causes: Sequence[Cause] = ()
    notes: Sequence[str] = ()

    @property
    def kinds(self) -> list[str]:
        """The cause names, or ``["unexplained"]``."""
        return [c.kind for c in self.causes] or [UNEXPLAINED]

    @property
    def knobs(self) -> list[str]:
        return list(dict.fromkeys(c.knob for c in self.causes))

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.item_id,
            "question": self.question,
            "tags": list(self.tags),
            "causes": [c.to_dict() for c in self.causes],
            "why": self.why(),
            "notes": list(self.notes),
        }

    def why(self) -> str:
        """One line: each cause with its evidence, ``unexplained`` when there is none.

        >>> MissExplanation("q", "?", [], [Cause("ranked_too_low", "rank 14 of 50")]).why()
        'ranked too low: rank 14 of 50'
        """
        if not self.causes:
            return UNEXPLAINED
        return " · ".join(f"{c.kind.replace('_', ' ')}: {c.summary}" for c in self.causes)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MissExplanation:
        return cls(
            str(data["id"]),
            str(data.get("question", "")),
            [str(t) for t in data.get("tags") or ()],
            [Cause.from_dict(c) for c in data.get("causes") or ()],
            [str(n) for n in data.get("notes") or ()],
        )


@dataclass(frozen=True)
class KnobCeiling:
    """How many misses one knob would recover, and the metric if it recovered exactly those.

    ``by_tag``: ``{"tag", "n", "misses", "recovered", "hit_rate", "ceiling"}`` per tag
    with a miss the knob recovers, most recovered first.
    """

    knob: str
    metric: str
    recovered: int
    misses: int
    value: float
    ceiling: float
    items: Sequence[str] = ()
    by_tag: Sequence[Mapping[str, Any]] = ()

    def line(self) -> str:
        """``re-ranking: recovers 9 of 14 misses → hit@5 ≤ 0.87``."""
        return (
            f"{self.knob}: recovers {self.recovered} of {self.misses} misses → "
            f"{self.metric} ≤ {self.ceiling:.2f} (now {self.value:.2f})"
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["items"] = list(self.items)
        out["by_tag"] = [dict(t) for t in self.by_tag]
        out["line"] = self.line()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> KnobCeiling:
        return cls(
            str(data["knob"]),
            str(data["metric"]),
            int(data["recovered"]),
            int(data["misses"]),
            float(data["value"]),
            float(data["ceiling"]),
            [str(i) for i in data.get("items") or ()],
            [dict(t) for t in data.get("by_tag") or ()],
        )


@dataclass(frozen=True)
class Explanation:
    """Every miss of one run explained, the knob ceilings, and what could not be probed.

    ``skipped`` maps a probe to the reason it did not run (no ``--corpus``, no model);
    ``notes`` are run-level facts a reader needs (a run file's depth); ``verify`` holds
    the ``--verify`` results, one dict per knob ragmeter ran itself.
    """

    run_id: int
    k: int
    level: str
    depth: int
    metric: str
    n_evaluated: int
    n_hits: int
    misses: Sequence[MissExplanation]
    knobs: Sequence[KnobCeiling] = ()
    skipped: Mapping[str, str] = field(default_factory=dict)
    notes: Sequence[str] = ()
    verify: Sequence[Mapping[str, Any]] = ()
    seconds: float = 0.0
    created: str = ""

    def of(self, item_id: str) -> MissExplanation | None:
        """The explanation of one missed question, if it was missed."""
        return next((m for m in self.misses if m.item_id == item_id), None)

    def select(self, causes: Sequence[str] = ()) -> list[MissExplanation]:
        """The misses with one of ``causes`` (``unexplained`` included); all when empty."""
        return [m for m in self.misses if not causes or set(m.kinds) & set(causes)]

    def counts(self) -> dict[str, int]:
        """Misses per cause (``unexplained`` included), in :data:`CAUSES` order."""
        out = {name: 0 for name in (*CAUSES, UNEXPLAINED)}
        for miss in self.misses:
            for kind in dict.fromkeys(miss.kinds):
                out[kind] += 1
        return {name: n for name, n in out.items() if n}

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "k": self.k,
            "level": self.level,
            "depth": self.depth,
            "metric": self.metric,
            "n_evaluated": self.n_evaluated,
            "n_hits": self.n_hits,
            "counts": self.counts(),
            "knobs": [knob.to_dict() for knob in self.knobs],
            "misses": [m.to_dict() for m in self.misses],
            "skipped": dict(self.skipped),
            "notes": list(self.notes),
            "verify": [dict(v) for v in self.verify],
            "seconds": self.seconds,
            "created": self.created,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Explanation:
        return cls(
            run_id=int(data["run"]),
            k=int(data["k"]),
            level=str(data["level"]),
            depth=int(data["depth"]),
            metric=str(data["metric"]),
            n_evaluated=int(data["n_evaluated"]),
            n_hits=int(data["n_hits"]),
            misses=[MissExplanation.from_dict(m) for m in data.get("misses") or ()],
            knobs=[KnobCeiling.from_dict(k) for k in data.get("knobs") or ()],
            skipped={str(k): str(v) for k, v in (data.get("skipped") or {}).items()},
            notes=[str(n) for n in data.get("notes") or ()],
            verify=[dict(v) for v in data.get("verify") or ()],
            seconds=float(data.get("seconds") or 0.0),
            created=str(data.get("created") or ""),
        )
