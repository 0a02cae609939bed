"""Ranking metrics straight from TREC files, in bounded memory and at numpy speed.

``metrics_from_trec(qrels, run, metrics)`` never builds the run as Python objects.
The run file is read in chunks of a few megabytes; each chunk is cut into lines and
fields with numpy (newline and separator positions), scores are parsed by a
vectorised decimal parser (exact: ``[-]digits[.digits]`` with at most 15
significant digits is ``mantissa / 10**k``, one correctly rounded division, as
``strtod`` does; other spellings go through numpy's own float parsing), and
document ids are hashed so that only lines whose document is judged relevant for
*some* query are looked at in Python. For each query block the rank of every
retrieved relevant document is counted in trec_eval order (score descending, ties
by document id descending), which is all the metrics engine needs
(``engine.compute_from_ranks``). Memory: one chunk plus one entry per retrieved
relevant document.

Semantics are those of pytrec_eval's ``parse_run`` + ``RelevanceEvaluator``: run
queries not in the qrels are ignored, qrels queries without a ranking score 0 and
are listed in ``missing``, and a document listed twice for a query is an error
(trec_eval: ``duplicate docs``), in every query, as in the in-memory reader. The
input rules are trec_eval 10's (see :mod:`ragmeter.formats.trec`). A
run whose queries are not contiguous (rare; every retrieval tool writes
them grouped) is read a second time by a plain Python reader.

Lines that are not exactly six fields split by one space or tab (blank lines,
CRLF, runs of spaces) take a slower per-line path for their chunk; a malformed
line is a ``RunFileError`` naming the file, line and field.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ragmeter.errors import RunFileError, located
from ragmeter.formats.trec import duplicate_error
from ragmeter.formats.trec_stream import (
    F64,
    I64,
    Lines,
    blocks,
    hash_bytes,
    matrix,
    normalise,
    open_run,
    pack_hash,
    parse_scores,
    strip_bom,
    words,
)
from ragmeter.metrics._base import Metric
from ragmeter.metrics._depth import check_depth
from ragmeter.metrics.compute import MetricsResult, compute_metrics, result_from_ranks
from ragmeter.metrics.engine import needs, ranking_metrics

__all__ = ["CHUNK_BYTES", "is_trec_run", "metrics_from_trec"]

CHUNK_BYTES = 8 << 20
_MIX = np.uint64(0x9E3779B97F4A7C15)
_FILTER_SIZE = 1 << 22
_FILTER_MASK = np.uint64(_FILTER_SIZE - 1)
POOLED = -(1 << 62)  # lowest grade collected for infAP: every qrels document, negatives too


class _Unsorted(Exception):
    """A query's lines are not contiguous in the run file."""


# -- the reader ------------------------------------------------------------------------


def _scores_of(lines: Lines, rows: I64) -> F64 | None:
    length = lines.score_len[rows]
    mat = matrix(lines.arr, lines.score_start[rows], length, int(length.max()), clear=False)
    scores = parse_scores(mat, length)
    if scores is None:
        mat[np.arange(mat.shape[1]) >= length[:, None]] = 0
        try:
            scores = np.ascontiguousarray(mat).view(f"S{mat.shape[1]}").ravel().astype(np.float64)
        except ValueError:
            return None
    return None if np.isnan(scores).any() else scores


class _Chunk(NamedTuple):
    """What one chunk of whole query blocks contributes, computed without shared state."""

    qids: list[bytes]  # every query id, in file order (one per block)
    found: list[tuple[int, int, int]]  # (query index, rank, grade) of retrieved relevant docs
    retrieved: list[tuple[int, int]] = []  # (query index, lines) of each judged query's block


