"""Ranks of judged documents in scored rankings, for every query in one vectorised pass.

trec_eval orders a query's documents by score descending, ties by document id
descending, so the rank of a document with score ``s`` is ``1 + |{scores > s}| +
|{equal scores with a larger id}|``. All queries' scores are pulled out of the dicts
straight into one float64 buffer (``struct.pack_into`` per ranking, about 40 % less
per score than ``np.fromiter``; reading every score once is the floor, since any of
them may outrank a judged document). When every
ranking has the same length (a top-k retriever, a run file cut at 1,000) the scores
are a ``rankings x length`` matrix and each ranking's first judged document is
compared with its row by broadcasting; otherwise through one threshold per score and
``np.add.reduceat`` over the rankings' segments. Further judged documents of a
ranking are compared through a row (or flat) index, in batches of at most
``MAX_COMPARISONS`` elements. Only ties go back to Python (to compare document ids),
so a query costs well under a microsecond of Python, not a numpy call per query.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from itertools import chain

import numpy as np
import numpy.typing as npt

from ragmeter.errors import InputError

__all__ = ["MAX_COMPARISONS", "PACK_BATCH", "entry_ranks", "scored_ranks"]

MAX_COMPARISONS = 1 << 23  # elements compared per batch (bounds memory to ~100 MB)
PACK_BATCH = 512  # scores of short rankings converted per struct call

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def scored_ranks(
    qids: Sequence[str],
    rankings: Sequence[Mapping[str, float]],
    entry_query: Sequence[int],
    entry_doc: Sequence[str],
    *,
    max_comparisons: int = MAX_COMPARISONS,
) -> IntArray:
    """The trec_eval rank of ``entry_doc[j]`` in ``rankings[entry_query[j]]``.

    Every entry's document must be in its ranking, and a ranking's entries listed
    together. ``qids`` name queries in errors.

    >>> scored_ranks(["q"], [{"a": 1.0, "b": 2.0, "c": 2.0}], [0, 0], ["a", "b"]).tolist()
    [3, 2]
    """
    own = [rankings[q][doc] for q, doc in zip(entry_query, entry_doc, strict=True)]
    return entry_ranks(
        qids,
        rankings,
        np.asarray(entry_query, dtype=np.int64),
        entry_doc,
        own,
        max_comparisons=max_comparisons,
    )


def entry_ranks(
    qids: Sequence[str],
    rankings: Sequence[Mapping[str, float]],
    entry_query: IntArray,
    entry_doc: Sequence[str],
    own_scores: Sequence[object],
    *,
    max_comparisons: int = MAX_COMPARISONS,
) -> IntArray:
    """:func:`scored_ranks` when the caller already holds each entry's score ``own[j]``.

    ``entry_query`` must list each ranking's entries together, in ranking order, and
    every ranking must have at least one entry (as ``compute_metrics`` builds them). A
    score that is not a number, or is NaN, is an InputError naming the query.

    >>> entry_ranks(["q"], [{"a": 1.0, "b": 2.0}], np.array([0]), ["a"], [1.0])
    array([2])
    """
    n_entries = len(entry_doc)
    if n_entries == 0:
        return np.zeros(0, dtype=np.int64)
    query = entry_query
    lengths = np.fromiter(map(len, rankings), dtype=np.int64, count=len(rankings))
    starts = np.zeros(len(rankings), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    scores = _read_scores(qids, rankings, lengths)
    # Every entry's score is one of its ranking's, all numbers now.
    own = np.fromiter(own_scores, dtype=np.float64, count=n_entries)
    nan = np.isnan(scores)
    if nan.any():
        bad = int(np.searchsorted(starts, int(np.argmax(nan)), side="right")) - 1
        raise InputError(f"run query {qids[bad]}: a score is NaN")
    above = np.zeros(n_entries, dtype=np.int64)
    equal = np.zeros(n_entries, dtype=np.int64)
    first = np.ones(n_entries, dtype=bool)
    first[1:] = query[1:] != query[:-1]
    if not np.array_equal(query[first], np.arange(len(rankings))):
        raise ValueError("entry_query must list each ranking's entries together, in order")
    rest = np.flatnonzero(~first)
    width = int(lengths[0])
    if bool(np.all(lengths == width)):
        # Equal lengths: the scores are a matrix and each ranking's first entry is
        # compared with its own row by broadcasting (no per-score threshold array).
        matrix = scores.reshape(len(rankings), width)
        column = own[first][:, None]
        above[first] = np.count_nonzero(matrix > column, axis=1)
        equal[first] = np.count_nonzero(matrix == column, axis=1)
        _compare_rows(matrix, query, own, rest, above, equal, max_comparisons)
    else:
        # An entry that is its ranking's first is compared through one threshold per
        # score, summed over each ranking's segment; the rest through a flat index.
        # (No segment is empty: each ranking holds its entries' documents.)
        threshold = np.repeat(own[first], lengths)
        above[first] = np.add.reduceat(scores > threshold, starts)
        equal[first] = np.add.reduceat(scores == threshold, starts)
        _compare(scores, starts, lengths, query, own, rest, above, equal, max_comparisons)
    for j in np.flatnonzero(equal > 1).tolist():
        # trec_eval breaks score ties by document id, descending (strcmp order).
        ranking = rankings[int(query[j])]
        score, doc = own[j], entry_doc[j]
        above[j] += sum(1 for other, s in ranking.items() if s == score and other > doc)
    ranks: IntArray = above + 1
    return ranks


def _read_scores(
    qids: Sequence[str], rankings: Sequence[Mapping[str, float]], lengths: IntArray
) -> FloatArray:
    """Every ranking's scores, in order, in one float64 array; a non-number names its query.

    ``struct`` converts each score with ``PyFloat_AsDouble`` (a float, an int, a numpy
    number, anything with ``__float__``) and refuses the rest (a string, None), where
    ``np.fromiter`` would parse ``"1.5"`` and turn None into NaN. Short rankings are
    packed ``PACK_BATCH`` scores at a time, so Python works per batch, not per ranking.
    """
    ends = np.cumsum(lengths)
    out = np.empty(int(ends[-1]) if ends.size else 0, dtype=np.float64)
    view = out.data.cast("B")
    # group g holds the rankings whose last score falls in [g * PACK_BATCH, (g+1) * ...)
    group = (ends - 1) // PACK_BATCH
    cuts = [0, *(np.flatnonzero(group[1:] != group[:-1]) + 1).tolist(), len(rankings)]
    bounds = [0, *ends.tolist()]
    packers: dict[int, Callable[..., None]] = {}
    for begin, end in zip(cuts[:-1], cuts[1:], strict=True):
        size = bounds[end] - bounds[begin]
        pack = packers.get(size)
        if pack is None:
            pack = packers[size] = struct.Struct(f"{size}d").pack_into
        try:
            if end - begin == 1:
                pack(view, 8 * bounds[begin], *rankings[begin].values())
            else:
                values = chain.from_iterable([r.values() for r in rankings[begin:end]])
                pack(view, 8 * bounds[begin], *values)
        except struct.error:
            for i in range(begin, end):
                bad = [v for v in rankings[i].values() if not _is_number(v)]
                if bad:
                    raise InputError(
                        f"run query {qids[i]}: a score is not a number "
                        f"({type(bad[0]).__name__} {bad[0]!r})"
                    ) from None
            raise  # pragma: no cover - struct refused a value _is_number accepts
    return out


def _is_number(value: object) -> bool:
    try:
        struct.pack("d", value)
    except struct.error:
        return False
    return True


def _compare_rows(
    matrix: FloatArray,
    query: IntArray,
    own: FloatArray,
    entries: IntArray,
    above: IntArray,
    equal: IntArray,
    max_comparisons: int,
) -> None:
    """Count, for ``entries``, the scores of their ranking's row above and equal to their own."""
    step = max(1, max_comparisons // matrix.shape[1])
    for begin in range(0, entries.size, step):
        batch = entries[begin : begin + step]
        rows = matrix[query[batch]]
        column = own[batch][:, None]
        above[batch] = np.count_nonzero(rows > column, axis=1)
        equal[batch] = np.count_nonzero(rows == column, axis=1)


def _compare(
    scores: FloatArray,
    starts: IntArray,
    lengths: IntArray,
    query: IntArray,
    own: FloatArray,
    entries: IntArray,
    above: IntArray,
    equal: IntArray,
    max_comparisons: int,
) -> None:
    """Count, for ``entries``, the scores of their ranking above and equal to their own."""
    size = lengths[query[entries]]
    begin = 0
    while begin < entries.size:
        # the largest batch of entries whose comparisons fit max_comparisons (at least one)
        sizes = np.cumsum(size[begin:])
        end = begin + max(1, int(np.searchsorted(sizes, max_comparisons, side="right")))
        batch = entries[begin:end]
        widths = size[begin:end]
        offsets = np.zeros(widths.size, dtype=np.int64)
        np.cumsum(widths[:-1], out=offsets[1:])
        flat = np.arange(int(widths.sum()), dtype=np.int64)
        flat += np.repeat(starts[query[batch]] - offsets, widths)
        values = scores[flat]
        threshold = np.repeat(own[batch], widths)
        above[batch] = np.add.reduceat(values > threshold, offsets)
        equal[batch] = np.add.reduceat(values == threshold, offsets)
        begin = end
