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
are listed in ``missing``, a document repeated within a query keeps its last
score. A run whose queries are not contiguous (rare; every retrieval tool writes
them grouped) is read a second time by a plain Python reader.

Lines that are not exactly six fields split by one space or tab (blank lines,
CRLF, runs of spaces) take a slower per-line path for their chunk; a malformed
line is a ``RunFileError`` naming the file, line and field.
"""

from __future__ import annotations

import gzip
import math
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, NamedTuple

import numpy as np
import numpy.typing as npt

from ragmeter.errors import RunFileError, located
from ragmeter.metrics._base import Metric
from ragmeter.metrics.compute import MetricsResult, _ranks_scored, compute_metrics
from ragmeter.metrics.engine import compute_from_ranks, ranking_metrics

__all__ = ["CHUNK_BYTES", "metrics_from_trec", "read_qrels"]

CHUNK_BYTES = 8 << 20
_FNV_PRIME = np.uint64(1099511628211)
_FNV_OFFSET = np.uint64(14695981039346656037)
_MIX = np.uint64(0x9E3779B97F4A7C15)
_MAX_EXACT_DIGITS = 15  # 10**15 < 2**53: the mantissa is an exact float
_POW10 = 10.0 ** np.arange(_MAX_EXACT_DIGITS + 1)  # exact powers of ten
# Bytes of padding after each chunk, so the window view in _matrix never runs off the end.
_PAD = 256
_FILTER_SIZE = 1 << 22
_FILTER_MASK = np.uint64(_FILTER_SIZE - 1)

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
F64 = npt.NDArray[np.float64]


class _Unsorted(Exception):
    """A query's lines are not contiguous in the run file."""


