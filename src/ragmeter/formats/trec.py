"""TREC qrels and run files (plus BEIR qrels TSV and JSONL runs).

* qrels: ``qid iter docid rel`` per line, whitespace separated (trec_eval's format), or
  BEIR's ``query-id<TAB>corpus-id<TAB>score`` with a header line. CRLF is tolerated.
  A grade written as an integral float (``1.0``) is that integer.
* run: ``qid Q0 docid rank score tag`` per line (the rank column is ignored, as trec_eval
  ignores it: order comes from the score; fields after the tag are ignored, as in
  trec_eval 10), or JSONL lines
  ``{"qid": ..., "hits": [{"id": ..., "score": ...}, ...]}`` (``query_id``/``id`` and
  ``docs``/``doc`` are accepted too; hits may be bare ids, then the list order is the rank).

In both TREC formats a line whose first field starts with ``#`` is a comment and is
skipped (trec_eval 10), and a UTF-8 byte order mark at the start of a file is dropped.
A document listed twice for one query is refused (trec_eval: ``duplicate docs``).

Every parse error is a :class:`~ragmeter.errors.RunFileError` naming the file, the line
and the field.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragmeter.errors import RunFileError, located
from ragmeter.formats.output import write_output

__all__ = ["read_qrels", "read_run", "write_qrels", "write_run"]

PathLike = str | os.PathLike[str]
Qrels = dict[str, dict[str, int]]
ScoredRun = dict[str, dict[str, float]]
ListRun = dict[str, list[str]]

_BEIR_HEADER = ("query-id", "corpus-id", "score")
BOM = "\ufeff"
RUN_FIELDS = 6  # qid Q0 docid rank score tag; later fields are ignored


def is_comment(first_field: str | bytes) -> bool:
    """True for a comment line's first field (it starts with ``#``, as in trec_eval 10).

    >>> is_comment("#"), is_comment(b"#q1"), is_comment("q#1")
    (True, True, False)
    """
    return first_field[:1] in ("#", b"#")


def _read_text(kind: str, path: PathLike) -> str:
    """The file's text, or an error naming the line of the first non-UTF-8 byte."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise RunFileError(f"{kind} {path}: cannot read ({error.strerror or error})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise RunFileError(
            located(kind, path, line, f"is not UTF-8 text (byte {data[error.start]:#04x})")
        ) from None
    return text[1:] if text.startswith(BOM) else text


def parse_grade(path: PathLike, number: int, text: str) -> int:
    """A qrels grade: an integer, or an integral float such as ``1.0`` (trec_eval reads both).

    A fractional grade (``1.5``) is refused rather than truncated as trec_eval's ``atol`` does.
    """
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value.is_integer():
        raise RunFileError(
            located("qrels file", path, number, f'field "rel": {text!r} is not an integer')
        )
    return int(value)


def read_qrels(path: PathLike) -> Qrels:
    """Read TREC qrels (``qid iter docid rel``) or BEIR qrels TSV (with header).

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "q.txt"
    >>> _ = p.write_bytes(b"q1 0 d1 2\\r\\nq1 0 d2 0\\n")
    >>> read_qrels(p)
    {'q1': {'d1': 2, 'd2': 0}}
    """
    kind = "qrels file"
    qrels: Qrels = {}
    lines = _read_text(kind, path).split("\n")
    width = 0  # fields per line, fixed by the first line: 4 (TREC) or 3 (BEIR TSV)
    for number, line in enumerate(lines, 1):
        parts = line.split()
        if not parts or is_comment(parts[0]):
            continue
        if not width:
            if tuple(p.lower() for p in parts) == _BEIR_HEADER:
                width = 3
                continue
            width = 3 if len(parts) == 3 and "\t" in line else 4
        if len(parts) != width:
            layout = '"qid iter docid rel"' if width == 4 else '"query-id corpus-id score"'
            raise RunFileError(
                located(kind, path, number, f"expected {width} fields {layout}, got {len(parts)}")
            )
        if width == 4:
            qid, doc, grade_text = parts[0], parts[2], parts[3]
        else:
            qid, doc, grade_text = parts
        grade = parse_grade(path, number, grade_text)
        judged = qrels.setdefault(qid, {})
        if doc in judged:
            raise RunFileError(
                located(kind, path, number, f"query {qid}: doc {doc} is judged twice")
            )
        judged[doc] = grade
    return qrels


