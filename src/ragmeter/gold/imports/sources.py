"""Read another tool's test set into plain rows: question, id, answer, passages, docs, tags.

Each source has a default field mapping (``DEFAULT_MAPS``); ``--map question=Query`` overrides
one field. A mapped name may be a dotted path into nested objects (``inputs.question``), and a
default may list alternatives, tried in order (LangSmith examples name their keys freely).

>>> sorted(DEFAULT_MAPS["ragas"].items())[:2]
[('answer', ('reference',)), ('doc', ('reference_context_ids',))]
"""

from __future__ import annotations

import ast
import csv
import io
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.errors import GoldSetError, located
from ragmeter.formats.text import parse_json

__all__ = [
    "DEFAULT_MAPS",
    "FIELDS",
    "IMPORT_SOURCES",
    "MAX_CSV_FIELD_CHARS",
    "Row",
    "parse_map",
    "read_rows",
]

IMPORT_SOURCES = ("ragas", "deepeval", "langsmith", "csv", "jsonl")
# The fields an importer fills; --map names them on its left-hand side.
FIELDS = ("id", "question", "answer", "passage", "doc", "tags")

_KIND = "import"
#: Longest CSV field accepted (the csv module's own default limit), named when passed.
MAX_CSV_FIELD_CHARS = 131_072

DEFAULT_MAPS: dict[str, dict[str, tuple[str, ...]]] = {
    "ragas": {
        "question": ("user_input",),
        "answer": ("reference",),
        "passage": ("reference_contexts",),
        "doc": ("reference_context_ids",),
        "id": ("id",),
    },
    "deepeval": {
        # `retrieval_context` is what a system retrieved, not the gold: it is not taken unless
        # mapped (`--map passage=retrieval_context`).
        "question": ("input",),
        "answer": ("expected_output",),
        "passage": ("context",),
        "doc": ("source_file",),
        "id": ("id", "name"),
    },
    "langsmith": {
        "question": ("inputs.question", "inputs.input", "inputs.query"),
        "answer": ("outputs.answer", "outputs.output", "outputs.reference", "outputs.expected"),
        "passage": ("outputs.contexts", "outputs.context", "metadata.contexts"),
        "doc": ("outputs.doc_ids", "metadata.doc_ids", "metadata.source"),
        "id": ("id", "example_id"),
        "tags": ("metadata.tags",),
    },
    "csv": {f: (f,) for f in FIELDS} | {"answer": ("reference_answer", "answer")},
    "jsonl": {f: (f,) for f in FIELDS} | {"answer": ("reference_answer", "answer")},
}
_REQUIRED = ("question",)
_WRAPPERS = ("samples", "goldens", "test_cases", "examples", "items", "data")


@dataclass(frozen=True)
class Row:
    """One item as the source gave it, before ids and passages are resolved."""

    where: str | int  # a line number (JSONL, CSV) or "item N" (a JSON list)
    question: str
    id: str | None
    answer: str | None
    passages: tuple[str, ...]
    docs: tuple[str, ...]
    tags: tuple[str, ...]


def parse_map(pairs: Sequence[str]) -> dict[str, str]:
    """``["question=Query", "doc=Source"]`` (or one comma-separated string) to a dict.

    >>> parse_map(["question=Query,doc=Source"])
    {'question': 'Query', 'doc': 'Source'}
    """
    out: dict[str, str] = {}
    for chunk in pairs:
        for pair in chunk.split(","):
            field, sep, name = pair.partition("=")
            field, name = field.strip(), name.strip()
            if not sep or not name:
                raise GoldSetError(f'--map {pair!r}: write FIELD=COLUMN, e.g. "question=Query"')
            if field not in FIELDS:
                raise GoldSetError(f"--map {pair!r}: {field!r} is not one of {', '.join(FIELDS)}")
            out[field] = name
    return out


def _get(record: Mapping[str, Any], dotted: str) -> tuple[bool, Any]:
    if dotted in record:
        return True, record[dotted]
    value: Any = record
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return False, None
        value = value[part]
    return True, value


def _csv_records(path: Path, text: str) -> Iterator[tuple[str | int, Mapping[str, Any]]]:
    """CSV rows with their line; a field past ``MAX_CSV_FIELD_CHARS`` is an error naming it."""
    reader = csv.DictReader(io.StringIO(text))
    previous = csv.field_size_limit()
    # Read wider than we accept, so the message can name the column (the csv module's own
    # error names neither); the file is already in memory, so this costs nothing more.
    csv.field_size_limit(max(previous, len(text) + 1))
    try:
        for record in reader:
            for name, value in record.items():
                if isinstance(value, str) and len(value) > MAX_CSV_FIELD_CHARS:
                    column = name if name is not None else "(a cell past the header's columns)"
                    message = (
                        f'field "{column}" has {len(value):,} characters, more than '
                        f"{MAX_CSV_FIELD_CHARS:,}"
                    )
                    raise GoldSetError(located(_KIND, path, reader.line_num, message))
            yield reader.line_num, record
    except csv.Error as e:
        raise GoldSetError(located(_KIND, path, reader.line_num, f"not CSV: {e}")) from None
    finally:
        csv.field_size_limit(previous)


