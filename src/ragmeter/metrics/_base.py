"""The metric value type, the registry of metric families, and their parameters.

A metric is a small immutable value whose canonical string is its identity, as in
ir_measures: ``str(parse_metric("nDCG@10")) == "ndcg@10"`` and
``parse_metric(str(m)) == m`` always holds. That string is the store key, the CLI
argument and the report column. Variants are parameters, never new names:
``precision(rel=2)@5``, ``ndcg(dcg=exp-log2)@10``, ``rbp(p=0.95)``.

Each family (``ndcg``, ``recall``, ...) is *defined* in its own module (name,
cutoff rule, parameters, formula, citation) and registered here; names are parsed
in :mod:`ragmeter.metrics._names`; the code that *computes* ranking metrics lives
in :mod:`ragmeter.metrics.engine`.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field
from typing import Literal

from ragmeter.errors import MetricNameError

__all__ = ["Family", "Metric", "Param", "families", "metric", "register"]

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
ParamKind = Literal["int", "float", "bool", "choice", "gains"]
Needs = Literal["relevant", "judged", "retrieved", "pooled"]


def _number(value: float) -> str:
    """A float's shortest text, integral ones without ``.0``: 3.0 -> '3', 0.95 -> '0.95'."""
    value = float(value)
    return str(int(value)) if value.is_integer() else repr(value)


@dataclass(frozen=True)
class Param:
    """One parameter of a metric family: its type, default and allowed values.

    Values are kept as canonical text, so metrics compare and hash by value:

    >>> Param("p", "float", "0.9", "persistence", low=0.0, high=1.0).canonical(".95", "rbp")
    '0.95'
    """

    name: str
    kind: ParamKind
    default: str
    summary: str
    choices: tuple[str, ...] = ()
    low: float | None = None  # exclusive bound for floats, inclusive for ints
    high: float | None = None  # exclusive bound
    required: bool = False  # no default: the libraries disagree on one

    def canonical(self, value: object, metric: str) -> str:
        """The canonical text of ``value``, or a MetricNameError naming the metric."""
        text = str(value).strip().strip("'\"")
        where = f"metric {metric}: parameter {self.name}={text!r}"
        if self.kind == "bool":
            lowered = text.lower()
            if lowered in ("true", "1", "yes"):
                return "true"
            if lowered in ("false", "0", "no"):
                return "false"
            raise MetricNameError(f"{where} is not true or false")
        if self.kind == "choice":
            if text.lower() not in self.choices:
                raise MetricNameError(f"{where} is not one of {', '.join(self.choices)}")
            return text.lower()
        if self.kind == "gains":
            return _gains_text(text, where)
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if self.kind == "int":
            if not number.is_integer() or (self.low is not None and number < self.low):
                low = "" if self.low is None else f" >= {_number(self.low)}"
                raise MetricNameError(f"{where} is not an integer{low}")
            return str(int(number))
        inside = math.isfinite(number) and (self.low is None or number > self.low)
        if not inside or (self.high is not None and number >= self.high):
            raise MetricNameError(
                f"{where} must be a number strictly between {self.low} and {self.high}"
            )
        return _number(number)


def _gains_text(text: str, where: str) -> str:
    """Canonical gain map text ``{1:1,2:3}`` from ``{1: 1, 2: 3}``, ``1=1,2=3`` etc."""
    body = text.strip().removeprefix("{").removesuffix("}")
    pairs: dict[int, float] = {}
    for item in filter(None, (part.strip() for part in body.split(","))):
        level, sep, gain = item.replace("=", ":").partition(":")
        try:
            grade, value = int(level), float(gain)
        except ValueError:
            raise MetricNameError(f"{where}: expected grade:gain pairs, e.g. {{1:1,2:3}}") from None
        if not sep or grade < 1 or not math.isfinite(value) or grade in pairs:
            raise MetricNameError(
                f"{where}: each grade >= 1 once, with a finite gain (grades <= 0 gain 0)"
            )
        pairs[grade] = value
    if not pairs:
        raise MetricNameError(f"{where}: expected grade:gain pairs, e.g. {{1:1,2:3}}")
    return "{" + ",".join(f"{g}:{_number(v)}" for g, v in sorted(pairs.items())) + "}"


