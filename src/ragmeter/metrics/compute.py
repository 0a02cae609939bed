"""``compute_metrics``: ranking metrics from plain dicts (qrels and a run).

Only the ranks of the *judged* documents matter to every supported metric, so
this never builds a full ranking matrix: for a scored run the ranks of the relevant
documents of every query are counted in one vectorised pass over all scores
(:mod:`ragmeter.metrics._ranks`; trec_eval order: score descending, ties by document
id descending); for ranked lists a rank is the document's first position after
dropping repeats, found for every query by C-level maps (:func:`_listed`, issue 29.2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, compress, repeat
from operator import contains, indexOf, is_not, methodcaller
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ragmeter.errors import InputError
from ragmeter.metrics._base import Metric
from ragmeter.metrics._depth import cut_run
from ragmeter.metrics._ranks import entry_ranks, scored_ranks
from ragmeter.metrics.engine import compute_from_ranks, needs, ranking_metrics

__all__ = ["MetricsResult", "compute_columns", "compute_metrics"]

Qrels = Mapping[str, Mapping[str, int]]
Ranking = Mapping[str, float] | Sequence[str] | Any  # Any: numpy arrays of ids
Run = Mapping[str, Ranking]
EMPTY_QRELS = (
    "the qrels hold no question, so there is nothing to evaluate (an empty evaluation "
    "has no mean; check the qrels file or the gold set)"
)


@dataclass(frozen=True)
class MetricsResult:
    """Means and per-question values of ranking metrics.

    * ``means``: ``{metric: mean over every question in the qrels}``
    * ``per_query``: ``{metric: {qid: value}}``, one value for every question in the qrels
    * ``missing``: sorted qids that are in the qrels but have no ranking in the run;
      they score 0 and stay in every mean (trec_eval ``-c``).
    """

    means: dict[str, float]
    per_query: dict[str, dict[str, float]]
    missing: list[str] = field(default_factory=list)

    def to_dict(self, per_query: bool = True) -> dict[str, Any]:
        """A JSON-ready dict: ``means``, ``per_query`` (optional) and ``missing``.

        >>> compute_metrics({"q": {"a": 1}}, {}, ["mrr"]).to_dict(per_query=False)
        {'means': {'mrr': 0.0}, 'missing': ['q']}
        """
        out: dict[str, Any] = {"means": dict(self.means)}
        if per_query:
            out["per_query"] = {m: dict(v) for m, v in self.per_query.items()}
        out["missing"] = list(self.missing)
        return out


def _ranks_listed(
    qid: str, ranking: Sequence[str], relevant: dict[str, int]
) -> list[tuple[int, int]]:
    """(rank, grade) of each relevant document in a ranked list; repeats are dropped."""
    unique = dict.fromkeys(ranking)
    order: Sequence[str] = ranking if len(unique) == len(ranking) else list(unique)
    return [(order.index(doc) + 1, grade) for doc, grade in relevant.items() if doc in unique]


def _as_ranking(qid: str, ranking: Any) -> Mapping[str, float] | Sequence[str]:
    if type(ranking) is dict or isinstance(ranking, Mapping):
        return ranking
    if isinstance(ranking, list | tuple):
        return ranking
    if isinstance(ranking, np.ndarray):
        listed: list[str] = ranking.tolist()
        return listed
    raise InputError(
        f"run query {qid}: a ranking must be a dict of doc id -> score or a list of "
        f"doc ids, not {type(ranking).__name__}"
    )


def compute_metrics(
    qrels: Qrels, run: Run, metrics: Iterable[str | Metric] | str, *, depth: int | None = None
) -> MetricsResult:
    """Compute ranking metrics exactly as trec_eval does, from plain dicts.

    ``qrels`` is ``{qid: {doc_id: grade}}`` (grade <= 0 is non-relevant). ``run`` maps a
    qid to either ``{doc_id: score}`` (ordered by score descending, ties by doc id
    descending, as trec_eval orders) or a list of doc ids in rank order (a document
    repeated later is dropped: the first occurrence wins). Questions of the run that
    are not in the qrels are ignored; questions of the qrels with no ranking score 0
    and are listed in ``missing``. Empty qrels are an :class:`~ragmeter.errors.InputError`
    (there is no mean to give), not 0.0. List spellings (``P``, ``ndcg_cut.5,10``,
    ``official``) expand to several metrics. ``depth=N`` evaluates only the top N
    documents of each ranking, as trec_eval ``-M N`` does.

    >>> qrels = {"q1": {"d1": 1, "d2": 2}, "q2": {"d9": 1}}
    >>> result = compute_metrics(qrels, {"q1": ["d3", "d1", "d1", "d2"]}, ["RR", "P@2"])
    >>> result.means
    {'mrr': 0.25, 'precision@2': 0.25}
    >>> result.per_query["mrr"], result.missing
    ({'q1': 0.5, 'q2': 0.0}, ['q2'])
    >>> compute_metrics(qrels, {"q1": ["d3", "d1", "d1", "d2"]}, ["RR"], depth=1).means
    {'mrr': 0.0}
    """
    qids, values, missing = _ranked(qrels, run, metrics, depth)
    return _result(qids, values, missing)


_Ranked = tuple[list[str], dict[str, npt.NDArray[np.float64]], list[str]]  # qids, values, missing


def compute_columns(
    qrels: Qrels, run: Run, metrics: Iterable[str | Metric] | str
) -> tuple[dict[str, float], list[str], dict[str, npt.NDArray[np.float64]]]:
    """:func:`compute_metrics`' means, and its per-question values as columns: the qrels'
    ids and one array per metric aligned with them, no dict per metric (issue 29.2).

    >>> means, qids, values = compute_columns({"q1": {"d1": 1}, "q2": {"d9": 1}},
    ...                                       {"q1": ["d3", "d1"]}, ["RR"])
    >>> means, qids, values["mrr"].tolist()
    ({'mrr': 0.25}, ['q1', 'q2'], [0.5, 0.0])
    """
    qids, values, _ = _ranked(qrels, run, metrics, None)
    return _means(values), qids, values


def _ranked(
    qrels: Qrels, run: Run, metrics: Iterable[str | Metric] | str, depth: int | None
) -> _Ranked:
    """Every metric's values (one array per metric, in the qrels' order) and the qids of
    the qrels without a ranking."""
    wanted = ranking_metrics(metrics)
    if depth is not None:
        run = cut_run(run, depth)
    qids = list(qrels)
    n = len(qids)
    if n == 0:
        raise InputError(EMPTY_QRELS)
    want = needs(wanted)
    # judged@k and bpref also need the ranks of documents judged 0 (and below rel)
    lowest = 0 if "judged" in want else 1
    rankings = list(map(run.get, qids))
    judged = list(qrels.values())
    grades = list(chain.from_iterable(map(_grades_of, judged)))
    # infAP: negative grades (pooled, unjudged) are ranked too, on the per-query path.
    pooled = "pooled" in want
    if not pooled and all(issubclass(kind, _GRADE_TYPES) for kind in set(map(type, grades))):
        kinds = set(map(type, rankings))
        if kinds <= _SCORED_TYPES:
            return _from_dicts(qids, judged, grades, rankings, wanted, want, lowest)
        if kinds <= _LISTED_TYPES:
            return _from_dicts(qids, judged, grades, rankings, wanted, want, lowest, _listed)
    # Arrays or mixed rankings, infAP, or grades that are not plain numbers (which the loop
    # refuses): one query at a time.
    return _from_any(qids, qrels, run, wanted, want, lowest, pooled=pooled)


def _from_any(
    qids: list[str],
    qrels: Qrels,
    run: Run,
    wanted: list[Metric],
    want: set[str],
    lowest: int,
    *,
    pooled: bool = False,
) -> _Ranked:
    """compute_metrics for any rankings (lists, arrays, mixed), one query at a time."""
    n = len(qids)
    n_relevant = np.zeros(n, dtype=np.int64)
    n_retrieved = np.zeros(n, dtype=np.int64)
    n_judged = np.zeros(n, dtype=np.int64)
    ideal_index: list[int] = []
    ideal_gains: list[int] = []
    missing: list[str] = []
    # Scored rankings are ranked for all queries at once (_ranks.scored_ranks); ranked
    # lists directly. One entry per retrieved target document.
    scored: list[Mapping[str, float]] = []
    scored_qids: list[str] = []
    entry_ranking: list[int] = []
    entry_doc: list[str] = []
    entry_query: list[int] = []
    entry_grade: list[int] = []
    listed_query: list[int] = []
    listed_rank: list[int] = []
    listed_grade: list[int] = []
    for i, qid in enumerate(qids):
        judged = qrels[qid]
        relevant = {doc: grade for doc, grade in judged.items() if grade > 0}
        if relevant:
            n_relevant[i] = len(relevant)
            ideal_gains.extend(sorted(relevant.values(), reverse=True))
            ideal_index.extend([i] * len(relevant))
        targets = relevant
        if lowest == 0:
            targets = {doc: grade for doc, grade in judged.items() if grade >= 0}
            n_judged[i] = len(targets)
            if pooled:
                targets = dict(judged)
        ranking = run.get(qid)
        if ranking is None:
            missing.append(qid)
            continue
        ranking = _as_ranking(qid, ranking)
        if "retrieved" in want:
            n_retrieved[i] = len(ranking) if isinstance(ranking, Mapping) else len(set(ranking))
        if not targets:
            continue
        if isinstance(ranking, Mapping):
            found = [doc for doc in targets if doc in ranking]
            if found:
                entry_ranking.extend([len(scored)] * len(found))
                scored.append(ranking)
                scored_qids.append(qid)
                entry_doc.extend(found)
                entry_query.extend([i] * len(found))
                entry_grade.extend([targets[doc] for doc in found])
        else:
            for rank, grade in _ranks_listed(qid, ranking, targets):
                listed_query.append(i)
                listed_rank.append(rank)
                listed_grade.append(grade)
    ranks = np.concatenate(
        [
            scored_ranks(scored_qids, scored, entry_ranking, entry_doc),
            np.array(listed_rank, dtype=np.int64),
        ]
    )
    query_index = np.array(entry_query + listed_query, dtype=np.int64)
    gains = np.array(entry_grade + listed_grade, dtype=np.float64)
    order = np.lexsort((ranks, query_index))  # by query, then rank
    query_index, ranks, gains = query_index[order], ranks[order], gains[order]
    unjudged = gains < 0
    pooled_ranks = (query_index[unjudged], ranks[unjudged]) if pooled else None
    if pooled:
        query_index, ranks, gains = query_index[~unjudged], ranks[~unjudged], gains[~unjudged]
    counted = n_judged if lowest == 0 else None
    ranked = _Ranks(query_index, ranks, gains, n_relevant, ideal_index, ideal_gains)
    return qids, _values(qids, ranked, wanted, n_retrieved, counted, pooled_ranks), missing


_SCORED_TYPES = {dict, type(None)}
_LISTED_TYPES = {list, tuple, type(None)}
_GRADE_TYPES = (int, float, np.integer, np.floating)  # bool is an int
_grades_of = methodcaller("values")  # a judged mapping's grades
_ABSENT = object()  # dict.get's default: a document that is not in the ranking


def _from_dicts(
    qids: list[str],
    judged: list[Mapping[str, int]],
    grade_list: list[int],
    rankings: list[Any],
    wanted: list[Metric],
    want: set[str],
    lowest: int,
    lookup: Lookup | None = None,
) -> _Ranked:
    """compute_metrics when every ranking is a dict of scores (or absent), vectorised;
    with ``lookup=_listed``, when every ranking is a list or tuple of ids (or absent).

    The qrels are flattened into one array of grades; the judged documents are ranked
    by ``lookup`` (:func:`_scored` or :func:`_listed`) in a constant number of C-level
    and numpy passes, never a loop body per query.
    """
    n = len(qids)
    sizes = np.fromiter(map(len, judged), dtype=np.int64, count=n)
    grades = np.array(grade_list, dtype=np.float64)
    query = np.repeat(np.arange(n, dtype=np.int64), sizes)
    positive = grades > 0
    n_relevant = np.bincount(query[positive], minlength=n)
    ideal_query, ideal_grade = query[positive], grades[positive]
    order = np.lexsort((-ideal_grade, ideal_query))  # by query, then grade descending
    target = grades >= 0 if lowest == 0 else positive
    n_judged = np.bincount(query[target], minlength=n) if lowest == 0 else None
    docs = list(compress(chain.from_iterable(judged), target.tolist()))
    target_query, target_grade = query[target], grades[target]
    missing: list[str] = []
    present = rankings
    if None in rankings:  # dicts, lists and tuples: `in` compares them with None in C
        missing = [qid for qid, ranking in zip(qids, rankings, strict=True) if ranking is None]
        present = [_EMPTY if ranking is None else ranking for ranking in rankings]
    found, ranks, n_retrieved = (lookup or _scored)(qids, present, target_query, docs)
    if "retrieved" not in want:
        n_retrieved = np.zeros(n, dtype=np.int64)
    entry_query = target_query[found]
    order_found = np.lexsort((ranks, entry_query))  # by query, then rank
    ranked = _Ranks(
        entry_query[order_found],
        ranks[order_found],
        target_grade[found][order_found],
        n_relevant,
        ideal_query[order],
        ideal_grade[order],
    )
    return qids, _values(qids, ranked, wanted, n_retrieved, n_judged), missing


Lookup = Callable[
    [list[str], list[Any], npt.NDArray[np.int64], list[Any]],
    tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64], npt.NDArray[np.int64]],
]
"""(qids, rankings, each target's query index, each target's document) -> (which targets
were retrieved, their ranks, each ranking's length): targets are listed by query."""


def _scored(
    qids: list[str], present: list[Any], target_query: npt.NDArray[np.int64], docs: list[Any]
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The targets' trec_eval ranks in dicts of scores: looked up in their query's ranking
    by one C-level ``map(dict.get, ...)``, ranked by
    :func:`~ragmeter.metrics._ranks.entry_ranks`."""
    n = len(qids)
    per_target = np.bincount(target_query, minlength=n).tolist()
    looked_up = list(
        map(dict.get, chain.from_iterable(map(repeat, present, per_target)), docs, repeat(_ABSENT))
    )
    found = np.fromiter(map(is_not, looked_up, repeat(_ABSENT)), dtype=bool, count=len(docs))
    found_list = found.tolist()
    entry_query = target_query[found]
    head = np.ones(entry_query.size, dtype=bool)
    head[1:] = entry_query[1:] != entry_query[:-1]
    scanned = entry_query[head].tolist()
    ranks = entry_ranks(
        [qids[i] for i in scanned],
        [present[i] for i in scanned],
        np.cumsum(head) - 1,
        list(compress(docs, found_list)),
        list(compress(looked_up, found_list)),
    )
    return found, ranks, np.fromiter(map(len, present), dtype=np.int64, count=n)


def _listed(
    qids: list[str], present: list[Any], target_query: npt.NDArray[np.int64], docs: list[Any]
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The targets' ranks in ranked lists (a repeat dropped: the first occurrence wins), for
    every query at once (issue 29.2).

    A list with a repeat is replaced by its distinct ids first; then each target is looked
    for in its own query's list by C-level ``map(operator.contains, ...)`` and its rank is
    its ``operator.indexOf`` plus one: no Python loop body per query or per target.
    """
    n = len(qids)
    lengths = np.fromiter(map(len, present), dtype=np.int64, count=n)
    distinct = np.fromiter(map(len, map(set, present)), dtype=np.int64, count=n)
    lists = present
    repeated = np.flatnonzero(distinct != lengths).tolist()
    if repeated:
        lists = list(present)
        for i in repeated:
            lists[i] = list(dict.fromkeys(present[i]))
    per_target = np.bincount(target_query, minlength=n)
    one_each = len(docs) == n and bool((per_target == 1).all())
    counts = per_target.tolist()

    def owners() -> Iterable[Any]:
        """Each target's list (one target a query: the lists as they are)."""
        return lists if one_each else chain.from_iterable(map(repeat, lists, counts))

    found_list = list(map(contains, owners(), docs))
    found = np.array(found_list, dtype=bool)
    ranks = np.fromiter(
        map(indexOf, compress(owners(), found_list), compress(docs, found_list)),
        dtype=np.int64,
        count=int(found.sum()),
    )
    return found, ranks + 1, distinct


_EMPTY: dict[str, float] = {}


def result_from_ranks(
    qids: Sequence[str],
    query_index: npt.ArrayLike,
    ranks: npt.ArrayLike,
    gains: npt.ArrayLike,
    n_relevant: np.ndarray,
    ideal_index: npt.ArrayLike,
    ideal_gains: npt.ArrayLike,
    metrics: Sequence[Metric],
    missing: Iterable[str],
    *,
    n_retrieved: np.ndarray | None = None,
    n_judged: np.ndarray | None = None,
    pooled: tuple[np.ndarray, np.ndarray] | None = None,
) -> MetricsResult:
    """Score the ranks of judged items (see ``engine.compute_from_ranks``) into a result.

    Shared by ``compute_metrics`` and the streaming TREC reader, which collect the
    same sparse arrays from dicts and from files.
    """
    found = _Ranks(query_index, ranks, gains, n_relevant, ideal_index, ideal_gains)
    return _result(qids, _values(qids, found, metrics, n_retrieved, n_judged, pooled), missing)


class _Ranks(NamedTuple):
    """The ranks of judged items, as ``engine.compute_from_ranks`` takes them."""

    query_index: npt.ArrayLike
    ranks: npt.ArrayLike
    gains: npt.ArrayLike
    n_relevant: np.ndarray
    ideal_index: npt.ArrayLike
    ideal_gains: npt.ArrayLike


def _values(
    qids: Sequence[str],
    found: _Ranks,
    metrics: Sequence[Metric],
    n_retrieved: np.ndarray | None = None,
    n_judged: np.ndarray | None = None,
    pooled: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[str, npt.NDArray[np.float64]]:
    """Each metric's values, one array aligned with ``qids``."""
    if len(qids) == 0:
        raise InputError(EMPTY_QRELS)
    return compute_from_ranks(
        len(qids),
        np.array(found.query_index, dtype=np.int64),
        np.array(found.ranks, dtype=np.int64),
        np.array(found.gains, dtype=np.float64),
        found.n_relevant,
        np.array(found.ideal_index, dtype=np.int64),
        np.array(found.ideal_gains, dtype=np.float64),
        list(metrics),
        n_retrieved=n_retrieved,
        n_judged=n_judged,
        pooled_query_index=None if pooled is None else pooled[0],
        pooled_ranks=None if pooled is None else pooled[1],
    )


def _result(
    qids: Sequence[str], values: Mapping[str, npt.NDArray[np.float64]], missing: Iterable[str]
) -> MetricsResult:
    per_query = {name: dict(zip(qids, v.tolist(), strict=True)) for name, v in values.items()}
    return MetricsResult(means=_means(values), per_query=per_query, missing=sorted(missing))


def _means(values: Mapping[str, npt.NDArray[np.float64]]) -> dict[str, float]:
    return {name: float(v.mean()) for name, v in values.items()}