def _check_id(kind: str, value: object, what: str) -> str:
    text = str(value)
    if not text or any(c.isspace() for c in text):
        raise RunFileError(f"{kind}: {what} {text!r} is empty or contains whitespace")
    return text


def write_qrels(qrels: Mapping[str, Mapping[str, int]], path: PathLike) -> None:
    """Write TREC qrels (``qid 0 docid rel``), one judgment per line.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "q.txt"
    >>> write_qrels({"q1": {"d1": 1}}, p); p.read_text()
    'q1 0 d1 1\\n'
    """
    kind = f"qrels {path}"
    out = []
    for qid, judged in qrels.items():
        q = _check_id(kind, qid, "query id")
        for doc, grade in judged.items():
            out.append(f"{q} 0 {_check_id(kind, doc, 'doc id')} {int(grade)}\n")
    write_output(Path(path), "".join(out), kind="qrels" if kind.startswith("qrels") else "run")


def field_count_error(path: PathLike, number: int, count: int) -> RunFileError:
    """The error for a run line with fewer than the six TREC fields (every reader raises it)."""
    message = f'expected 6 fields "qid Q0 docid rank score tag", got {count}'
    return RunFileError(located("run file", path, number, message))


def parse_score(path: PathLike, number: int, text: str) -> float:
    """A run line's score; not a number (or NaN) is an error naming the line."""
    try:
        score = float(text)
    except ValueError:
        score = math.nan
    if math.isnan(score):
        raise RunFileError(
            located("run file", path, number, f'field "score": {text!r} is not a number')
        )
    return score


def duplicate_error(path: PathLike, number: int, qid: str, doc: str) -> RunFileError:
    """The error for a document listed twice for one query (every reader raises it)."""
    message = f"query {qid}: doc {doc} appears twice in the ranking (trec_eval: duplicate docs)"
    return RunFileError(located("run file", path, number, message))


def _read_trec_run(path: PathLike, lines: list[str]) -> ScoredRun:
    run: ScoredRun = {}
    current_qid: str | None = None
    current: dict[str, float] = {}
    for number, line in enumerate(lines, 1):
        parts = line.split()
        if len(parts) != RUN_FIELDS:
            if not parts or is_comment(parts[0]):
                continue
            if len(parts) < RUN_FIELDS:
                raise field_count_error(path, number, len(parts))
        elif is_comment(parts[0]):
            continue
        qid, doc = parts[0], parts[2]
        if qid != current_qid:
            # runs are grouped by query, so this lookup happens once per query
            current = run.setdefault(qid, {})
            current_qid = qid
        if doc in current:
            raise duplicate_error(path, number, qid, doc)
        try:
            current[doc] = float(parts[4])
        except ValueError:
            current[doc] = parse_score(path, number, parts[4])
        if current[doc] != current[doc]:  # NaN
            parse_score(path, number, parts[4])
    return run


def _first_key(row: dict[str, Any], names: Sequence[str]) -> Any:
    for name in names:
        if name in row:
            return row[name]
    return None


