"""Ranks of judged documents in scored rankings, for every query in one vectorised pass.

trec_eval orders a query's documents by score descending, ties by document id
descending, so the rank of a document with score ``s`` is ``1 + |{scores > s}| +
|{equal scores with a larger id}|``. All queries' scores are pulled out of the dicts
in one C-level pass (``np.fromiter`` over the chained ``.values()``); each judged
document is then compared with its own query's scores through a flat index, in
batches of at most ``MAX_COMPARISONS`` elements. Only ties go back to Python (to
compare document ids), so a query costs a few microseconds, not a numpy call per
query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain

import numpy as np
import numpy.typing as npt

from ragmeter.errors import InputError

__all__ = ["MAX_COMPARISONS", "scored_ranks"]

MAX_COMPARISONS = 1 << 23  # elements compared per batch (bounds memory to ~100 MB)

IntArray = npt.NDArray[np.int64]


def scored_ranks(
    qids: Sequence[str],
    rankings: Sequence[Mapping[str, float]],
    entry_query: Sequence[int],
    entry_doc: Sequence[str],
) -> IntArray:
    """The trec_eval rank of ``entry_doc[j]`` in ``rankings[entry_query[j]]``.

    Every entry's document must be in its ranking. ``qids`` name queries in errors.

    >>> scored_ranks(["q"], [{"a": 1.0, "b": 2.0, "c": 2.0}], [0, 0], ["a", "b"]).tolist()
    [3, 2]
    """
    n_entries = len(entry_doc)
    if n_entries == 0:
        return np.zeros(0, dtype=np.int64)
    lengths = np.fromiter(map(len, rankings), dtype=np.int64, count=len(rankings))
    starts = np.zeros(len(rankings), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    total = int(lengths.sum())
    scores = np.fromiter(
        chain.from_iterable(r.values() for r in rankings), dtype=np.float64, count=total
    )
    nan = np.isnan(scores)
    if nan.any():
        bad = int(np.searchsorted(starts, int(np.argmax(nan)), side="right")) - 1
        raise InputError(f"run query {qids[bad]}: a score is NaN")
    query = np.asarray(entry_query, dtype=np.int64)
    own = np.fromiter(
        (rankings[q][doc] for q, doc in zip(entry_query, entry_doc, strict=True)),
        dtype=np.float64,
        count=n_entries,
    )
    size = lengths[query]
    above = np.zeros(n_entries, dtype=np.int64)
    equal = np.zeros(n_entries, dtype=np.int64)
    begin = 0
    while begin < n_entries:
        # the largest batch of entries whose comparisons fit MAX_COMPARISONS (at least one)
        sizes = np.cumsum(size[begin:])
        end = begin + max(1, int(np.searchsorted(sizes, MAX_COMPARISONS, side="right")))
        batch = slice(begin, end)
        widths = size[batch]
        offsets = np.zeros(widths.size, dtype=np.int64)
        np.cumsum(widths[:-1], out=offsets[1:])
        flat = np.arange(int(widths.sum()), dtype=np.int64)
        flat += np.repeat(starts[query[batch]] - offsets, widths)
        values = scores[flat]
        threshold = np.repeat(own[batch], widths)
        above[batch] = np.add.reduceat(values > threshold, offsets)
        equal[batch] = np.add.reduceat(values == threshold, offsets)
        begin = end
    for j in np.flatnonzero(equal > 1).tolist():
        # trec_eval breaks score ties by document id, descending (strcmp order).
        ranking = rankings[int(query[j])]
        score, doc = own[j], entry_doc[j]
        above[j] += sum(1 for other, s in ranking.items() if s == score and other > doc)
    ranks: IntArray = above + 1
    return ranks