def _records(path: Path, source: str) -> Iterator[tuple[str | int, Mapping[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise GoldSetError(located(_KIND, path, None, f"cannot read: {e}")) from e
    if source == "csv":
        yield from _csv_records(path, text)
        return
    stripped = text.lstrip()
    if path.suffix.lower() == ".jsonl" or (stripped and stripped[0] not in "[{"):
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            # The one strict JSON reader: duplicate keys, depth and size as `gold check` has them.
            yield lineno, parse_json(line, path, _KIND, GoldSetError, lineno)
        return
    data = parse_json(text, path, _KIND, GoldSetError)
    if isinstance(data, Mapping):
        key = next((k for k in _WRAPPERS if isinstance(data.get(k), list)), None)
        if key is None:
            raise GoldSetError(
                located(_KIND, path, None, f"expected a list of items (or {_WRAPPERS[0]}: [...])")
            )
        data = data[key]
    if not isinstance(data, list):
        raise GoldSetError(located(_KIND, path, None, "expected a list of items"))
    for i, record in enumerate(data, 1):
        yield f"item {i}", record


def _strings(value: Any, field: str) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("[") and text.endswith("]"):
            parsed = _list_cell(text, field)
            if isinstance(parsed, list):
                return _strings(parsed, field)
        return (value,)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (str(value),)
    if isinstance(value, list | tuple):
        out: list[str] = []
        for entry in value:
            if isinstance(entry, Mapping):
                # LangChain-style documents: {"page_content": ..., "metadata": {...}}.
                entry = entry.get("page_content", entry.get("content", entry.get("text")))
            if not isinstance(entry, str | int) or isinstance(entry, bool):
                raise ValueError(f'"{field}" entries must be strings')
            if str(entry).strip():
                out.append(str(entry))
        return tuple(out)
    raise ValueError(f'"{field}" must be a string or a list, got {type(value).__name__}')


def _list_cell(text: str, field: str) -> Any:
    """A CSV cell holding a list: JSON, or Python's repr as pandas writes it; else the text."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    except RecursionError:
        raise ValueError(f'"{field}" is a list nested too deeply') from None
    try:
        return ast.literal_eval(text)
    except (RecursionError, MemoryError):
        raise ValueError(f'"{field}" is a list nested too deeply') from None
    except (ValueError, SyntaxError, TypeError):  # not a literal: the cell is text
        return text


def _scalar(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise ValueError(f'"{field}" must be a string, got {type(value).__name__}')
    return value if value.strip() else None


def read_rows(
    path: Path, source: str, mapping: Mapping[str, str], problems: list[str]
) -> list[Row]:
    """Read ``path`` as ``source``; a bad item's problems go to ``problems``, it is skipped.

    A column named by ``--map`` that the CSV header lacks is an error at once, naming it.
    """
    if source not in IMPORT_SOURCES:
        raise GoldSetError(f"unknown source {source!r}; use one of {', '.join(IMPORT_SOURCES)}")
    names = {f: (mapping[f],) if f in mapping else DEFAULT_MAPS[source].get(f, ()) for f in FIELDS}
    rows: list[Row] = []
    checked_header = False
    for where, record in _records(path, source):
        if source == "csv" and not checked_header:
            checked_header = True
            missing = [f"{f}={mapping[f]}" for f in mapping if mapping[f] not in record]
            if missing:
                columns = ", ".join(k for k in record if k is not None)
                raise GoldSetError(
                    located(
                        _KIND,
                        path,
                        1,
                        f"no column for --map {', '.join(missing)} (columns: {columns})",
                    )
                )
        if not isinstance(record, Mapping):
            problems.append(located(_KIND, path, where, "must be a mapping"))
            continue
        values: dict[str, Any] = {}
        for field in FIELDS:
            for name in names[field]:
                present, value = _get(record, name)
                if present:
                    values[field] = value
                    break
        bad: list[str] = []
        converted: dict[str, Any] = {}
        for field in FIELDS:
            try:
                if field in ("passage", "doc", "tags"):
                    converted[field] = _strings(
                        values.get(field), names[field][0] if names[field] else field
                    )
                else:
                    converted[field] = _scalar(
                        values.get(field), names[field][0] if names[field] else field
                    )
            except ValueError as e:
                bad.append(str(e))
        for field in _REQUIRED:
            if not bad and converted.get(field) is None:
                tried = " or ".join(f'"{n}"' for n in names[field])
                bad.append(f"missing {tried}")
        if bad:
            problems.extend(located(_KIND, path, where, message) for message in bad)
            continue
        rows.append(
            Row(
                where=where,
                question=converted["question"],
                id=converted["id"],
                answer=converted["answer"],
                passages=converted["passage"],
                docs=converted["doc"],
                tags=converted["tags"],
            )
        )
    return rows
