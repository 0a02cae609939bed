"""The metric value type, the registry of metric families, and ``parse_metric``.

A metric is a small immutable value whose canonical string is its identity, as in
ir_measures: ``str(parse_metric("nDCG@10")) == "ndcg@10"`` and
``parse_metric(str(m)) == m`` always holds. That string is the store key, the CLI
argument and the report column.

Each family (``ndcg``, ``recall``, ...) is *defined* in its own module (name,
cutoff rule, formula, citation) and registered here; the code that *computes*
ranking metrics lives in :mod:`ragmeter.metrics.engine`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ragmeter.errors import MetricNameError

__all__ = ["Family", "Metric", "families", "parse_metric", "register"]

Kind = Literal["ranking", "answer", "generation", "judge", "latency"]
"""What a family's value is computed from; ``evaluate()`` picks its scorer by this alone.

- ``ranking``: the judged ranking (qrels + run), by :mod:`ragmeter.metrics.engine`;
- ``answer``: the rank at which retrieved text first contains an ``answer_contains`` string;
- ``generation``: the generated answer checked against ``answer_contains``;
- ``judge``: the judge's per-question verdicts;
- ``latency``: a percentile (``Family.percentile``) of the measured retrieval latencies.

A new family of an existing kind needs no scoring code; a family computed some other
way needs a new kind and one scorer in ``ragmeter.evaluation.scoring``.
"""
Cutoff = Literal["required", "optional", "none"]


@dataclass(frozen=True)
class Family:
    """The definition of one metric family (documentation lives here, code elsewhere).

    ``aliases`` are other spellings (ir_measures, trec_eval) matched case-insensitively;
    ``trec_eval`` names the trec_eval measure this family agrees with, if any.
    ``percentile`` is the percentile a ``latency`` family reports. ``of_retrieved`` marks a
    share of the retrieved list (precision@k): at passage level it counts the retrieved
    chunks that cover a gold entry, where other ranking metrics count the entries.
    """

    name: str
    kind: Kind
    cutoff: Cutoff
    summary: str
    formula: str
    citation: str
    aliases: tuple[str, ...] = ()
    trec_eval: str | None = None
    ir_measures: str | None = None
    percentile: float | None = None
    of_retrieved: bool = False


_FAMILIES: dict[str, Family] = {}
_ALIASES: dict[str, str] = {}


def register(family: Family) -> Family:
    """Add a family to the registry (built-in families call this on import).

    >>> families()["ndcg"].kind
    'ranking'
    """
    if family.name in _FAMILIES:
        raise ValueError(f"metric family {family.name!r} is already registered")
    _FAMILIES[family.name] = family
    for spelling in (family.name, *family.aliases):
        _ALIASES[spelling.lower()] = family.name
    return family


# The order of docs and error messages (DESIGN.md's table); families registered by
# others follow in registration order.
_ORDER = (
    "hit", "recall", "precision", "mrr", "ndcg", "map", "rprec",
    "answer_in_context", "answer_ok", "faithful", "latency_p50_ms", "latency_p95_ms",
)  # fmt: skip


def families() -> dict[str, Family]:
    """Every registered family by canonical name, built-ins first in DESIGN.md's order.

    >>> list(families())[:3]
    ['hit', 'recall', 'precision']
    """
    rank = {name: i for i, name in enumerate(_ORDER)}
    names = sorted(_FAMILIES, key=lambda name: rank.get(name, len(_ORDER)))
    return {name: _FAMILIES[name] for name in names}


@dataclass(frozen=True, order=True)
class Metric:
    """One metric: a family plus an optional rank cutoff ``k``.

    >>> m = Metric("ndcg", 10)
    >>> str(m), m.kind
    ('ndcg@10', 'ranking')
    >>> parse_metric(str(m)) == m
    True
    """

    name: str
    k: int | None = None

    def __post_init__(self) -> None:
        family = _FAMILIES.get(self.name)
        if family is None:
            raise MetricNameError(_unknown(self.name))
        if self.k is not None and (
            isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1
        ):
            raise MetricNameError(f"metric {self.name}: cutoff must be a positive integer")
        if family.cutoff == "required" and self.k is None:
            raise MetricNameError(f"metric {self.name} needs a cutoff, e.g. {self.name}@10")
        if family.cutoff == "none" and self.k is not None:
            raise MetricNameError(f"metric {self.name} takes no cutoff (got @{self.k})")

    @property
    def family(self) -> Family:
        """The registered definition of this metric's family."""
        return _FAMILIES[self.name]

    @property
    def kind(self) -> Kind:
        """``ranking``, ``answer``, ``generation``, ``judge`` or ``latency`` (see ``Kind``)."""
        return _FAMILIES[self.name].kind

    def __str__(self) -> str:
        return self.name if self.k is None else f"{self.name}@{self.k}"


# "nDCG@10", "ndcg", "RR@10"; trec_eval "ndcg_cut_10" / "ndcg_cut.10", "P_5", "success_5".
_AT = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_\-]*?)\s*(?:@\s*(\S+))?\s*$")
_TREC = re.compile(r"^\s*([A-Za-z][A-Za-z_\-]*?)[_.](\d+)\s*$")


def _unknown(name: str) -> str:
    known = ", ".join(
        f.name + {"required": "@k", "optional": "[@k]", "none": ""}[f.cutoff]
        for f in families().values()
    )
    return f"unknown metric {name!r}; known metrics: {known}"


def parse_metric(name: str | Metric) -> Metric:
    """Parse a metric name in canonical, ir_measures or trec_eval spelling.

    Raises :class:`~ragmeter.errors.MetricNameError` naming the known metrics.

    >>> str(parse_metric("nDCG@10")), str(parse_metric("ndcg_cut_10")), str(parse_metric("RR"))
    ('ndcg@10', 'ndcg@10', 'mrr')
    >>> parse_metric("P_5") == parse_metric("precision@5")
    True
    """
    if isinstance(name, Metric):
        return name
    if not isinstance(name, str):
        raise MetricNameError(f"metric name must be a string, not {type(name).__name__}")
    # An exact registered name first, so names with underscores and digits
    # ("latency_p95_ms") are not mistaken for a trec_eval "family_k".
    family = _ALIASES.get(name.strip().lower())
    if family is not None:
        return Metric(family)
    match = _AT.match(name)
    if match is not None:
        base, cutoff = match.group(1), match.group(2)
    else:
        match = _TREC.match(name)
        if match is None:
            raise MetricNameError(_unknown(name))
        base, cutoff = match.group(1), match.group(2)
    family = _ALIASES.get(base.lower())
    if family is None:
        trec = _TREC.match(name)
        if cutoff is None and trec is not None:
            base, cutoff = trec.group(1), trec.group(2)
            family = _ALIASES.get(base.lower())
        if family is None:
            raise MetricNameError(_unknown(name))
    if cutoff is None:
        return Metric(family)
    if not cutoff.isdigit() or int(cutoff) < 1:
        raise MetricNameError(f"metric {name!r}: cutoff {cutoff!r} is not a positive integer")
    return Metric(family, int(cutoff))
