"""Calibration: does the judge agree with people, how much more than chance, and how sure are we?

Agreement is the share of items where judge and person give the same label.
Cohen's kappa corrects it for chance (Cohen 1960)::

    kappa = (p_o - p_e) / (1 - p_e),   p_e = sum over labels of p_person(l) * p_judge(l)

Both come with their own uncertainty (issue 17.3): agreement with a Wilson 95% interval,
kappa with a seeded bootstrap interval. The judge is trusted only when the *lower bound*
of agreement reaches ``AGREEMENT_FLOOR`` (85%). When the interval straddles the floor and
is wider than ``MAX_DECISIVE_WIDTH`` (10 points), the labels cannot tell a judge at 85%
from one at 80 or 90: the verdict is "too few labels to tell", and the judge stays
untrusted. Otherwise a lower bound under the floor is flagged: tighten the prompt.

The judge's verdicts on every item (labelled or not) also give a prediction-powered
estimate of the set's faithfulness (:func:`ragmeter.metrics.uncertainty.ppi_mean`), and
:meth:`Calibration.suggest` picks the unlabelled items to label next.

A calibration set is a YAML list of ``{id, question, context: [{doc, text, relevant}],
answer, reference_answer, label: supported|unsupported, unsupported_claims}``;
``examples/calibration.yaml`` is one. ``reference_answer`` (aliases ``reference``,
``expected_output``, ``ground_truth``) feeds the claims judge; a context entry is relevant
unless it says ``relevant: false`` (issue 17.5).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.errors import InputError, located
from ragmeter.judge.claims import ClaimsCase
from ragmeter.judge.faithfulness import FaithfulnessCase
from ragmeter.metrics.uncertainty import (
    JudgedMean,
    kappa_bootstrap_ci,
    labels_for_width,
    ppi_mean,
    wilson_interval,
)

__all__ = [
    "AGREEMENT_FLOOR",
    "CONFIDENCE",
    "DISAGREEMENT_LIMIT",
    "LABELS",
    "MAX_DECISIVE_WIDTH",
    "Calibration",
    "CalibrationItem",
    "Disagreement",
    "Suggestion",
    "agreement_report",
    "cohen_kappa",
    "load_calibration_set",
]

#: More disagreement than this and the judge is flagged.
DISAGREEMENT_LIMIT = 0.15
#: The judge is trusted when the lower bound of its agreement interval reaches this.
AGREEMENT_FLOOR = 1.0 - DISAGREEMENT_LIMIT
#: An agreement interval that straddles the floor and is wider than this (10 points,
#: about 196 labels at 85%) is too wide to decide: "too few labels to tell".
MAX_DECISIVE_WIDTH = 0.10
#: The confidence of every interval in a calibration.
CONFIDENCE = 0.95
LABELS = ("supported", "unsupported")
FLAG_MESSAGE = "tighten the prompt before trusting it at scale"
TOO_FEW_MESSAGE = "too few labels to tell"
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
class Suggestion:
    """An unlabelled item worth labelling next, and why.

    ``disagreement`` is the estimated chance that people disagree with the judge's
    verdict on it: ``(d + 1) / (m + 2)`` over the m labelled items that got the same
    verdict, d of them disagreements (Laplace's rule of succession).
    """

    id: str
    judge: str
    disagreement: float


def _percent(interval: tuple[float, float]) -> str:
    return f"{interval[0]:.0%}-{interval[1]:.0%}"


@dataclass(frozen=True)
class Calibration:
    """Agreement between a judge and people on one labelled set, with its uncertainty."""

    n: int
    agreement: float
    kappa: float | None
    confusion: dict[str, dict[str, int]]  # person's label -> judge's label -> count
    disagreements: list[Disagreement]
    missing: list[str] = field(default_factory=list)  # items the judge failed on
    limit: float = DISAGREEMENT_LIMIT
    agreement_interval: tuple[float, float] | None = None
    kappa_interval: tuple[float, float] | None = None
    # The share of "supported" over every judged item, corrected by the labelled ones.
    faithful: JudgedMean | None = None
    # The judge's verdicts on items people have not labelled (for ``suggest``).
    unlabelled: dict[str, str] = field(default_factory=dict)

    @property
    def disagreement(self) -> float:
        return 1.0 - self.agreement if self.n else 0.0

    @property
    def floor(self) -> float:
        """The agreement the interval's lower bound must reach (0.85 by default)."""
        return 1.0 - self.limit

    @property
    def status(self) -> str:
        """``trusted``, ``flagged``, ``too_few_labels`` or ``uncalibrated`` (no item).

        Decided on the agreement interval ``[low, high]``: ``trusted`` when
        ``low >= floor``; ``flagged`` when ``high < floor``, or when the interval
        straddles the floor but is at most ``MAX_DECISIVE_WIDTH`` wide; otherwise
        (straddling and wider) ``too_few_labels``.
        """
        if self.n == 0 or self.agreement_interval is None:
            return "uncalibrated"
        low, high = self.agreement_interval
        if low >= self.floor:
            return "trusted"
        if high >= self.floor and high - low > MAX_DECISIVE_WIDTH:
            return "too_few_labels"
        return "flagged"

    @property
    def flagged(self) -> bool:
        """True unless the agreement interval's lower bound reaches the floor."""
        return self.status != "trusted"

    @property
    def labels_needed(self) -> int:
        """Labels in all for an interval ``MAX_DECISIVE_WIDTH`` wide, at this agreement."""
        if self.n == 0:
            return labels_for_width(self.floor, MAX_DECISIVE_WIDTH, confidence=CONFIDENCE)
        return labels_for_width(self.agreement, MAX_DECISIVE_WIDTH, confidence=CONFIDENCE)

    @property
    def per_label(self) -> dict[str, dict[str, float | int | None]]:
        """Per label, people taken as truth: ``precision``, ``recall`` and ``support``.

        ``precision`` is None when the judge never gave the label, ``recall`` when
        people never did.
        """
        out: dict[str, dict[str, float | int | None]] = {}
        for label in self.confusion:
            hits = self.confusion[label].get(label, 0)
            given = sum(row.get(label, 0) for row in self.confusion.values())
            support = sum(self.confusion[label].values())
            out[label] = {
                "precision": hits / given if given else None,
                "recall": hits / support if support else None,
                "support": support,
            }
        return out

    @property
    def verdict(self) -> str:
        status = self.status
        if status == "uncalibrated" or self.agreement_interval is None:
            return "no labelled item was judged: nothing is calibrated"
        span = f"{CONFIDENCE:.0%} interval {_percent(self.agreement_interval)}"
        said = f"agrees with people on {self.agreement:.0%} of {self.n} items ({span})"
        if status == "trusted":
            return f"{said}, at or above the {self.floor:.0%} floor"
        if status == "too_few_labels":
            return (
                f"{said}, which straddles the {self.floor:.0%} floor and is wider than "
                f"{MAX_DECISIVE_WIDTH * 100:.0f} points: {TOO_FEW_MESSAGE}; about "
                f"{self.labels_needed} labels in all ({max(self.labels_needed - self.n, 0)} "
                f"more) give a {MAX_DECISIVE_WIDTH * 100:.0f}-point interval"
            )
        return f"{said}, under the {self.floor:.0%} floor: {FLAG_MESSAGE}"

    def suggest(self, count: int) -> list[Suggestion]:
        """The ``count`` unlabelled items to label next: disagreement-prone ones first.

        Each unlabelled item the judge rated is scored by the chance that people
        disagree with its verdict, estimated from the labelled items with the same
        verdict (see :class:`Suggestion`); ties keep the set's order. Any label narrows
        the agreement interval about equally, but these reveal the judge's failures
        and shrink ``var(human - judge)``, the term that widens the corrected
        estimate's interval most.

        >>> people = {"a": "supported", "b": "unsupported", "c": "supported"}
        >>> judge = {"a": "supported", "b": "supported", "c": "supported",
        ...          "d": "supported", "e": "unsupported"}
        >>> [(s.id, s.judge, s.disagreement) for s in agreement_report(people, judge).suggest(2)]
        [('e', 'unsupported', 0.5), ('d', 'supported', 0.4)]
        """
        if count < 0:
            raise ValueError(f"the number of suggestions must be at least 0, got {count}")
        rates: dict[str, float] = {}
        for verdict in {*self.unlabelled.values()}:
            given = sum(row.get(verdict, 0) for row in self.confusion.values())
            agreed = self.confusion.get(verdict, {}).get(verdict, 0)
            rates[verdict] = (given - agreed + 1) / (given + 2)
        ranked = sorted(self.unlabelled.items(), key=lambda pair: -rates[pair[1]])
        return [Suggestion(i, verdict, rates[verdict]) for i, verdict in ranked[:count]]

    def to_dict(self) -> dict[str, Any]:
        def listed(interval: tuple[float, float] | None) -> list[float] | None:
            return list(interval) if interval is not None else None

        return {
            "n": self.n,
            "agreement": self.agreement,
            "agreement_interval": listed(self.agreement_interval),
            "kappa": self.kappa,
            "kappa_interval": listed(self.kappa_interval),
            "confidence": CONFIDENCE,
            "confusion": self.confusion,
            "per_label": self.per_label,
            "disagreements": [asdict(d) for d in self.disagreements],
            "missing": self.missing,
            "status": self.status,
            "flagged": self.flagged,
            "limit": self.limit,
            "max_decisive_width": MAX_DECISIVE_WIDTH,
            "labels_needed": self.labels_needed,
            "verdict": self.verdict,
            "faithful": self.faithful.to_dict() if self.faithful is not None else None,
        }


def agreement_report(
    human: Mapping[str, str],
    judge: Mapping[str, str],
    *,
    reasons: Mapping[str, str] | None = None,
    labels: Sequence[str] = LABELS,
    limit: float = DISAGREEMENT_LIMIT,
    seed: int = 0,
) -> Calibration:
    """Compare labels item by item (items both rated), with the confusion matrix.

    ``judge`` may also hold verdicts on items people have not labelled: they feed
    the corrected faithfulness (``faithful``) and :meth:`Calibration.suggest`.
    ``seed`` fixes the kappa bootstrap.

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
    agreed = n - len(disagreements)
    people = [human[i] for i in shared]
    judged = [judge[i] for i in shared]

    def supported(values: Sequence[str]) -> list[float]:
        return [1.0 if value == "supported" else 0.0 for value in values]

    return Calibration(
        n=n,
        agreement=agreed / n if n else 0.0,
        kappa=cohen_kappa(people, judged),
        confusion=confusion,
        disagreements=disagreements,
        missing=missing,
        limit=limit,
        agreement_interval=wilson_interval(agreed, n, confidence=CONFIDENCE) if n else None,
        kappa_interval=kappa_bootstrap_ci(people, judged, confidence=CONFIDENCE, seed=seed),
        faithful=ppi_mean(
            supported(list(judge.values())),
            supported(judged),
            supported(people),
            confidence=CONFIDENCE,
        )
        if judge
        else None,
        unlabelled={item: verdict for item, verdict in judge.items() if item not in human},
    )


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
    reference: str | None = None
    relevant: tuple[bool, ...] = ()  # per context entry; empty: all relevant

    def case(self) -> FaithfulnessCase:
        return FaithfulnessCase(self.id, self.question, self.context, self.answer)

    def claims_case(self) -> ClaimsCase:
        relevant = self.relevant or (True,) * len(self.context)
        return ClaimsCase(
            self.id, self.question, self.answer, self.context, relevant, self.reference
        )


_REFERENCE_KEYS = ("reference_answer", "reference", "expected_output", "ground_truth")


def _reference(path: Path, where: str, record: Mapping[str, Any]) -> str | None:
    given = [key for key in _REFERENCE_KEYS if record.get(key) is not None]
    if len(given) > 1:
        message = f"give one reference answer, not {' and '.join(given)}"
        raise InputError(located(_KIND, path, where, message))
    return _text(path, where, record, given[0]) if given else None


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
    from ragmeter.formats.strict_yaml import load_yaml

    try:
        text = target.read_text(encoding="utf-8")
    except OSError as error:
        raise InputError(located(_KIND, target, None, f"cannot read: {error}")) from None
    # The strict loader: no alias expansion, duplicate keys named (issue 19.3).
    data, _ = load_yaml(text, target, _KIND, InputError)
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
        relevant: list[bool] = []
        for part in raw_context:
            if isinstance(part, str):
                texts.append(part)
                relevant.append(True)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
                docs.append(str(part.get("doc") or ""))
                if not isinstance(part.get("relevant", True), bool):
                    message = '"relevant" of a context entry must be true or false'
                    raise InputError(located(_KIND, target, where, message))
                relevant.append(part.get("relevant", True))
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
                reference=_reference(target, where, record),
                relevant=tuple(relevant),
            )
        )
    return items