def gain_map(text: str) -> dict[int, float]:
    """The ``{grade: gain}`` of a canonical ``gains`` parameter.

    >>> gain_map("{1:1,2:3.5}")
    {1: 1.0, 2: 3.5}
    """
    pairs = (item.split(":") for item in text.strip("{}").split(","))
    return {int(grade): float(gain) for grade, gain in pairs}


JUDGED_ONLY = Param(
    "judged_only",
    "bool",
    "false",
    "drop unjudged items (no judgment, or a negative grade) from the ranking first, "
    "so the judged items move up (trec_eval -J, ir_measures judged_only=True)",
)

REL = Param(
    "rel",
    "int",
    "1",
    "lowest grade that counts as relevant (trec_eval -l, ir_measures rel=)",
    low=1,
)


@dataclass(frozen=True)
class Family:
    """The definition of one metric family (documentation lives here, code elsewhere).

    ``aliases`` are other spellings (ir_measures, trec_eval) matched case-insensitively;
    ``trec_eval`` names the trec_eval measure this family agrees with, if any.
    ``percentile`` is the percentile a ``latency`` family reports. ``of_retrieved`` marks a
    share of the retrieved list (precision@k): at passage level it counts the retrieved
    chunks that cover a gold entry, where other ranking metrics count the entries.
    ``lower_is_better`` marks a family whose rise is a regression (latency, hallucination,
    noise): ``diff``, ``gate``, the corrected estimates and the pages all read it here.
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
    params: tuple[Param, ...] = ()
    needs: Needs = "relevant"
    ranx: str | None = None
    lower_is_better: bool = False

    def param(self, name: str) -> Param | None:
        """The parameter called ``name``, if the family has one."""
        return next((p for p in self.params if p.name == name), None)


_FAMILIES: dict[str, Family] = {}
_ALIASES: dict[str, str] = {}


def register(family: Family) -> Family:
    """Add a family to the registry (built-in families call this on import).

    >>> families()["ndcg"].kind
    'ranking'
    """
    if family.name in _FAMILIES:
        raise ValueError(f"metric family {family.name!r} is already registered")
    for spelling in (family.name, *family.aliases):
        taken = _ALIASES.get(spelling.lower())
        if taken is not None:
            raise ValueError(f"metric spelling {spelling!r} already names {taken!r}")
    _FAMILIES[family.name] = family
    for spelling in (family.name, *family.aliases):
        _ALIASES[spelling.lower()] = family.name
    return family


# The order of docs and error messages (DESIGN.md's table); families registered by
# others follow in registration order.
_ORDER = (
    "hit", "recall", "precision", "mrr", "ndcg", "map", "rprec",
    "dcg", "f1", "rbp", "num_rel", "num_rel_ret", "num_ret", "judged", "bpref",
    "answer_in_context", "answer_ok", "faithful", "latency_p50_ms", "latency_p95_ms",
)  # fmt: skip


_BASE_NAME = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_\-]*?)\s*(?:\(.*\))?\s*(?:@\s*(\S+))?\s*$")


def unknown_text(name: object, extra: tuple[str, ...] = ()) -> str:
    """An unknown metric's message: the closest spelling ("did you mean") and the known ones.

    >>> unknown_text("bperf").split(";")[1]
    ' did you mean bpref?'
    """
    known = ", ".join(
        f.name + {"required": "@k", "optional": "[@k]", "none": ""}[f.cutoff]
        for f in families().values()
    )
    match = _BASE_NAME.match(name) if isinstance(name, str) else None
    base = match.group(1).lower() if match else str(name).lower()
    close = difflib.get_close_matches(base, sorted({*_ALIASES, *extra}), n=1, cutoff=0.6)
    hint = ""
    if close:
        suggestion = _ALIASES.get(close[0]) or close[0]
        if match and match.group(2):
            suggestion = f"{suggestion}@{match.group(2)}"
        hint = f"; did you mean {suggestion}?"
    return f"unknown metric {name!r}{hint}; known metrics: {known}"


def aliases() -> dict[str, str]:
    """Every registered spelling (lower case) -> canonical family name."""
    return dict(_ALIASES)


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
    """One metric: a family, an optional rank cutoff ``k`` and parameters.

    ``params`` holds ``(name, canonical text)`` pairs, sorted, defaults left out, so
    equal metrics compare and hash equal; build them with :func:`metric`.

    >>> m = Metric("ndcg", 10)
    >>> str(m), m.kind
    ('ndcg@10', 'ranking')
    >>> str(metric("precision", 5, rel=2)), metric("precision", 5, rel=1) == Metric("precision", 5)
    ('precision(rel=2)@5', True)
    """

    name: str
    k: int | None = None
    params: tuple[tuple[str, str], ...] = field(default=())

    def __post_init__(self) -> None:
        family = _FAMILIES.get(self.name)
        if family is None:
            raise MetricNameError(unknown_text(self.name))
        if self.k is not None and (
            isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1
        ):
            raise MetricNameError(f"metric {self.name}: cutoff must be a positive integer")
        if family.cutoff == "required" and self.k is None:
            raise MetricNameError(f"metric {self.name} needs a cutoff, e.g. {self.name}@10")
        if family.cutoff == "none" and self.k is not None:
            raise MetricNameError(f"metric {self.name} takes no cutoff (got @{self.k})")
        canonical: dict[str, str] = {}
        for key, value in self.params:
            spec = family.param(key)
            if spec is None:
                allowed = ", ".join(p.name for p in family.params) or "none"
                raise MetricNameError(
                    f"metric {self.name} has no parameter {key!r} (parameters: {allowed})"
                )
            if key in canonical:
                raise MetricNameError(f"metric {self.name}: parameter {key} given twice")
            canonical[key] = spec.canonical(value, self.name)
        for spec in family.params:
            if spec.required and spec.name not in canonical:
                raise MetricNameError(
                    f"metric {self.name} needs parameter {spec.name} ({spec.summary}), "
                    f"e.g. {self.name}({spec.name}={spec.default})"
                )
        defaults = {p.name: p.default for p in family.params if not p.required}
        kept = tuple(sorted((k, v) for k, v in canonical.items() if defaults.get(k) != v))
        object.__setattr__(self, "params", kept)

    @property
    def family(self) -> Family:
        """The registered definition of this metric's family."""
        return _FAMILIES[self.name]

    @property
    def kind(self) -> Kind:
        """``ranking``, ``answer``, ``generation``, ``judge`` or ``latency`` (see ``Kind``)."""
        return _FAMILIES[self.name].kind

    def param(self, name: str) -> str:
        """A parameter's canonical text (its default when not given).

        >>> metric("rbp", p=0.95).param("p"), Metric("precision", 5).param("rel")
        ('0.95', '1')
        """
        for key, value in self.params:
            if key == name:
                return value
        spec = self.family.param(name)
        if spec is None:
            raise MetricNameError(f"metric {self.name} has no parameter {name!r}")
        return spec.default

    def __str__(self) -> str:
        text = self.name
        if self.params:
            text += "(" + ",".join(f"{k}={v}" for k, v in self.params) + ")"
        return text if self.k is None else f"{text}@{self.k}"


def metric(name: str, k: int | None = None, **params: object) -> Metric:
    """Build a metric of a registered family from keyword parameters.

    >>> str(metric("ndcg", 10, dcg="exp-log2"))
    'ndcg(dcg=exp-log2)@10'
    """
    return Metric(name, k, tuple((key, str(value)) for key, value in params.items()))
