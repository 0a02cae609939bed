"""Metric names: canonical, ir_measures, trec_eval and ranx spellings, and name lists.

``parse_metric`` turns one name into one :class:`~ragmeter.metrics.Metric`;
``parse_metrics`` also expands the names that mean several metrics in trec_eval:
bare ``P``, ``recall``, ``ndcg_cut``, ``map_cut`` (cutoffs 5, 10, 15, 20, 30, 100, 200,
500, 1000) and ``success`` (1, 5, 10), lists such as ``P_5,10`` / ``ndcg_cut.5,10``,
and ``official`` (trec_eval's default measures that ragmeter has). A name that means
several metrics is never read as the uncut measure.

>>> [str(m) for m in parse_metrics(["P.5,10", "nDCG(dcg='exp-log2')@10", "rbp.95"])]
['precision@5', 'precision@10', 'ndcg(dcg=exp-log2)@10', 'rbp(gain=grade,p=0.95)']
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from ragmeter.errors import MetricNameError
from ragmeter.metrics._base import Metric, aliases, families, unknown_text

__all__ = ["TREC_CUTOFFS", "parse_metric", "parse_metrics", "unknown_message"]

_CACHE_SIZE = 4096  # parsed names kept (a parse is pure: same text, same metric)
# trec_eval 10's default cutoffs (m_P.c, m_recall.c, m_ndcg_cut.c, m_map_cut.c; m_success.c).
TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
SUCCESS_CUTOFFS = (1, 5, 10)
# trec_eval names that, without a cutoff, mean the measure at each default cutoff.
_DEFAULT_CUT = {
    "p": ("precision", TREC_CUTOFFS),
    "recall": ("recall", TREC_CUTOFFS),
    "ndcg_cut": ("ndcg", TREC_CUTOFFS),
    "map_cut": ("map", TREC_CUTOFFS),
    "success": ("hit", SUCCESS_CUTOFFS),
}
# Spellings that carry a parameter in their name (ranx's Burges nDCG/DCG).
_WITH_PARAMS = {
    "ndcg_burges": ("ndcg", {"dcg": "exp-log2"}),
    "dcg_burges": ("dcg", {"dcg": "exp-log2"}),
}
# trec_eval's `-m official` (measures.c off_names), in its order; the ones ragmeter has.
OFFICIAL = ("num_ret", "num_rel", "num_rel_ret", "map", "rprec", "bpref", "mrr", "P")

_CALL = re.compile(
    r"^\s*(?P<name>[A-Za-z][A-Za-z0-9_\-]*?)\s*(?:\((?P<params>[^()]*)\))?\s*"
    r"(?:@\s*(?P<k>[^@\s]+))?\s*$"
)


# ir_measures spellings (case-sensitive, as ir_measures spells them) whose quantity is not
# ragmeter's metric of the same name: refused with the alternative rather than read as ours
# (issue 24.7). A peer's spelling means the peer's metric, or nothing.
_PEER_JUDGED = (
    "ir_measures' Judged@k is not ragmeter's judged@k: it divides by min(k, ranking length) "
    "instead of k, counts negative grades as judged, and breaks score ties by doc id "
    "ascending (trec_eval, and ragmeter, descending); ragmeter has the trec_eval quantity, "
    "judged@k = min(k, num_ret)/k - unj_k: ask for judged@k (lower case) for that"
)
_PEER_RBP = (
    "ir_measures' RBP without rel= is graded RBP (its trectools provider), which ragmeter does "
    "not compute; ragmeter's rbp is binary (Moffat & Zobel, trec_eval on binary qrels): ask "
    "for RBP(p=...,rel=1) or rbp(p=...) for binary RBP, or rbp(p=...,gain=grade) for gains "
    "equal to the grades (ranx's rbp.95)"
)


def _refuse_peer(name: str) -> None:
    """Stop on an ir_measures spelling whose quantity ragmeter does not compute."""
    match = _CALL.match(name)
    if match is None:
        return
    base = match.group("name")
    params = _split_params(match.group("params") or "", name)
    if base == "Judged":
        raise MetricNameError(f"metric {name!r}: {_PEER_JUDGED}")
    if base == "RBP" and "rel" not in params:
        raise MetricNameError(f"metric {name!r}: {_PEER_RBP}")


def unknown_message(name: str) -> str:
    """The error text for an unknown name: a "did you mean" and the known metrics.

    >>> unknown_message("ndgc@10").split(";")[1]
    ' did you mean ndcg@10?'
    """
    return unknown_text(name, (*_DEFAULT_CUT, *_WITH_PARAMS, "official"))


def _split_params(text: str, name: str) -> dict[str, str]:
    """``rel=2, dcg='exp-log2', gains={0:0,1:1}`` -> dict (commas inside {} kept)."""
    out: dict[str, str] = {}
    depth = 0
    item = ""
    for char in text + ",":
        if char == "," and depth == 0:
            if item.strip():
                key, sep, value = item.partition("=")
                if not sep or not key.strip():
                    raise MetricNameError(
                        f"metric {name!r}: parameter {item.strip()!r} is not key=value"
                    )
                if key.strip() in out:
                    raise MetricNameError(f"metric {name!r}: parameter {key.strip()} given twice")
                out[key.strip()] = value.strip()
            item = ""
            continue
        depth += {"{": 1, "}": -1}.get(char, 0)
        item += char
    return out


def _cutoff(text: str, name: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise MetricNameError(f"metric {name!r}: cutoff {text!r} is not a positive integer")
    return int(text)


def _family_of(base: str) -> tuple[str, dict[str, str]] | None:
    lowered = base.lower()
    if lowered in _WITH_PARAMS:
        family, params = _WITH_PARAMS[lowered]
        return family, dict(params)
    found = aliases().get(lowered)
    return None if found is None else (found, {})


def _several(name: str, metrics: list[Metric]) -> MetricNameError:
    listed = ", ".join(str(m) for m in metrics)
    return MetricNameError(
        f"metric {name!r} means several metrics ({listed}); pass it where a list is "
        "accepted (parse_metrics, compute_metrics, -m) or give one cutoff, e.g. "
        f"{metrics[0].name}@10"
    )


def _expand(name: str) -> list[Metric] | None:
    """The metrics a list spelling means, or None when ``name`` is a single metric."""
    expanded = _expand_cached(name)
    return None if expanded is None else list(expanded)


@lru_cache(maxsize=_CACHE_SIZE)
def _expand_cached(name: str) -> tuple[Metric, ...] | None:
    found = _expand_text(name)
    return None if found is None else tuple(found)


def _expand_text(name: str) -> list[Metric] | None:
    text = name.strip()
    lowered = text.lower()
    if lowered == "official":
        out: list[Metric] = []
        for item in OFFICIAL:
            expanded = _expand(item)
            if expanded is not None:
                out += expanded
            elif aliases().get(item.lower()) is not None:
                out.append(parse_metric(item))
        return out
    if lowered in _DEFAULT_CUT:
        family, cutoffs = _DEFAULT_CUT[lowered]
        return [Metric(family, k) for k in cutoffs]
    # P_5,10 / P.5,10 / ndcg_cut.5,10 / P@5,10
    match = re.match(r"^(?P<base>.+?)(?:[_.]|@)(?P<ks>\d+(?:\s*,\s*\d+)+)$", text)
    if match is None:
        return None
    base = match.group("base")
    base = _DEFAULT_CUT[base.lower()][0] if base.lower() in _DEFAULT_CUT else base
    single = [parse_metric(f"{base}@{k.strip()}") for k in match.group("ks").split(",")]
    return list(dict.fromkeys(single))


def _trec_style(name: str) -> Metric | None:
    """trec_eval ``family_k`` / ``family.k`` / ``ndcg.1=3,2=9`` / ``rbp.p=0.95``, ranx ``rbp.95``."""
    text = name.strip()
    best: Metric | None = None
    for match in re.finditer(r"[_.]", text):
        base, rest = text[: match.start()], text[match.end() :]
        if base.lower() in _DEFAULT_CUT:
            family: tuple[str, dict[str, str]] | None = (_DEFAULT_CUT[base.lower()][0], {})
        else:
            family = _family_of(base)
        if family is None or not rest:
            continue
        spec = families()[family[0]]
        params = family[1]
        k: int | None = None
        if rest.isdigit():
            if spec.cutoff == "none" and spec.param("p") is not None:
                params["p"] = "0." + rest  # ranx rbp.95: graded gains, as ranx computes it
                params["gain"] = "grade"
            else:
                k = int(rest)
        elif "=" in rest and spec.param("gains") is not None:
            params["gains"] = rest  # trec_eval ndcg.1=3,2=9
        elif "=" in rest:
            params.update(_split_params(rest, name))  # trec_eval rbp.p=0.95
        else:
            continue
        best = Metric(family[0], k, tuple(params.items()))
    return best


def parse_metric(name: str | Metric) -> Metric:
    """Parse one metric name in canonical, ir_measures, trec_eval or ranx spelling.

    Raises :class:`~ragmeter.errors.MetricNameError` with a "did you mean" and the known
    metrics, or, for a name that means several metrics (``P``, ``ndcg_cut``, ``P_5,10``),
    says so (use :func:`parse_metrics` for those).

    >>> str(parse_metric("nDCG@10")), str(parse_metric("ndcg_cut_10")), str(parse_metric("RR"))
    ('ndcg@10', 'ndcg@10', 'mrr')
    >>> str(parse_metric("P(rel=2)@5")), str(parse_metric("hits@3")), str(parse_metric("r-precision"))
    ('precision(rel=2)@5', 'num_rel_ret@3', 'rprec')
    """
    if isinstance(name, Metric):
        return name
    if not isinstance(name, str):
        raise MetricNameError(f"metric name must be a string, not {type(name).__name__}")
    return _parse_text(name)


@lru_cache(maxsize=_CACHE_SIZE)
def _parse_text(name: str) -> Metric:
    """parse_metric for text; metrics are immutable, so parses are cached."""
    expanded = _expand(name)
    if expanded is not None:
        raise _several(name, expanded)
    _refuse_peer(name)
    # An exact registered name first, so names with underscores and digits
    # ("latency_p95_ms") are not mistaken for a trec_eval "family_k".
    exact = _family_of(name.strip())
    if exact is not None:
        return _build(exact[0], exact[1], None, name)
    match = _CALL.match(name)
    if match is not None:
        found = _family_of(match.group("name"))
        if found is not None:
            params = found[1]
            if match.group("params") is not None:
                params.update(_split_params(match.group("params"), name))
            k = match.group("k")
            return _build(found[0], params, None if k is None else _cutoff(k, name), name)
    trec = _trec_style(name)
    if trec is not None:
        return trec
    raise MetricNameError(unknown_message(name))


def _build(family: str, params: dict[str, str], k: int | None, name: str) -> Metric:
    # ir_measures spells "relevant retrieved" NumRet(rel=1).
    if family == "num_ret" and "rel" in params:
        family = "num_rel_ret"
    return Metric(family, k, tuple(params.items()))


def parse_metrics(names: Iterable[str | Metric] | str | Metric) -> list[Metric]:
    """Parse names into metrics, expanding list spellings; repeats are dropped.

    >>> [str(m) for m in parse_metrics("ndcg_cut.5,10")]
    ['ndcg@5', 'ndcg@10']
    >>> len(parse_metrics(["P", "recall"]))
    18
    """
    if isinstance(names, str | Metric):
        names = [names]
    out: list[Metric] = []
    for name in names:
        if isinstance(name, str):
            expanded = _expand(name)
            out += expanded if expanded is not None else [parse_metric(name)]
        else:
            out.append(parse_metric(name))
    return list(dict.fromkeys(out))
