"""Reading TREC run files fast: numpy tokenising, exact score parsing, query blocks.

The byte-level half of ``ragmeter.evaluation.trec_metrics`` (which turns the pieces into
ranks and metrics). A chunk of a run file is cut into lines and fields from the
positions of its newlines and separators; tokens become 64-bit words (exact for
ids of up to 8 bytes, hashed beyond) and scores are parsed by a vectorised decimal
parser that is exact (``[-]digits[.digits]`` with at most 15 significant digits is
``mantissa / 10**k``, one correctly rounded division, as ``strtod`` does). Chunks
that are not in the plain form (tabs and single spaces only, six fields a line, no
comment lines) are rewritten line by line first, which also names the first bad line.
The input rules are those of :mod:`ragmeter.formats.trec` (trec_eval 10's): ``#``
comment lines skipped, fields after the run tag ignored, a leading UTF-8 BOM dropped.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, cast

import numpy as np
import numpy.typing as npt

from ragmeter.formats.trec import RUN_FIELDS, field_count_error, is_comment, parse_score

__all__ = [
    "Lines",
    "blocks",
    "hash_bytes",
    "matrix",
    "normalise",
    "open_run",
    "pack_hash",
    "parse_scores",
    "strip_bom",
    "words",
]


_FNV_PRIME = np.uint64(1099511628211)
_FNV_OFFSET = np.uint64(14695981039346656037)
_MAX_EXACT_DIGITS = 15  # 10**15 < 2**53: the mantissa is an exact float
_POW10 = 10.0 ** np.arange(_MAX_EXACT_DIGITS + 1)  # exact powers of ten
# Bytes of padding after each chunk, so the window view in matrix never runs off the end.
_PAD = 256
# _LOW_BYTES[n]: a mask keeping the first n bytes of a little-endian word.
_LOW_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)
_FILTER_SIZE = 1 << 22
_FILTER_MASK = np.uint64(_FILTER_SIZE - 1)
_BOM = b"\xef\xbb\xbf"
_HASH = 35  # "#", which starts a comment line
U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
F64 = npt.NDArray[np.float64]


def open_run(path: Path) -> IO[bytes]:
    if path.suffix == ".gz":
        return cast(IO[bytes], gzip.open(path, "rb"))
    return open(path, "rb")  # noqa: SIM115 - closed by the caller's with-block


# -- vectorised pieces ---------------------------------------------------------------


def matrix(arr: U8, starts: I64, lengths: I64, width: int, *, clear: bool = True) -> U8:
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
    if clear:
        out[np.arange(width) >= lengths[:, None]] = 0
    return out


def words(arr: U8, starts: I64, lengths: I64, n_words: int) -> list[U64]:
    """Tokens as little-endian 8-byte words, zero past each token's end.

    Exact and cheap: no byte matrix is built. ``arr`` must have 8 bytes of padding.
    """
    # Unaligned 8-byte loads at every byte offset: a strided view, then one gather per word.
    view = np.ndarray(shape=(arr.size - 7,), dtype="<u8", buffer=arr, offset=0, strides=(1,))
    out = []
    for k in range(n_words):
        remaining = np.clip(lengths - 8 * k, 0, 8)
        # Past a token's end the word is masked to 0, so where it is read does not matter.
        where = np.minimum(starts + 8 * k, view.size - 1)
        out.append(view[where] & _LOW_BYTES[remaining])
    return out


def pack_hash(words: list[U64], lengths: I64) -> U64:
    """One 64-bit key per token (exact for tokens of up to 8 bytes, a hash beyond).

    Only a token's own words count, so the key does not depend on the longest token.
    """
    h = words[0].copy()
    for k, word in enumerate(words[1:], 1):
        h = np.where(lengths > 8 * k, (h * _FNV_PRIME) ^ word, h)
    return h


def hash_bytes(values: Iterable[bytes]) -> U64:
    items = list(values)
    if not items:
        return np.zeros(0, dtype=np.uint64)
    buf = np.frombuffer(b"".join(items) + bytes(_PAD), dtype=np.uint8)
    lengths = np.fromiter((len(v) for v in items), dtype=np.int64, count=len(items))
    starts = np.zeros(len(items), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    return pack_hash(words(buf, starts, lengths, -(-int(lengths.max()) // 8)), lengths)


def parse_scores(mat: U8, lengths: I64) -> F64 | None:
    """Exact floats of decimal score tokens; None when numpy's parser must be used.

    ``mat`` holds one token per row (bytes past its length are ignored).
    """
    width = mat.shape[1]
    if width > _MAX_EXACT_DIGITS:
        return None
    # Column by column over a transposed copy: each step reads contiguous memory.
    cols = np.ascontiguousarray(mat.T)
    inside = np.arange(width)[:, None] < lengths
    digit = (cols - np.uint8(48) < 10) & inside
    dot = (cols == 46) & inside
    allowed = digit | dot | ~inside
    allowed[0] |= cols[0] == 45  # a leading minus
    if not allowed.all() or not digit.any(axis=0).all() or (dot.sum(axis=0) > 1).any():
        return None
    # Every partial mantissa is an integer below 10**15, hence an exact float.
    mantissa = np.zeros(mat.shape[0], dtype=np.float64)
    decimals = np.zeros(mat.shape[0], dtype=np.int64)
    seen_dot = np.zeros(mat.shape[0], dtype=bool)
    for j in range(width):
        is_digit = digit[j]
        mantissa = np.where(is_digit, mantissa * 10.0 + (cols[j] - 48.0), mantissa)
        seen_dot |= dot[j]
        decimals += seen_dot & is_digit
    value: F64 = mantissa / _POW10[decimals]
    return np.where(cols[0] == 45, -value, value)


class Lines:
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
        # Exactly five single separators inside every line, none at either end: with 5n
        # separators in all, each row's first after its line start and last before its
        # newline means each line holds exactly its own five.
        if not (
            np.all(seps[:, 0] > starts)
            and np.all(seps[:, 4] < newlines - 1)
            and np.all(seps[:, 1:] - seps[:, :-1] > 1)
        ):
            return
        if np.any(self.arr[starts] == _HASH):
            return  # comment lines: the per-line path skips them
        self.n = n
        self.starts = starts
        self.qid_len = seps[:, 0] - starts
        self.doc_start = seps[:, 1] + 1
        self.doc_len = seps[:, 2] - self.doc_start
        self.score_start = seps[:, 3] + 1
        self.score_len = seps[:, 4] - self.score_start
        self.ok = True

    def qid_words(self) -> list[U64]:
        n_words = -(-int(self.qid_len.max()) // 8)
        return words(self.arr, self.starts, self.qid_len, n_words)

    def doc(self, i: int) -> bytes:
        start = int(self.doc_start[i])
        return self.buf[start : start + int(self.doc_len[i])]

    def qid(self, i: int) -> bytes:
        start = int(self.starts[i])
        return self.buf[start : start + int(self.qid_len[i])]


def normalise(path: Path, buf: bytes, first_line: int) -> tuple[bytes, list[int]]:
    """Rewrite a chunk's valid lines in the fast form, or raise naming the bad line.

    Returns the rewritten bytes and the file line number of each rewritten line.
    """
    out: list[bytes] = []
    numbers: list[int] = []
    for offset, raw in enumerate(buf.split(b"\n")):
        parts = raw.split()
        if not parts or is_comment(parts[0]):
            continue
        number = first_line + offset
        if len(parts) < RUN_FIELDS:
            raise field_count_error(path, number, len(parts))
        score = parse_score(path, number, parts[4].decode(errors="replace"))
        out.append(b"%s Q0 %s 0 %s x\n" % (parts[0], parts[2], repr(score).encode()))
        numbers.append(number)
    return b"".join(out), numbers


def _query_of(line: bytes) -> bytes:
    """A line's query id; b"" for blank and comment lines (they go with any block)."""
    first = line.split(None, 1)[0] if line.strip() else b""
    return b"" if is_comment(first) else first


