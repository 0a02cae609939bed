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
from ragmeter.formats.text import MAX_NESTING_DEPTH, parse_json

__all__ = [
    "DEFAULT_MAPS",
    "FIELDS",
    "FIELD_ALIASES",
    "IMPORT_SOURCES",
    "MAX_CSV_FIELD_CHARS",
    "Row",
    "parse_map",
    "read_rows",
]

IMPORT_SOURCES = ("ragas", "deepeval", "langsmith", "csv", "jsonl")
# The fields an importer fills; --map names them on its left-hand side. ``relevant`` is a
# list of ragmeter judgments ({doc, quote, grade}), as ragmeter's own exports carry them.
FIELDS = ("id", "question", "answer", "passage", "doc", "tags", "relevant")
# Other names --map accepts for a field (the names the gold format and the docs use).
FIELD_ALIASES = {"reference_answer": "answer", "quote": "passage", "tag": "tags"}

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
        "tags": ("tags",),
        "relevant": ("ragmeter_relevant",),
    },
    "deepeval": {
        # `retrieval_context` is what a system retrieved, not the gold: it is not taken unless
        # mapped (`--map passage=retrieval_context`).
        "question": ("input",),
        "answer": ("expected_output",),
        "passage": ("context",),
        "doc": ("source_file", "additional_metadata.reference_context_ids"),
        "id": ("id", "name", "additional_metadata.id"),
        "tags": ("additional_metadata.tags",),
        "relevant": ("additional_metadata.relevant",),
    },
    "langsmith": {
        "question": ("inputs.question", "inputs.input", "inputs.query"),
        "answer": ("outputs.answer", "outputs.output", "outputs.reference", "outputs.expected"),
        "passage": ("outputs.contexts", "outputs.context", "metadata.contexts"),
        "doc": ("outputs.doc_ids", "metadata.doc_ids", "metadata.source"),
        "id": ("id", "example_id"),
        "tags": ("metadata.tags",),
    },
    "csv": {f: (f,) for f in FIELDS if f != "relevant"}
    | {"answer": ("reference_answer", "answer")},
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
    relevant: tuple[Mapping[str, Any], ...] = ()


def parse_map(pairs: Sequence[str]) -> dict[str, str]:
    """``["question=Query", "doc=Source"]`` (or one comma-separated string) to a dict.

    >>> parse_map(["question=Query,doc=Source", "reference_answer=Expected"])
    {'question': 'Query', 'doc': 'Source', 'answer': 'Expected'}
    """
    out: dict[str, str] = {}
    for chunk in pairs:
        for pair in chunk.split(","):
            field, sep, name = pair.partition("=")
            field, name = field.strip(), name.strip()
            if not sep or not name:
                raise GoldSetError(f'--map {pair!r}: write FIELD=COLUMN, e.g. "question=Query"')
            field = FIELD_ALIASES.get(field, field)
            if field not in FIELDS:
                known = ", ".join((*FIELDS, *FIELD_ALIASES))
                raise GoldSetError(f"--map {pair!r}: {field!r} is not one of {known}")
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


def _jsonl(path: Path, text: str) -> Iterator[tuple[str | int, Mapping[str, Any]]]:
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        # The one strict JSON reader: duplicate keys and depth as `gold check` has them.
        yield lineno, parse_json(line, path, _KIND, GoldSetError, lineno)


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


def _csv_hint(path: Path, text: str, source: str) -> None:
    """Stop with ``--from csv`` (and the map to this source's names) when ``text`` is CSV."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    try:
        json.loads(first)
    except json.JSONDecodeError:
        looks_csv = path.suffix.lower() in (".csv", ".tsv") or "," in first
        if not looks_csv:
            return
        names, plain = DEFAULT_MAPS.get(source, {}), DEFAULT_MAPS["csv"]
        pairs = ",".join(
            f"{field}={names[field][0]}"
            for field in ("question", "answer", "passage", "doc", "id")
            if names.get(field) and "." not in names[field][0] and names[field] != plain[field]
        )
        hint = f" --map {pairs}" if pairs else ""
        raise GoldSetError(
            located(
                _KIND,
                path,
                1,
                f"this is CSV, not {source}'s JSON or JSONL: read it with --from csv{hint}",
            )
        ) from None


def _records(path: Path, source: str) -> Iterator[tuple[str | int, Mapping[str, Any]]]:
    """The records of ``path``: CSV for ``--from csv``; else JSON or JSONL, told by content."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise GoldSetError(located(_KIND, path, None, f"cannot read: {e}")) from e
    if source == "csv":
        yield from _csv_records(path, text)
        return
    stripped = text.lstrip()
    if stripped and stripped[0] not in "[{":
        _csv_hint(path, text, source)
        yield from _jsonl(path, text)
        return
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        if e.msg == "Extra data" and stripped.startswith("{"):
            # One JSON object per line: JSONL, whatever the file is called.
            yield from _jsonl(path, text)
            return
        raise GoldSetError(located(_KIND, path, e.lineno, f"not JSON: {e.msg}")) from e
    except RecursionError:
        deep = f"nested more than {MAX_NESTING_DEPTH} levels deep"
        raise GoldSetError(located(_KIND, path, None, deep)) from None
    one_line = len([line for line in text.splitlines() if line.strip()]) == 1
    wrapped = isinstance(data, Mapping) and any(isinstance(data.get(k), list) for k in _WRAPPERS)
    if isinstance(data, Mapping) and not wrapped and one_line:
        yield 1, data  # a JSONL file of one item
        return
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


def _judgments(value: Any) -> tuple[Mapping[str, Any], ...]:
    """ragmeter judgments ``[{doc, quote?, grade?}]`` as an export wrote them, checked."""
    if value is None or value == []:
        return ()
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ValueError('"relevant" must be a list of {doc, quote, grade}') from None
        except RecursionError:
            raise ValueError('"relevant" is nested too deeply') from None
    if not isinstance(value, list):
        raise ValueError('"relevant" must be a list of {doc, quote, grade}')
    out: list[Mapping[str, Any]] = []
    for index, entry in enumerate(value):
        where = f'"relevant" entry {index + 1}'
        if not isinstance(entry, Mapping):
            raise ValueError(f"{where} must be a mapping {{doc, quote, grade}}")
        doc, chunk, quote = entry.get("doc"), entry.get("chunk"), entry.get("quote")
        grade = entry.get("grade", 1)
        if not isinstance(doc, str) and not isinstance(chunk, str):
            raise ValueError(f"{where} needs a string doc (or chunk)")
        if quote is not None and not (isinstance(quote, str) and isinstance(doc, str)):
            raise ValueError(f"{where}: quote must be a string, with its doc")
        if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= 3:
            raise ValueError(f"{where}: grade must be an integer 0-3")
        key = {"doc": doc} if isinstance(doc, str) else {"chunk": chunk}
        out.append(key | {"quote": quote or None, "grade": grade})
    return tuple(out)


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
                if field == "relevant":
                    converted[field] = _judgments(values.get(field))
                elif field in ("passage", "doc", "tags"):
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
                relevant=converted["relevant"],
            )
        )
    return rows