class _Ranks:
    """What a run contributes: the rank and grade of each retrieved relevant document."""

    def __init__(
        self, qrels: dict[str, dict[str, int]], lowest: int = 1, depth: int | None = None
    ) -> None:
        self.qrels = qrels
        self.depth = depth  # trec_eval -M: only the top `depth` lines of a block count
        self.lowest = lowest
        self.qids = list(qrels)
        self.index = {qid.encode(): i for i, qid in enumerate(self.qids)}
        # The documents whose ranks are collected: grade >= 1, or >= 0 when a metric
        # (judged@k, bpref) needs the judged non-relevant ones too.
        self.relevant = [
            {doc.encode(): grade for doc, grade in qrels[qid].items() if grade >= lowest}
            for qid in self.qids
        ]
        self.retrieved = np.zeros(len(self.qids), dtype=np.int64)
        self.doc_hashes = np.unique(hash_bytes({d for rel in self.relevant for d in rel}))
        # A bitmap of hash suffixes rules out almost every line with one lookup.
        self.maybe = np.zeros(_FILTER_SIZE, dtype=bool)
        self.maybe[(self.doc_hashes & _FILTER_MASK).astype(np.int64)] = True
        self.found: dict[int, list[tuple[int, int]]] = {}
        self.seen = np.zeros(len(self.qids), dtype=bool)
        self.done: set[bytes] = set()  # query ids of finished blocks (to spot unsorted files)

    def prepare(self, path: Path, buf: bytes, first_line: int) -> _Chunk:
        """Ranks of the relevant documents in ``buf`` (whole query blocks); thread-safe."""
        lines = Lines(buf)
        numbers: list[int] | int = first_line
        if not lines.ok:
            normal, numbers = normalise(path, buf, first_line)
            if not normal:
                return _Chunk([], [])
            lines = Lines(normal)
        starts = _block_starts(lines)
        bounds = np.append(starts, lines.n).tolist()
        qids = [lines.qid(start) for start in bounds[:-1]]
        # Every line is hashed: a document repeated in any query is refused (trec_eval 10
        # refuses it in the queries it evaluates; the in-memory reader in every query).
        length = lines.doc_len
        n_words = -(-int(length.max()) // 8)
        all_hashes = pack_hash(words(lines.arr, lines.doc_start, length, n_words), length)
        edges: I64 = np.asarray(bounds, dtype=np.int64)
        block_id = np.repeat(np.arange(len(qids), dtype=np.uint64), edges[1:] - edges[:-1])
        keys = all_hashes ^ (block_id * _MIX)
        ordered = np.sort(keys)
        twice = ordered[1:][ordered[1:] == ordered[:-1]]
        if twice.size:  # blocks that may repeat a document (a hash collision only costs time)
            for b in sorted(set(block_id[np.isin(keys, twice)].tolist())):
                self._refuse_repeats(path, lines, (bounds[b], bounds[b + 1], qids[b]), numbers)
        blocks: list[tuple[int, int, int]] = []  # (start, stop, query index)
        retrieved: list[tuple[int, int]] = []
        for b, qid in enumerate(qids):
            q = self.index.get(qid, -1)
            if q >= 0:
                lines_in_block = bounds[b + 1] - bounds[b]
                if self.depth is not None:
                    lines_in_block = min(lines_in_block, self.depth)
                retrieved.append((q, lines_in_block))
                if self.relevant[q]:
                    blocks.append((bounds[b], bounds[b + 1], q))
        if not blocks:
            return _Chunk(qids, [], retrieved)
        sizes = np.array([stop - start for start, stop, _ in blocks], dtype=np.int64)
        offsets = np.zeros(len(blocks) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        rows = np.concatenate([np.arange(start, stop) for start, stop, _ in blocks])
        hashes = all_hashes[rows]
        candidates = np.flatnonzero(self.maybe[(hashes & _FILTER_MASK).astype(np.int64)])
        pos = np.searchsorted(self.doc_hashes, hashes[candidates])
        pos[pos == self.doc_hashes.size] = 0
        candidates = candidates[self.doc_hashes[pos] == hashes[candidates]]
        if candidates.size == 0:
            return _Chunk(qids, [], retrieved)
        scores = _scores_of(lines, rows)
        if scores is None:
            normalise(path, buf, first_line)  # raises, naming the line
            raise RunFileError(located("run file", path, None, "a score is not a number"))
        of_block = np.searchsorted(offsets, candidates, "right") - 1
        found: list[tuple[int, int, int]] = []
        for j, b in zip(candidates.tolist(), of_block.tolist(), strict=True):
            q = blocks[b][2]
            grade = self.relevant[q].get(lines.doc(int(rows[j])))
            if grade is not None:
                block = scores[offsets[b] : offsets[b + 1]]
                rank = _rank(lines, block, rows, int(offsets[b]), j)
                if self.depth is None or rank <= self.depth:
                    found.append((q, rank, grade))
        return _Chunk(qids, found, retrieved)

    def _refuse_repeats(
        self, path: Path, lines: Lines, block: tuple[int, int, bytes], numbers: list[int] | int
    ) -> None:
        """A document listed twice for one query is an error, as in trec_eval 10."""
        start, stop, qid = block
        listed: set[bytes] = set()
        for i in range(start, stop):
            doc = lines.doc(i)
            if doc in listed:
                number = numbers[i] if isinstance(numbers, list) else numbers + i
                raise duplicate_error(
                    path, number, qid.decode(errors="replace"), doc.decode(errors="replace")
                )
            listed.add(doc)

    def apply(self, chunk: _Chunk) -> None:
        """Add a prepared chunk, in file order."""
        for qid in chunk.qids:
            if qid in self.done:
                raise _Unsorted
            self.done.add(qid)
            q = self.index.get(qid, -1)
            if q >= 0:
                self.seen[q] = True
        for q, count in chunk.retrieved:
            self.retrieved[q] += count
        for q, rank, grade in chunk.found:
            self.found.setdefault(q, []).append((rank, grade))

    def result(self, metrics: list[Metric]) -> MetricsResult:
        n_relevant = np.array(
            [sum(1 for g in rel.values() if g > 0) for rel in self.relevant], dtype=np.int64
        )
        n_judged = np.array(
            [sum(1 for g in self.qrels[q].values() if g >= 0) for q in self.qids], dtype=np.int64
        )
        ideal_index: list[int] = []
        ideal_gains: list[int] = []
        query_index: list[int] = []
        ranks: list[int] = []
        gains: list[int] = []
        for i, rel in enumerate(self.relevant):
            positive = sorted((g for g in rel.values() if g > 0), reverse=True)
            ideal_gains.extend(positive)
            ideal_index.extend([i] * len(positive))
        pooled_query: list[int] = []
        pooled_ranks: list[int] = []
        for q in sorted(self.found):
            for rank, grade in sorted(self.found[q]):
                if grade < 0:  # in the pool, not judged (infAP): kept apart
                    pooled_query.append(q)
                    pooled_ranks.append(rank)
                    continue
                query_index.append(q)
                ranks.append(rank)
                gains.append(grade)
        seen = self.seen.tolist()
        missing = [qid for qid, hit in zip(self.qids, seen, strict=True) if not hit]
        return result_from_ranks(
            self.qids,
            query_index,
            ranks,
            gains,
            n_relevant,
            ideal_index,
            ideal_gains,
            metrics,
            missing,
            n_retrieved=self.retrieved,
            n_judged=n_judged,
            pooled=(np.array(pooled_query, dtype=np.int64), np.array(pooled_ranks, dtype=np.int64))
            if self.lowest < 0
            else None,
        )


def _rank(lines: Lines, block: F64, rows: I64, offset: int, j: int) -> int:
    """trec_eval rank of row ``j`` in its block: score descending, ties by doc id descending."""
    score = block[j - offset]
    above = int(np.count_nonzero(block > score))
    same = np.flatnonzero(block == score)
    if same.size > 1:
        doc = lines.doc(int(rows[j]))
        above += sum(1 for i in same.tolist() if lines.doc(int(rows[offset + i])) > doc)
    return above + 1


def _block_starts(lines: Lines) -> I64:
    change = np.zeros(lines.n - 1, dtype=bool)
    for word in lines.qid_words():
        change |= word[1:] != word[:-1]
    starts: I64 = np.concatenate(([0], np.flatnonzero(change) + 1)).astype(np.int64)
    return starts


def _read_sorted(path: Path, ranks: _Ranks, chunk_bytes: int, threads: int) -> None:
    if threads == 1:
        with open_run(path) as handle:
            for buf, line in blocks(handle, chunk_bytes):
                ranks.apply(ranks.prepare(path, buf, line))
        return
    with open_run(path) as handle, ThreadPoolExecutor(max_workers=threads) as pool:
        # numpy releases the GIL: chunks are cut on ``threads`` cores, applied in order.
        # At most 2 * threads chunks are held at a time.
        pending: deque[Future[_Chunk]] = deque()
        for buf, line in blocks(handle, chunk_bytes):
            pending.append(pool.submit(ranks.prepare, path, buf, line))
            if len(pending) >= 2 * threads:
                ranks.apply(pending.popleft().result())
        while pending:
            ranks.apply(pending.popleft().result())


def _read_unsorted(path: Path, qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    """The plain reader for runs whose queries are not contiguous: the judged queries only.

    Repeats are refused in every query, as the other readers do; for queries that are not
    judged only the documents' ids are kept.
    """
    run: dict[str, dict[str, float]] = {}
    other: dict[bytes, set[bytes]] = {}
    with open_run(path) as handle:
        for number, raw in enumerate(handle, 1):
            normal, _ = normalise(path, strip_bom(raw) if number == 1 else raw, number)
            if not normal:
                continue  # blank or comment line
            qid_b, _q0, doc_b, _rank, score_b, _tag = normal.split()
            qid = qid_b.decode(errors="surrogateescape")
            doc = doc_b.decode(errors="surrogateescape")
            if qid in qrels:
                ranking = run.setdefault(qid, {})
                if doc in ranking:
                    raise duplicate_error(path, number, qid, doc)
                ranking[doc] = float(score_b)
            else:
                listed = other.setdefault(qid_b, set())
                if doc_b in listed:
                    raise duplicate_error(path, number, qid, doc)
                listed.add(doc_b)
    return run


def is_trec_run(path: str | Path) -> bool:
    """True unless the file's first non-blank line is a JSON object (a JSONL run).

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".trec", delete=False) as f:
    ...     _ = f.write("q1 Q0 d1 1 2.5 bm25\\n")
    >>> is_trec_run(f.name)
    True
    >>> os.unlink(f.name)
    """
    try:
        with open_run(Path(path)) as handle:
            for raw in handle:
                if raw.strip():
                    return not strip_bom(raw).lstrip().startswith(b"{")
    except (OSError, EOFError):
        return True  # the TREC reader reports the problem with the file's name
    return True


def metrics_from_trec(
    qrels: str | Path | dict[str, dict[str, int]],
    run: str | Path,
    metrics: Iterable[str | Metric] | str,
    *,
    chunk_bytes: int = CHUNK_BYTES,
    threads: int = 2,
    depth: int | None = None,
) -> MetricsResult:
    r"""Ranking metrics of a TREC run file against qrels, without loading the run.

    Exactly what ``compute_metrics(read_qrels(qrels), read_run(run), metrics)``
    gives (and trec_eval), in bounded memory: the run is streamed in chunks of
    ``chunk_bytes``, cut on ``threads`` threads. ``qrels`` is a qrels file or an
    already loaded dict. ``depth=N`` evaluates only the top N documents of each
    ranking (trec_eval ``-M N``).

    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "run.trec"), "w") as f:
    ...     _ = f.write("q1 Q0 d3 1 9.5 bm25\nq1 Q0 d1 2 9.0 bm25\nq2 Q0 d9 1 3.0 bm25\n")
    >>> result = metrics_from_trec({"q1": {"d1": 1}, "q3": {"d2": 1}},
    ...                            os.path.join(folder, "run.trec"), ["mrr", "hit@1"])
    >>> result.means, result.missing
    ({'mrr': 0.25, 'hit@1': 0.0}, ['q3'])
    """
    wanted = ranking_metrics(metrics)
    if depth is not None:
        check_depth(depth)
    if isinstance(qrels, dict):
        judged = qrels
    else:
        from ragmeter.formats.trec import read_qrels

        judged = {qid: dict(docs) for qid, docs in read_qrels(qrels).items()}
    path = Path(run)
    want = needs(wanted)
    lowest = POOLED if "pooled" in want else 0 if "judged" in want else 1
    ranks = _Ranks(judged, lowest=lowest, depth=depth)
    try:
        _read_sorted(path, ranks, chunk_bytes, max(1, threads))
    except _Unsorted:
        return compute_metrics(judged, _read_unsorted(path, judged), wanted, depth=depth)
    except OSError as exc:
        raise RunFileError(f"run file {path}: cannot read ({exc.strerror or exc})") from None
    return ranks.result(wanted)
