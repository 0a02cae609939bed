"""BEIR folders: ``corpus.jsonl[.gz]``, ``queries.jsonl`` and ``qrels/{split}.tsv``.

The layout the BEIR benchmark uses (Thakur et al., 2021) and many datasets ship in.
Corpus and query lines are JSON objects with ``_id``, ``title``, ``text`` and
``metadata``; qrels are tab-separated ``query-id corpus-id score`` rows after a
header. CRLF line ends are accepted everywhere.

>>> from ragmeter.formats.beir import read_beir_qrels
>>> read_beir_qrels("data/scifact", "test")["1"]  # doctest: +SKIP
{'31715818': 1}
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from ragmeter.documents import Document
from ragmeter.errors import CorpusError, GoldSetError, located
from ragmeter.formats.text import decode_utf8, numbered_lines, read_jsonl, text_problem


class _Question(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def question(self) -> str: ...


class GoldSet(Protocol):
    """What :func:`write_beir` reads of a ``ragmeter.gold.goldset.GoldSet`` (a protocol:
    ``formats`` sits below ``gold`` and names none of its classes, even in annotations)."""

    def __iter__(self) -> Iterator[_Question]: ...
    def qrels(self) -> Mapping[str, Mapping[str, int]]: ...


__all__ = ["read_beir_corpus", "read_beir_qrels", "read_beir_queries", "write_beir"]

_QRELS_HEADER = ("query-id", "corpus-id", "score")


def _text_field(
    record: Mapping[str, Any], key: str, where: tuple[str, Path, int], error: type[Exception]
) -> str:
    value = record.get(key, "")
    if isinstance(value, int) and not isinstance(value, bool) and key == "_id":
        return str(value)
    kind, path, line = where
    if not isinstance(value, str):
        message = f'"{key}" must be a string, got {type(value).__name__}'
        raise error(located(kind, path, line, message))
    # Ids are printed and stored: no control characters; no text may hold a lone surrogate.
    problem = text_problem(value, controls=key == "_id")
    if problem is not None:
        raise error(located(kind, path, line, f'"{key}" {problem}'))
    return value


def _find(folder: Path, names: Iterable[str], kind: str, error: type[Exception]) -> Path:
    names = list(names)
    for name in names:
        if (folder / name).is_file():
            return folder / name
    message = f"not a BEIR folder: no {' or '.join(names)}"
    raise error(located(kind, folder, None, message))


def read_beir_corpus(folder: str | Path) -> Iterator[Document]:
    """Stream the documents of ``corpus.jsonl`` (or ``corpus.jsonl.gz``).

    >>> docs = list(read_beir_corpus("data/scifact"))  # doctest: +SKIP
    >>> docs[0].id, docs[0].title[:20]  # doctest: +SKIP
    ('4983', 'Microstructural deve')
    """
    path = _find(Path(folder), ("corpus.jsonl", "corpus.jsonl.gz"), "corpus", CorpusError)
    for number, record in read_jsonl(path, "corpus", CorpusError):
        where = ("corpus", path, number)
        doc_id = _text_field(record, "_id", where, CorpusError)
        if not doc_id:
            raise CorpusError(located("corpus", path, number, 'missing "_id"'))
        metadata = record.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise CorpusError(located("corpus", path, number, '"metadata" must be an object'))
        yield Document(
            id=doc_id,
            text=_text_field(record, "text", where, CorpusError),
            title=_text_field(record, "title", where, CorpusError),
            metadata=metadata,
        )


def read_beir_queries(folder: str | Path) -> dict[str, str]:
    """``{query_id: text}`` from ``queries.jsonl``, in file order.

    >>> len(read_beir_queries("data/scifact"))  # doctest: +SKIP
    1109
    """
    path = _find(Path(folder), ("queries.jsonl", "queries.jsonl.gz"), "queries", GoldSetError)
    queries: dict[str, str] = {}
    for number, record in read_jsonl(path, "queries", GoldSetError):
        where = ("queries", path, number)
        qid = _text_field(record, "_id", where, GoldSetError)
        if not qid:
            raise GoldSetError(located("queries", path, number, 'missing "_id"'))
        if qid in queries:
            raise GoldSetError(located("queries", path, number, f'duplicate query id "{qid}"'))
        queries[qid] = _text_field(record, "text", where, GoldSetError)
    return queries


def read_beir_qrels(folder: str | Path, split: str = "test") -> dict[str, dict[str, int]]:
    """``{query_id: {doc_id: grade}}`` from ``qrels/{split}.tsv`` (a repeated pair: last wins).

    >>> read_beir_qrels("data/scifact", "test")["1"]  # doctest: +SKIP
    {'31715818': 1}
    """
    folder = Path(folder)
    path = folder / "qrels" / f"{split}.tsv"
    if not path.is_file():
        found = sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))
        hint = f" (splits here: {', '.join(found)})" if found else ""
        raise GoldSetError(located("qrels", path, None, f"file not found{hint}"))
    try:
        data = path.read_bytes()
    except OSError as problem:
        raise GoldSetError(
            located("qrels", path, None, f"cannot read it: {problem.strerror}")
        ) from None
    text = decode_utf8(data, path, "qrels", GoldSetError)
    qrels: dict[str, dict[str, int]] = {}
    for number, line in numbered_lines(text):
        if not line.strip():
            continue
        fields = line.split("\t")
        if number == 1 and tuple(f.strip().lower() for f in fields) == _QRELS_HEADER:
            continue
        if len(fields) != 3:
            message = (
                f"expected 3 tab-separated fields (query-id, corpus-id, score), got {len(fields)}"
            )
            raise GoldSetError(located("qrels", path, number, message))
        qid, doc_id, score = (f.strip() for f in fields)
        if not qid or not doc_id:
            raise GoldSetError(located("qrels", path, number, "empty query-id or corpus-id"))
        try:
            grade = int(score)
        except ValueError:
            message = f"score must be an integer, got {score!r}"
            raise GoldSetError(located("qrels", path, number, message)) from None
        qrels.setdefault(qid, {})[doc_id] = grade
    return qrels


def write_beir(
    gold: GoldSet,
    folder: str | Path,
    documents: Iterable[Document] | Mapping[str, Document] | None = None,
    *,
    split: str = "test",
) -> None:
    """Write ``queries.jsonl``, ``qrels/{split}.tsv`` and, given documents, ``corpus.jsonl``.

    BEIR judges whole documents, so quotes and chunk ids become their document
    (the highest grade wins); answer checks, reference answers and tags are not
    kept (the format has no place for them).

    >>> write_beir(load_gold("gold.yaml"), "out/")  # doctest: +SKIP
    """
    folder = Path(folder)
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    with (folder / "queries.jsonl").open("w", encoding="utf-8", newline="\n") as out:
        for item in gold:
            out.write(
                json.dumps(
                    {"_id": item.id, "text": item.question, "metadata": {}}, ensure_ascii=False
                )
                + "\n"
            )
    with (folder / "qrels" / f"{split}.tsv").open("w", encoding="utf-8", newline="\n") as out:
        out.write("\t".join(_QRELS_HEADER) + "\n")
        for qid, docs in gold.qrels().items():
            for doc_id, grade in docs.items():
                if any(c in qid + doc_id for c in "\t\r\n"):
                    message = f"ids with tabs or line breaks cannot go in a TSV: {qid!r} {doc_id!r}"
                    raise GoldSetError(located("qrels", out.name, None, message))
                out.write(f"{qid}\t{doc_id}\t{grade}\n")
    if documents is None:
        return
    values = documents.values() if isinstance(documents, Mapping) else documents
    with (folder / "corpus.jsonl").open("w", encoding="utf-8", newline="\n") as out:
        for doc in values:
            record = {
                "_id": doc.id,
                "title": doc.title,
                "text": doc.text,
                "metadata": dict(doc.metadata),
            }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
