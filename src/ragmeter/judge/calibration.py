"""Calibration: does the judge agree with people, and how much more than chance?

Agreement is the share of items where judge and person give the same label.
Cohen's kappa corrects it for chance (Cohen 1960)::

    kappa = (p_o - p_e) / (1 - p_e),   p_e = sum over labels of p_person(l) * p_judge(l)

A judge that disagrees with people on more than ``DISAGREEMENT_LIMIT`` of the items
is flagged: tighten the prompt before trusting it at scale.

A calibration set is a YAML list of ``{id, question, context: [{doc, text}], answer,
label: supported|unsupported, unsupported_claims}``; ``examples/calibration.yaml`` is one.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ragmeter.errors import InputError, located
from ragmeter.judge.faithfulness import FaithfulnessCase

__all__ = [
    "DISAGREEMENT_LIMIT",
    "LABELS",
    "Calibration",
    "CalibrationItem",
    "Disagreement",
    "agreement_report",
    "cohen_kappa",
    "load_calibration_set",
]

#: More disagreement than this and the judge is flagged.
DISAGREEMENT_LIMIT = 0.15
LABELS = ("supported", "unsupported")
FLAG_MESSAGE = "tighten the prompt before trusting it at scale"
_KIND = "calibration set"


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters' labels; ``None`` when undefined (p_e = 1).

    >>> cohen_kappa(["y", "y", "n", "n"], ["y", "n", "n", "n"])
    0.5
    >>> cohen_kappa(["y", "y"], ["y", "y"]) is None
    True
    """
    if len(a) != len(b):
        raise ValueError(f"the raters labelled {len(a)} and {len(b)} items")
    n = len(a)
    if n == 0:
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    labels = set(a) | set(b)
    expected = sum((list(a).count(lab) / n) * (list(b).count(lab) / n) for lab in labels)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


@dataclass(frozen=True)
class Disagreement:
    """An item where the judge and the person differ."""

    id: str
    human: str
    judge: str
    reason: str = ""


@dataclass(frozen=True)
class Calibration:
    """Agreement between a judge and people on one labelled set."""

    n: int
    agreement: float
    kappa: float | None
    confusion: dict[str, dict[str, int]]  # person's label -> judge's label -> count
    disagreements: list[Disagreement]
    missing: list[str] = field(default_factory=list)  # items the judge failed on
    limit: float = DISAGREEMENT_LIMIT

    @property
    def disagreement(self) -> float:
        return 1.0 - self.agreement if self.n else 0.0

    @property
    def flagged(self) -> bool:
        """True when the judge disagrees with people more than ``limit`` of the time."""
        return self.n == 0 or self.disagreement > self.limit

    @property
    def verdict(self) -> str:
        if self.n == 0:
            return "no labelled item was judged: nothing is calibrated"
        if self.flagged:
            return (
                f"disagrees with people on {self.disagreement:.0%} of items "
                f"(limit {self.limit:.0%}): {FLAG_MESSAGE}"
            )
        return f"agrees with people on {self.agreement:.0%} of items (limit {self.limit:.0%})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "agreement": self.agreement,
            "kappa": self.kappa,
            "confusion": self.confusion,
            "disagreements": [asdict(d) for d in self.disagreements],
            "missing": self.missing,
            "flagged": self.flagged,
            "limit": self.limit,
            "verdict": self.verdict,
        }


def agreement_report(
    human: Mapping[str, str],
    judge: Mapping[str, str],
    *,
    reasons: Mapping[str, str] | None = None,
    labels: Sequence[str] = LABELS,
    limit: float = DISAGREEMENT_LIMIT,
) -> Calibration:
    """Compare labels item by item (items both rated), with the confusion matrix.

    >>> cal = agreement_report({"a": "supported", "b": "unsupported"},
    ...                        {"a": "supported", "b": "supported"})
    >>> cal.agreement, cal.confusion["unsupported"]["supported"], cal.flagged
    (0.5, 1, True)
    """
    shared = [item for item in human if item in judge]
    missing = [item for item in human if item not in judge]
    confusion = {h: {j: 0 for j in labels} for h in labels}
    disagreements: list[Disagreement] = []
    for item in shared:
        h, j = human[item], judge[item]
        confusion.setdefault(h, {}).setdefault(j, 0)
        confusion[h][j] += 1
        if h != j:
            disagreements.append(Disagreement(item, h, j, (reasons or {}).get(item, "")))
    n = len(shared)
    agreement = (n - len(disagreements)) / n if n else 0.0
    kappa = cohen_kappa([human[i] for i in shared], [judge[i] for i in shared])
    return Calibration(n, agreement, kappa, confusion, disagreements, missing, limit)


@dataclass(frozen=True)
class CalibrationItem:
    """One hand-labelled answer (``label`` is None until a person labels it)."""

    id: str
    question: str
    context: tuple[str, ...]
    answer: str
    label: str | None = None
    unsupported_claims: tuple[str, ...] = ()
    docs: tuple[str, ...] = ()

    def case(self) -> FaithfulnessCase:
        return FaithfulnessCase(self.id, self.question, self.context, self.answer)


def _text(path: Path, where: str, record: Mapping[str, Any], key: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InputError(located(_KIND, path, where, f'"{key}" must be a non-empty string'))
    return value


def load_calibration_set(path: str | Path) -> list[CalibrationItem]:
    """Read a calibration set; errors name the file, the item and the field.

    >>> from ragmeter.examples import example_calibration_path
    >>> len(load_calibration_set(example_calibration_path())) >= 20
    True
    """
    target = Path(path)
    try:
        data = yaml.safe_load(target.read_text(encoding="utf-8"))
    except OSError as error:
        raise InputError(located(_KIND, target, None, f"cannot read: {error}")) from None
    except yaml.YAMLError as error:
        raise InputError(located(_KIND, target, None, f"not valid YAML: {error}")) from None
    if not isinstance(data, list):
        raise InputError(located(_KIND, target, None, "expected a list of items"))
    items: list[CalibrationItem] = []
    seen: set[str] = set()
    for number, record in enumerate(data, start=1):
        where = f"item {number}"
        if not isinstance(record, Mapping):
            raise InputError(located(_KIND, target, where, "expected a mapping"))
        item_id = str(record.get("id") or f"item-{number}")
        where = f"item {item_id}"
        if item_id in seen:
            raise InputError(located(_KIND, target, where, "repeats an earlier id"))
        seen.add(item_id)
        raw_context = record.get("context")
        if not isinstance(raw_context, list) or not raw_context:
            raise InputError(located(_KIND, target, where, '"context" must be a non-empty list'))
        texts: list[str] = []
        docs: list[str] = []
        for part in raw_context:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
                docs.append(str(part.get("doc") or ""))
            else:
                message = '"context" entries must be strings or {doc, text}'
                raise InputError(located(_KIND, target, where, message))
        label = record.get("label")
        if label is not None and label not in LABELS:
            message = f'"label" must be one of {", ".join(LABELS)}, got {label!r}'
            raise InputError(located(_KIND, target, where, message))
        claims = record.get("unsupported_claims") or []
        if not isinstance(claims, list):
            message = '"unsupported_claims" must be a list'
            raise InputError(located(_KIND, target, where, message))
        items.append(
            CalibrationItem(
                id=item_id,
                question=_text(target, where, record, "question"),
                context=tuple(texts),
                answer=_text(target, where, record, "answer"),
                label=label,
                unsupported_claims=tuple(str(c) for c in claims),
                docs=tuple(docs),
            )
        )
    return items
