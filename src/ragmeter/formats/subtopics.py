"""Subtopic qrels for diversity measures (``alpha_ndcg``): ``qid subtopic docid grade``.

The TREC Web track diversity format: one judgment per line, whitespace separated, the
second column numbering the query's subtopic (intent) the document was judged for.
``#`` comment lines and a leading byte order mark are skipped, as in the TREC readers.

Ordinary qrels (``qid 0 docid rel``) have the same shape, so a file whose second column
is ``0`` (or ``Q0``) on every line is refused: read as subtopic qrels it would be one
subtopic per query, and alpha-nDCG would silently become a plain nDCG.
"""

from __future__ import annotations

from pathlib import Path

from ragmeter.errors import RunFileError, located
from ragmeter.formats.text import read_lines
from ragmeter.formats.trec import BOM, is_comment, parse_grade

__all__ = ["SubtopicQrels", "read_subtopic_qrels"]

SubtopicQrels = dict[str, dict[str, dict[str, int]]]  # qid -> subtopic -> doc -> grade
_FIELDS = 4
_ORDINARY_ITER = ("0", "q0")


def read_subtopic_qrels(path: str | Path) -> SubtopicQrels:
    """Read ``qid subtopic docid grade`` lines into ``{qid: {subtopic: {doc: grade}}}``.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "div.qrels"
    >>> _ = p.write_text("q1 1 d1 1\\nq1 2 d1 1\\nq1 2 d2 0\\n")
    >>> read_subtopic_qrels(p)
    {'q1': {'1': {'d1': 1}, '2': {'d1': 1, 'd2': 0}}}
    """
    kind = "subtopic qrels file"
    out: SubtopicQrels = {}
    ordinary = True
    seen = False
    for number, line in read_lines(Path(path), kind, RunFileError):
        parts = (line[1:] if number == 1 and line.startswith(BOM) else line).split()
        if not parts or is_comment(parts[0]):
            continue
        if len(parts) != _FIELDS:
            raise RunFileError(
                located(
                    kind,
                    path,
                    number,
                    f'expected {_FIELDS} fields "qid subtopic docid grade", got {len(parts)}',
                )
            )
        qid, subtopic, doc, grade_text = parts
        seen = True
        ordinary = ordinary and subtopic.lower() in _ORDINARY_ITER
        judged = out.setdefault(qid, {}).setdefault(subtopic, {})
        if doc in judged:
            raise RunFileError(
                located(
                    kind, path, number, f"query {qid} subtopic {subtopic}: doc {doc} judged twice"
                )
            )
        judged[doc] = parse_grade(path, number, grade_text)
    if seen and ordinary:
        raise RunFileError(
            located(
                kind,
                path,
                None,
                "column 2 is 0 on every line: these are ordinary qrels (qid iter docid rel), "
                "not subtopic qrels (qid subtopic docid grade, the TREC Web track diversity "
                "format); alpha_ndcg needs one judgment per subtopic",
            )
        )
    return out