def strip_bom(data: bytes) -> bytes:
    """``data`` without a leading UTF-8 byte order mark.

    >>> strip_bom(b"\\xef\\xbb\\xbfq1 Q0 d1 1 2 t")
    b'q1 Q0 d1 1 2 t'
    """
    return data[len(_BOM) :] if data.startswith(_BOM) else data


def _last_block_start(buf: bytes, size: int) -> int:
    """Offset of the first line of the last query block in ``buf[:size]`` (whole lines).

    0 means one block so far, or unknown.
    """
    end = size - 1  # buf[size - 1] is a newline
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


def blocks(handle: IO[bytes], size: int) -> Iterator[tuple[bytes, int]]:
    """(bytes, first line number): whole lines, cut only between query blocks."""
    carry = b""
    line = 1
    first = True
    while True:
        data = handle.read(size)
        if first:
            data, first = strip_bom(data), False
        if not data:
            if carry:
                yield (carry if carry.endswith(b"\n") else carry + b"\n"), line
            return
        data = carry + data
        cut = data.rfind(b"\n") + 1
        split = _last_block_start(data, cut) if cut else 0
        if split == 0:
            carry = data  # one block so far (or no newline yet): read on
            continue
        yield data[:split], line
        line += data.count(b"\n", 0, split)
        carry = data[split:]