def _read_jsonl_run(path: PathLike, lines: list[str]) -> ScoredRun | ListRun:
    scored: ScoredRun = {}
    listed: ListRun = {}
    has_scores: bool | None = None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue

        def fail(message: str, number: int = number) -> RunFileError:
            return RunFileError(located("run file", path, number, message))

        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise fail(f"is not valid JSON ({error.msg})") from None
        if not isinstance(row, dict):
            raise fail("expected a JSON object")
        qid = _first_key(row, ("qid", "query_id", "id"))
        if qid is None:
            raise fail('missing "qid"')
        qid = str(qid)
        hits = _first_key(row, ("hits", "docs"))
        if not isinstance(hits, list):
            raise fail(f'query {qid}: field "hits" must be a list')
        if qid in scored or qid in listed:
            raise fail(f"query {qid} appears twice")
        docs: list[str] = []
        scores: list[float] = []
        for position, hit in enumerate(hits):
            if isinstance(hit, dict):
                doc = _first_key(hit, ("id", "doc", "doc_id", "docid"))
                score = hit.get("score")
            else:
                doc, score = hit, None
            if not isinstance(doc, str | int) or isinstance(doc, bool):
                raise fail(f'query {qid} hit {position}: field "id" is missing or not a string')
            if (score is None) != (has_scores is False) and has_scores is not None:
                raise fail(f"query {qid}: some hits in this file have a score and some do not")
            has_scores = score is not None
            if score is not None:
                if not isinstance(score, int | float) or isinstance(score, bool):
                    raise fail(f'query {qid} hit {position}: field "score" is not a number')
                if math.isnan(score):
                    raise fail(f'query {qid} hit {position}: field "score" is NaN')
                scores.append(float(score))
            docs.append(str(doc))
        if len(set(docs)) != len(docs):
            seen: set[str] = set()
            for doc in docs:
                if doc in seen:
                    raise duplicate_error(path, number, qid, doc)
                seen.add(doc)
        if has_scores:
            scored[qid] = dict(zip(docs, scores, strict=True))
        else:
            listed[qid] = docs
    if has_scores is False:
        # queries whose hit list was empty landed in `scored`; keep one shape
        return {**{q: [] for q in scored}, **listed}
    return {**scored, **{q: {} for q in listed}}


def read_run(path: PathLike) -> ScoredRun | ListRun:
    """Read a TREC run (``qid Q0 docid rank score tag``) or a JSONL run.

    Returns ``{qid: {doc: score}}``; a JSONL run whose hits carry no scores returns
    ``{qid: [doc, ...]}`` in rank order. A doc twice in one query's ranking is an error.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "r.trec"
    >>> _ = p.write_text("q1 Q0 d1 1 2.5 bm25\\nq1 Q0 d2 2 1.0 bm25\\n")
    >>> read_run(p)
    {'q1': {'d1': 2.5, 'd2': 1.0}}
    """
    lines = _read_text("run file", path).split("\n")
    for line in lines:
        stripped = line.lstrip()
        if stripped:
            if stripped.startswith("{"):
                return _read_jsonl_run(path, lines)
            break
    return _read_trec_run(path, lines)


def write_run(
    run: Mapping[str, Mapping[str, float] | Sequence[str]],
    path: PathLike,
    tag: str = "ragmeter",
) -> None:
    """Write a TREC run file, each query's lines in trec_eval's order.

    A ``{doc: score}`` ranking is written by score descending, ties by doc id descending;
    a list of doc ids keeps its order and gets descending scores ``n, n-1, ..., 1``.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "r.trec"
    >>> write_run({"q1": ["b", "a"]}, p); p.read_text()
    'q1 Q0 b 1 2 ragmeter\\nq1 Q0 a 2 1 ragmeter\\n'
    """
    kind = f"run {path}"
    tag = _check_id(kind, tag, "tag")
    out = []
    for qid, ranking in run.items():
        q = _check_id(kind, qid, "query id")
        if isinstance(ranking, Mapping):
            ordered = sorted(ranking.items(), key=lambda item: (item[1], item[0]), reverse=True)
            rows = [(doc, repr(float(score))) for doc, score in ordered]
        else:
            docs = list(dict.fromkeys(ranking))
            rows = [(doc, str(len(docs) - i)) for i, doc in enumerate(docs)]
        for rank, (doc, score) in enumerate(rows, 1):
            out.append(f"{q} Q0 {_check_id(kind, doc, 'doc id')} {rank} {score} {tag}\n")
    write_output(Path(path), "".join(out), kind="qrels" if kind.startswith("qrels") else "run")
