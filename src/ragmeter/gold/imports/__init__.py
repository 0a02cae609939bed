"""Import another tool's test set as a ragmeter gold set (``ragmeter gold import``).

Sources and their fields (see ``sources.DEFAULT_MAPS``):

- ``ragas``: ``user_input`` / ``reference`` / ``reference_contexts`` / ``reference_context_ids``;
- ``deepeval`` goldens: ``input`` / ``expected_output`` / ``context``;
- ``langsmith`` examples: ``inputs.question`` / ``outputs.answer`` / ``outputs.contexts`` ...;
- ``csv`` and ``jsonl``: columns ``id``, ``question``, ``reference_answer``, ``passage``,
  ``doc``, ``tags`` unless ``--map`` names others.

The reference answer becomes ``reference_answer``. Each reference passage is located in the
corpus (``locate``) and becomes a quote-anchored judgment ``{doc, quote}`` that survives any
re-chunking; a passage found nowhere is kept in the item's ``metadata.unlocated_passages``
and listed in the result, never dropped. Items without an id get ``q-`` and the first 12
hex digits of the SHA-256 of their whitespace-collapsed, casefolded question. Every problem in
the file is collected in one pass (up to ``MAX_PROBLEMS``) and raised together.

>>> import json, pathlib, tempfile
>>> from ragmeter.documents import Document
>>> path = pathlib.Path(tempfile.mkdtemp()) / "testset.json"
>>> _ = path.write_text(json.dumps([{"user_input": "How to sync?", "reference": "uv sync",
...     "reference_contexts": ["Run uv sync to install."]}]))
>>> docs = {"a.md": Document(id="a.md", text="# Sync\\nRun uv sync to install.")}
>>> result = import_gold(path, "ragas", documents=docs)
>>> result.records[0]["relevant"], result.records[0]["reference_answer"]
([{'doc': 'a.md', 'quote': 'Run uv sync to install.', 'grade': 1}], 'uv sync')
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ragmeter.documents import Document
from ragmeter.errors import GoldSetError, located
from ragmeter.formats.output import writing
from ragmeter.gold._write import write_atomically
from ragmeter.gold.goldset import GoldSet
from ragmeter.gold.imports.passages import DEFAULT_FUZZY_THRESHOLD, Match, locate
from ragmeter.gold.imports.sources import IMPORT_SOURCES, Row, parse_map, read_rows
from ragmeter.gold.quotes import FoldedText

__all__ = [
    "DEFAULT_FUZZY_THRESHOLD",
    "IMPORT_SOURCES",
    "MAX_PROBLEMS",
    "ImportResult",
    "check_records",
    "import_gold",
    "parse_map",
    "write_records",
]

# Problems shown before "and N more": enough to fix a file in one go, not a wall of text.
MAX_PROBLEMS = 50
_ID_DIGITS = 12


@dataclass(frozen=True)
class Located:
    """A passage found in the corpus; ``method`` is exact, folded or fuzzy (with ``score``)."""

    item_id: str
    passage: str
    match: Match


@dataclass(frozen=True)
class ImportResult:
    """The gold records an import produced, and what became of each reference passage."""

    records: list[dict[str, Any]]
    located: list[Located] = field(default_factory=list)
    unlocated: list[tuple[str, str]] = field(default_factory=list)  # (item id, passage)
    unverified: int = 0  # passages written against a named doc without a corpus to check
    warnings: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """How the passages were resolved.

        >>> ImportResult(records=[]).counts()
        {'items': 0, 'exact': 0, 'folded': 0, 'fuzzy': 0, 'unverified': 0, 'not_found': 0}
        """
        methods = [entry.match.method for entry in self.located]
        return {
            "items": len(self.records),
            "exact": methods.count("exact"),
            "folded": methods.count("folded"),
            "fuzzy": methods.count("fuzzy"),
            "unverified": self.unverified,
            "not_found": len(self.unlocated),
        }


def stable_id(question: str) -> str:
    """The id of an item that has none: a hash of its normalised question.

    >>> stable_id("How do I  install?") == stable_id("how do i install?")
    True
    """
    key = " ".join(question.split()).casefold().encode("utf-8")
    return "q-" + hashlib.sha256(key).hexdigest()[:_ID_DIGITS]


def _where(where: str | int) -> str:
    return f"line {where}" if isinstance(where, int) else where


def _raise(problems: list[str]) -> None:
    shown = problems[:MAX_PROBLEMS]
    more = len(problems) - len(shown)
    tail = [f"... and {more} more problem{'s' * (more > 1)}"] if more > 0 else []
    count = f"{len(problems)} problem{'s' * (len(problems) > 1)}"
    raise GoldSetError(f"{count}; nothing written:\n" + "\n".join(shown + tail))


def import_gold(
    path: str | Path,
    source: str,
    *,
    documents: Mapping[str, Document] | None = None,
    mapping: Mapping[str, str] | None = None,
    threshold: float = DEFAULT_FUZZY_THRESHOLD,
    root: str | Path | None = None,
) -> ImportResult:
    """Read ``path`` as ``source`` and return gold records with quote-anchored judgments.

    Without ``documents`` a passage is written as ``{doc, quote}`` only if the source names
    its document (counted as unverified: run ``gold check --corpus``); otherwise it is listed.
    A row that carries ragmeter's own judgments (``relevant``: ``{doc, quote, grade}``, as
    ``ragmeter export --format ragas|deepeval`` writes them) keeps them, grades included; its
    quotes are located like passages named with their document. An absolute document id
    under ``root`` (the corpus folder) becomes relative to it, as corpus ids are.
    Raises :class:`GoldSetError` listing every problem in the file.
    """
    path = Path(path)
    if not 0 < threshold <= 1:
        raise GoldSetError(f"fuzzy threshold must be in (0, 1], got {threshold}")
    problems: list[str] = []
    rows = [
        _relative_docs(row, root) for row in read_rows(path, source, dict(mapping or {}), problems)
    ]
    seen: dict[str, str | int] = {}
    ids: list[str] = []
    for row in rows:
        item_id = row.id or stable_id(row.question)
        if row.id is None and item_id in seen:
            n = 2
            while f"{item_id}-{n}" in seen:
                n += 1
            item_id = f"{item_id}-{n}"
        elif item_id in seen:
            problems.append(
                located(
                    "import", path, row.where, f'id "{item_id}" repeats {_where(seen[item_id])}'
                )
            )
        seen[item_id] = row.where
        ids.append(item_id)
    if problems:
        _raise(problems)
    found: list[Located] = []
    unlocated: list[tuple[str, str]] = []
    unverified = 0
    records: list[dict[str, Any]] = []
    cache: dict[str, FoldedText] = {}
    for item_id, row in zip(ids, rows, strict=True):
        relevant: list[dict[str, Any]] = []
        missing: list[str] = []
        named_passages: list[tuple[str, tuple[str, ...], int, bool]]
        if row.relevant:
            # ragmeter's own judgments: each entry in order, its grade kept.
            named_passages = [
                (str(e["quote"]), (str(e["doc"]),), int(e["grade"]), True)
                for e in row.relevant
                if e["quote"]
            ]
            whole = [e for e in row.relevant if not e["quote"]]
        else:
            aligned = len(row.docs) == len(row.passages)
            named_passages = [
                (passage, (row.docs[i],) if aligned else row.docs, 1, aligned)
                for i, passage in enumerate(row.passages)
            ]
            # Documents named without passages are document-level judgments.
            whole = [] if row.passages else [{"doc": d, "grade": 1} for d in row.docs]
        for passage, named, grade, own_doc in named_passages:
            if documents is None:
                if own_doc:
                    relevant.append({"doc": named[0], "quote": passage, "grade": grade})
                    unverified += 1
                else:
                    missing.append(passage)
                continue
            matches = locate(passage, documents, docs=named, threshold=threshold, cache=cache)
            for match in matches:
                entry = {"doc": match.doc, "quote": match.quote, "grade": grade}
                if entry not in relevant:
                    relevant.append(entry)
                found.append(Located(item_id, passage, match))
            if not matches:
                missing.append(passage)
        relevant.extend({k: v for k, v in e.items() if v is not None} for e in whole)
        record: dict[str, Any] = {"id": item_id, "question": row.question}
        if relevant:
            record["relevant"] = relevant
        if row.answer is not None:
            record["reference_answer"] = row.answer
        if row.tags:
            record["tags"] = list(row.tags)
        if missing:
            record["metadata"] = {"unlocated_passages": missing}
            unlocated.extend((item_id, passage) for passage in missing)
        records.append(record)
    warnings = []
    if documents is not None and documents and rows:
        named_docs = {d for row in rows for d in row.docs}
        absent = sorted(named_docs - documents.keys())
        if absent:
            warnings.append(
                f"{len(absent)} document id(s) named by the source are not in the corpus "
                f"(passages were searched everywhere): {', '.join(absent[:10])}"
                + (" ..." if len(absent) > 10 else "")
            )
    check_records(
        records, path, [row.where if isinstance(row.where, int) else None for row in rows]
    )
    return ImportResult(records, found, unlocated, unverified, warnings)


def check_records(
    records: list[dict[str, Any]], source: Path, lines: list[int | None] | None = None
) -> None:
    """Refuse records ``gold check`` would refuse: the one validator (``GoldSet.from_records``)
    runs before anything is written, so a NUL or an escape sequence in a question read from a
    CSV stops the import with its line instead of being written (issue 27.15)."""
    try:
        GoldSet.from_records(records, path=source, lines=lines)
    except GoldSetError as error:
        raise GoldSetError(f"{error}; nothing written (`gold check` would refuse it)") from None


def _relative_docs(row: Row, root: str | Path | None) -> Row:
    """``row`` with absolute document ids under ``root`` made relative to it (``/`` joined)."""
    if root is None:
        return row
    base = Path(root).resolve()

    def relative(doc: str) -> str:
        candidate = Path(doc)
        if not candidate.is_absolute():
            return doc
        try:
            return candidate.resolve().relative_to(base).as_posix()
        except ValueError:
            return doc

    return replace(
        row,
        docs=tuple(relative(d) for d in row.docs),
        relevant=tuple(
            {**e, "doc": relative(str(e["doc"]))} if e.get("doc") else e for e in row.relevant
        ),
    )


def write_records(path: str | Path, records: list[dict[str, Any]]) -> None:
    """Write records as a YAML gold set, atomically (a reader sees the old file or the new)."""
    import yaml

    path = Path(path)
    check_records(records, path)
    if path.suffix.lower() == ".jsonl":
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    elif path.suffix.lower() in (".yaml", ".yml"):
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        text = yaml.dump(records, Dumper=dumper, sort_keys=False, allow_unicode=True, width=100)
    else:
        raise GoldSetError(located("gold set", path, None, "save as .yaml, .yml or .jsonl"))
    # The one gold-file writer: atomic, and a replaced file keeps its permissions.
    writing(path, lambda target: write_atomically(target, text), kind="gold set")