def _open(path: Path) -> IO[bytes]:
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")  # noqa: SIM115


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """Read a TREC qrels file (``qid iter docid grade`` per line) into ``{qid: {doc: grade}}``.

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".qrels", delete=False) as f:
    ...     _ = f.write("q1 0 d1 1\\nq1 0 d2 0\\n")
    >>> read_qrels(f.name)
    {'q1': {'d1': 1, 'd2': 0}}
    >>> os.unlink(f.name)
    """
    path = Path(path)
    qrels: dict[str, dict[str, int]] = {}
    try:
        with _open(path) as handle:
            for number, raw in enumerate(handle, 1):
                parts = raw.split()
                if not parts:
                    continue
                if len(parts) != 4:
                    raise RunFileError(
                        located(
                            "qrels",
                            path,
                            number,
                            f"expected 4 fields (query iteration "
                            f"document grade), found {len(parts)}",
                        )  # fmt: skip
                    )
                qid, doc = parts[0].decode(), parts[2].decode()
                try:
                    grade = int(parts[3])
                except ValueError:
                    raise RunFileError(
                        located(
                            "qrels", path, number, f"grade {parts[3].decode()!r} is not an integer"
                        )  # fmt: skip
                    ) from None
                judged = qrels.setdefault(qid, {})
                if doc in judged:
                    raise RunFileError(
                        located(
                            "qrels", path, number, f"document {doc} is judged twice for query {qid}"
                        )  # fmt: skip
                    )
                judged[doc] = grade
    except OSError as exc:
        raise RunFileError(f"qrels {path}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise RunFileError(f"qrels {path}: not UTF-8 text: {exc}") from exc
    return qrels


# -- vectorised pieces ---------------------------------------------------------------


def _matrix(arr: U8, starts: I64, lengths: I64, width: int) -> U8:
    """Bytes ``arr[starts[i] : starts[i] + lengths[i]]`` as the rows of a 0-padded matrix.

    ``arr`` must extend at least ``width`` bytes past every start (callers pad it).
    """
    if width > _PAD:  # very long tokens (URLs as ids): index the bytes one by one
        index = np.minimum(starts[:, None] + np.arange(width), arr.size - 1)
        wide: U8 = arr[index]
        wide[np.arange(width) >= lengths[:, None]] = 0
        return wide
    # Row i of the window view is arr[i : i + width]: picking rows copies bytes only,
    # with no index matrix.
    windows = np.lib.stride_tricks.as_strided(
        arr, shape=(arr.size - width + 1, width), strides=(1, 1), writeable=False
    )
    out: U8 = windows[starts]
    out[np.arange(width) >= lengths[:, None]] = 0
    return out


def _hash_rows(mat: U8, lengths: I64) -> U64:
    """FNV-1a of each row's first ``lengths[i]`` bytes (independent of the padding width)."""
    h = np.full(mat.shape[0], _FNV_OFFSET, dtype=np.uint64)
    for j in range(mat.shape[1]):
        mixed = (h ^ mat[:, j].astype(np.uint64)) * _FNV_PRIME
        h = np.where(j < lengths, mixed, h)
    return h


def _hash_bytes(values: Iterable[bytes]) -> U64:
    items = list(values)
    if not items:
        return np.zeros(0, dtype=np.uint64)
    buf = np.frombuffer(b"".join(items) + bytes(_PAD), dtype=np.uint8)
    lengths = np.fromiter((len(v) for v in items), dtype=np.int64, count=len(items))
    starts = np.zeros(len(items), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    return _hash_rows(_matrix(buf, starts, lengths, int(lengths.max())), lengths)


def _parse_scores(mat: U8, lengths: I64) -> F64 | None:
    """Exact floats of decimal score tokens; None when numpy's parser must be used."""
    width = mat.shape[1]
    if width > _MAX_EXACT_DIGITS:
        return None
    digit = (mat >= 48) & (mat <= 57)
    dot = mat == 46
    allowed = digit | dot | (np.arange(width) >= lengths[:, None])
    allowed[:, 0] |= mat[:, 0] == 45  # a leading minus
    if not allowed.all() or not digit.any(axis=1).all() or (dot.sum(axis=1) > 1).any():
        return None
    # Mantissa as a float: every partial value is an integer below 10**15, so exact.
    mantissa = np.zeros(mat.shape[0], dtype=np.float64)
    for j in range(width):
        column = mat[:, j].astype(np.float64) - 48.0
        mantissa = np.where(digit[:, j], mantissa * 10.0 + column, mantissa)
    has_dot = dot.any(axis=1)
    decimals = np.where(has_dot, lengths - 1 - dot.argmax(axis=1), 0)
    value: F64 = mantissa / _POW10[decimals]
    return np.where(mat[:, 0] == 45, -value, value)


class _Lines:
    """One chunk of a run file cut into fields (all arrays have one entry per line)."""

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.arr: U8 = np.frombuffer(buf + bytes(_PAD), dtype=np.uint8)
        self.ok = False
        # One pass finds every whitespace byte; newlines are told apart afterwards.
        space = np.flatnonzero(self.arr[: len(buf)] <= 32)
        kind = self.arr[space]
        is_newline = kind == 10
        newlines = space[is_newline]
        n = newlines.size
        if n == 0 or not np.all((kind == 32) | (kind == 9) | is_newline):
            return
        seps = space[~is_newline]
        if seps.size != 5 * n:
            return
        seps = seps.reshape(n, 5)
        starts = np.zeros(n, dtype=np.int64)
        starts[1:] = newlines[:-1] + 1
        # Exactly five single separators inside every line, none at either end.
        if not (
            np.all(seps[:, 0] > starts)
            and np.all(seps[:, 4] < newlines - 1)
            and np.all(np.diff(seps, axis=1) > 1)
            and np.all(seps[1:, 0] > newlines[:-1])
        ):
            return
        self.n = n
        self.starts = starts
        self.qid_len = seps[:, 0] - starts
        self.doc_start = seps[:, 1] + 1
        self.doc_len = seps[:, 2] - self.doc_start
        self.score_start = seps[:, 3] + 1
        self.score_len = seps[:, 4] - self.score_start
        self.ok = True

    def qids(self) -> U8:
        return _matrix(self.arr, self.starts, self.qid_len, int(self.qid_len.max()))

    def doc(self, i: int) -> bytes:
        start = int(self.doc_start[i])
        return self.buf[start : start + int(self.doc_len[i])]

    def qid(self, i: int) -> bytes:
        start = int(self.starts[i])
        return self.buf[start : start + int(self.qid_len[i])]


def _normalise(path: Path, buf: bytes, first_line: int) -> tuple[bytes, list[int]]:
    """Rewrite a chunk's valid lines in the fast form, or raise naming the bad line.

    Returns the rewritten bytes and the file line number of each rewritten line.
    """
    out: list[bytes] = []
    numbers: list[int] = []
    for offset, raw in enumerate(buf.split(b"\n")):
        parts = raw.split()
        if not parts:
            continue
        number = first_line + offset
        if len(parts) != 6:
            raise RunFileError(
                located(
                    "run file",
                    path,
                    number,
                    f"expected 6 fields (query Q0 document rank score tag), found {len(parts)}",
                )  # fmt: skip
            )
        try:
            score = float(parts[4])
        except ValueError:
            score = math.nan
            token = parts[4].decode(errors="replace")
            raise RunFileError(
                located("run file", path, number, f"score {token!r} is not a number")
            ) from None
        if math.isnan(score):
            raise RunFileError(located("run file", path, number, "score is NaN"))
        out.append(b"%s Q0 %s 0 %s x\n" % (parts[0], parts[2], repr(score).encode()))
        numbers.append(number)
    return b"".join(out), numbers


# -- the reader ------------------------------------------------------------------------


def _scores_of(lines: _Lines, rows: I64) -> F64 | None:
    length = lines.score_len[rows]
    mat = _matrix(lines.arr, lines.score_start[rows], length, int(length.max()))
    scores = _parse_scores(mat, length)
    if scores is None:
        try:
            view = np.ascontiguousarray(mat).view(f"S{mat.shape[1]}").ravel()
            scores = view.astype(np.float64)
        except ValueError:
            return None
    return None if np.isnan(scores).any() else scores


class _Chunk(NamedTuple):
    """What one chunk of whole query blocks contributes, computed without shared state."""

    qids: list[bytes]  # every query id, in file order (one per block)
    found: list[tuple[int, int, int]]  # (query index, rank, grade) of retrieved relevant docs


class _Ranks:
    """What a run contributes: the rank and grade of each retrieved relevant document."""

    def __init__(self, qrels: dict[str, dict[str, int]]) -> None:
        self.qrels = qrels
        self.qids = list(qrels)
        self.index = {qid.encode(): i for i, qid in enumerate(self.qids)}
        self.relevant = [
            {doc.encode(): grade for doc, grade in qrels[qid].items() if grade > 0}
            for qid in self.qids
        ]
        self.doc_hashes = np.unique(_hash_bytes({d for rel in self.relevant for d in rel}))
        # A bitmap of hash suffixes rules out almost every line with one lookup.
        self.maybe = np.zeros(_FILTER_SIZE, dtype=bool)
        self.maybe[(self.doc_hashes & _FILTER_MASK).astype(np.int64)] = True
        self.found: dict[int, list[tuple[int, int]]] = {}
        self.seen = np.zeros(len(self.qids), dtype=bool)
        self.done: set[bytes] = set()  # query ids of finished blocks (to spot unsorted files)

    def prepare(self, path: Path, buf: bytes, first_line: int) -> _Chunk:
        """Ranks of the relevant documents in ``buf`` (whole query blocks); thread-safe."""
        lines = _Lines(buf)
        if not lines.ok:
            normal, _ = _normalise(path, buf, first_line)
            if not normal:
                return _Chunk([], [])
            lines = _Lines(normal)
        starts = _block_starts(lines)
        bounds = np.append(starts, lines.n).tolist()
        qids = [lines.qid(start) for start in bounds[:-1]]
        blocks: list[tuple[int, int, int]] = []  # (start, stop, query index)
        for b, qid in enumerate(qids):
            q = self.index.get(qid, -1)
            if q >= 0 and self.relevant[q]:
                blocks.append((bounds[b], bounds[b + 1], q))
        if not blocks:
            return _Chunk(qids, [])
        sizes = np.array([stop - start for start, stop, _ in blocks], dtype=np.int64)
        offsets = np.zeros(len(blocks) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        rows = np.concatenate([np.arange(start, stop) for start, stop, _ in blocks])
        length = lines.doc_len[rows]
        hashes = _hash_rows(
            _matrix(lines.arr, lines.doc_start[rows], length, int(length.max())), length
        )
        candidates = np.flatnonzero(self.maybe[(hashes & _FILTER_MASK).astype(np.int64)])
        pos = np.searchsorted(self.doc_hashes, hashes[candidates])
        pos[pos == self.doc_hashes.size] = 0
        candidates = candidates[self.doc_hashes[pos] == hashes[candidates]]
        if candidates.size == 0:
            return _Chunk(qids, [])
        scores = _scores_of(lines, rows)
        if scores is None:
            _normalise(path, buf, first_line)  # raises, naming the line
            raise RunFileError(located("run file", path, None, "a score is not a number"))
        # Blocks that may repeat a document (equal hashes; a collision only costs time).
        block_id = np.repeat(np.arange(len(blocks), dtype=np.uint64), sizes)
        keys = hashes ^ (block_id * _MIX)
        ordered = np.sort(keys)
        twice = ordered[1:][ordered[1:] == ordered[:-1]]
        repeated = set(block_id[np.isin(keys, twice)].tolist()) if twice.size else set()
        of_block = np.searchsorted(offsets, candidates, "right") - 1
        found: list[tuple[int, int, int]] = []
        for b in sorted(repeated):
            start, stop, q = blocks[b]
            found.extend((q, rank, grade) for rank, grade in self._exact(lines, start, stop, q))
        for j, b in zip(candidates.tolist(), of_block.tolist(), strict=True):
            if b in repeated:
                continue
            q = blocks[b][2]
            grade = self.relevant[q].get(lines.doc(int(rows[j])))
            if grade is not None:
                block = scores[offsets[b] : offsets[b + 1]]
                found.append((q, _rank(lines, block, rows, int(offsets[b]), j), grade))
        return _Chunk(qids, found)

    def apply(self, chunk: _Chunk) -> None:
        """Add a prepared chunk, in file order."""
        for qid in chunk.qids:
            if qid in self.done:
                raise _Unsorted
            self.done.add(qid)
            q = self.index.get(qid, -1)
            if q >= 0:
                self.seen[q] = True
        for q, rank, grade in chunk.found:
            self.found.setdefault(q, []).append((rank, grade))

    def _exact(self, lines: _Lines, start: int, stop: int, q: int) -> list[tuple[int, int]]:
        """A block that repeats a document: the last score wins, as in pytrec_eval."""
        ranking: dict[str, float] = {}
        for i in range(start, stop):
            doc = lines.doc(i).decode(errors="surrogateescape")
            ranking.pop(doc, None)
            score_start = int(lines.score_start[i])
            ranking[doc] = float(lines.buf[score_start : score_start + int(lines.score_len[i])])
        qid = self.qids[q]
        relevant = {doc: grade for doc, grade in self.qrels[qid].items() if grade > 0}
        return _ranks_scored(qid, ranking, relevant)

    def result(self, metrics: list[Metric]) -> MetricsResult:
        n = len(self.qids)
        n_relevant = np.array([len(rel) for rel in self.relevant], dtype=np.int64)
        ideal_index: list[int] = []
        ideal_gains: list[int] = []
        query_index: list[int] = []
        ranks: list[int] = []
        gains: list[int] = []
        for i, rel in enumerate(self.relevant):
            ideal_gains.extend(sorted(rel.values(), reverse=True))
            ideal_index.extend([i] * len(rel))
        for q in sorted(self.found):
            for rank, grade in sorted(self.found[q]):
                query_index.append(q)
                ranks.append(rank)
                gains.append(grade)
        values = compute_from_ranks(
            n,
            np.array(query_index, dtype=np.int64),
            np.array(ranks, dtype=np.int64),
            np.array(gains, dtype=np.float64),
            n_relevant,
            np.array(ideal_index, dtype=np.int64),
            np.array(ideal_gains, dtype=np.float64),
            metrics,
        )
        means = {name: float(v.mean()) if n else 0.0 for name, v in values.items()}
        per_query = {
            name: dict(zip(self.qids, v.tolist(), strict=True)) for name, v in values.items()
        }
        seen = self.seen.tolist()
        missing = sorted(qid for qid, hit in zip(self.qids, seen, strict=True) if not hit)
        return MetricsResult(means=means, per_query=per_query, missing=missing)


def _rank(lines: _Lines, block: F64, rows: I64, offset: int, j: int) -> int:
    """trec_eval rank of row ``j`` in its block: score descending, ties by doc id descending."""
    score = block[j - offset]
    above = int(np.count_nonzero(block > score))
    same = np.flatnonzero(block == score)
    if same.size > 1:
        doc = lines.doc(int(rows[j]))
        above += sum(1 for i in same.tolist() if lines.doc(int(rows[offset + i])) > doc)
    return above + 1


def _block_starts(lines: _Lines) -> I64:
    qids = lines.qids()
    change = np.any(qids[1:] != qids[:-1], axis=1)
    starts: I64 = np.concatenate(([0], np.flatnonzero(change) + 1)).astype(np.int64)
    return starts


def _query_of(line: bytes) -> bytes:
    return line.split(None, 1)[0] if line.strip() else b""


def _last_block_start(buf: bytes) -> int:
    """Offset of the first line of ``buf``'s last query block (0: one block, or unknown)."""
    end = len(buf) - 1  # buf ends with a newline
    last = buf.rfind(b"\n", 0, end) + 1
    qid = _query_of(buf[last:end])
    if not qid or _query_of(buf[: buf.find(b"\n") + 1]) == qid:
        return 0
    start = last
    while start > 0:
        previous = buf.rfind(b"\n", 0, start - 1) + 1
        if _query_of(buf[previous:start]) not in (qid, b""):  # blank lines go with the block
            return start
        start = previous
    return 0


def _blocks(handle: IO[bytes], size: int) -> Iterator[tuple[bytes, int]]:
    """(bytes, first line number): whole lines, cut only between query blocks."""
    carry = b""
    line = 1
    while True:
        data = handle.read(size)
        if not data:
            if carry:
                yield (carry if carry.endswith(b"\n") else carry + b"\n"), line
            return
        data = carry + data
        cut = data.rfind(b"\n") + 1
        split = _last_block_start(data[:cut]) if cut else 0
        if split == 0:
            carry = data  # one block so far (or no newline yet): read on
            continue
        head, carry = data[:split], data[split:]
        yield head, line
        line += head.count(b"\n")


def _read_sorted(path: Path, ranks: _Ranks, chunk_bytes: int, threads: int) -> None:
    if threads == 1:
        with _open(path) as handle:
            for buf, line in _blocks(handle, chunk_bytes):
                ranks.apply(ranks.prepare(path, buf, line))
        return
    with _open(path) as handle, ThreadPoolExecutor(max_workers=threads) as pool:
        # numpy releases the GIL: chunks are cut on ``threads`` cores, applied in order.
        # At most 2 * threads chunks are held at a time.
        pending: deque[Future[_Chunk]] = deque()
        for buf, line in _blocks(handle, chunk_bytes):
            pending.append(pool.submit(ranks.prepare, path, buf, line))
            if len(pending) >= 2 * threads:
                ranks.apply(pending.popleft().result())
        while pending:
            ranks.apply(pending.popleft().result())


def _read_unsorted(path: Path, qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    """The plain reader for runs whose queries are not contiguous: the judged queries only."""
    run: dict[str, dict[str, float]] = {}
    with _open(path) as handle:
        for number, raw in enumerate(handle, 1):
            normal, _ = _normalise(path, raw, number)  # validates the line
            if not normal:
                continue
            qid_b, _q0, doc_b, _rank, score_b, _tag = normal.split()
            qid = qid_b.decode(errors="surrogateescape")
            if qid in qrels:
                ranking = run.setdefault(qid, {})
                doc = doc_b.decode(errors="surrogateescape")
                ranking.pop(doc, None)  # the last score wins, as in pytrec_eval
                ranking[doc] = float(score_b)
    return run


def metrics_from_trec(
    qrels: str | Path | dict[str, dict[str, int]],
    run: str | Path,
    metrics: Iterable[str | Metric] | str,
    *,
    chunk_bytes: int = CHUNK_BYTES,
    threads: int = 2,
) -> MetricsResult:
    r"""Ranking metrics of a TREC run file against qrels, without loading the run.

    Exactly what ``compute_metrics(read_qrels(qrels), parse_run(run), metrics)``
    gives (and trec_eval), in bounded memory: the run is streamed in chunks of
    ``chunk_bytes``, cut on ``threads`` threads. ``qrels`` is a qrels file or an
    already loaded dict.

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
    judged = qrels if isinstance(qrels, dict) else read_qrels(qrels)
    path = Path(run)
    ranks = _Ranks(judged)
    try:
        _read_sorted(path, ranks, chunk_bytes, max(1, threads))
    except _Unsorted:
        return compute_metrics(judged, _read_unsorted(path, judged), wanted)
    except OSError as exc:
        raise RunFileError(f"run file {path}: cannot read: {exc.strerror or exc}") from exc
    return ranks.result(wanted)
