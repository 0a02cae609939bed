"""Reading gold set files for ``load_gold``: YAML/JSON/JSONL with line numbers, BEIR folders.

Kept apart from ``goldset.py`` (the container) because this is about text:
encodings, syntax errors, where each item starts, and finding a quote in a
document whatever its case and spacing.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from ragmeter.errors import GoldSetError, located
from ragmeter.formats.text import decode_utf8
from ragmeter.gold.goldset import YAML_SUFFIXES, GoldSet

_KIND = "gold set"
_SUFFIXES = (*YAML_SUFFIXES, ".json", ".jsonl")
_TOP_LEVEL = ("items", "name")  # keys allowed when a file is a mapping rather than a list


def load(path: Path, *, split: str, queries_only_judged: bool) -> GoldSet:
    """Parse and validate ``path``; every failure is a ``GoldSetError``."""
    if path.is_dir():
        return _load_beir(path, split, queries_only_judged)
    suffix = path.suffix.lower()
    if suffix not in _SUFFIXES:
        message = "unknown format; use .yaml, .yml, .json, .jsonl or a BEIR folder"
        raise GoldSetError(located(_KIND, path, None, message))
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise GoldSetError(located(_KIND, path, None, "file not found")) from None
    except OSError as error:
        raise GoldSetError(
            located(_KIND, path, None, f"cannot read it: {error.strerror}")
        ) from None
    text = decode_utf8(data, path, _KIND, GoldSetError)
    if not text.strip():
        raise GoldSetError(located(_KIND, path, None, "file is empty"))
    name: str | None = None
    lines: list[int | None] | None
    try:
        if suffix == ".jsonl":
            records, lines = _parse_jsonl(text, path)
        elif suffix == ".json":
            records, name = _unwrap(_parse_json(text, path), path)
            lines = None
        else:
            records, lines, name = _parse_yaml(text, path)
    except RecursionError:
        raise GoldSetError(located(_KIND, path, None, "nested too deeply to read")) from None
    if not records:
        raise GoldSetError(located(_KIND, path, None, "has no items"))
    return GoldSet.from_records(records, path=path, name=name, lines=lines)


def _parse_json(text: str, path: Path) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        message = f"invalid JSON at column {error.colno}: {error.msg}"
        raise GoldSetError(located(_KIND, path, error.lineno, message)) from None


def _parse_jsonl(text: str, path: Path) -> tuple[list[Any], list[int | None]]:
    records: list[Any] = []
    lines: list[int | None] = []
    # Split on "\n" only: str.splitlines() would also split inside strings at U+2028 etc.
    for number, line in enumerate(text.split("\n"), 1):
        line = line.strip()
        if not line:
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            message = f"invalid JSON at column {error.colno}: {error.msg}"
            raise GoldSetError(located(_KIND, path, number, message)) from None
        records.append(record)
        lines.append(number)
    return records, lines


def _unwrap(data: Any, path: Path) -> tuple[list[Any], str | None]:
    if isinstance(data, list):
        return data, None
    if isinstance(data, dict) and "items" in data:
        extra = sorted(str(key) for key in data if key not in _TOP_LEVEL)
        if extra:
            message = f'unknown top-level key "{extra[0]}" (allowed: {", ".join(_TOP_LEVEL)})'
            raise GoldSetError(located(_KIND, path, None, message))
        items, name = data["items"], data.get("name")
        if not isinstance(items, list):
            raise GoldSetError(located(_KIND, path, None, '"items" must be a list'))
        return items, name if isinstance(name, str) else None
    message = f'expected a list of items or a mapping with "items", got {type(data).__name__}'
    raise GoldSetError(located(_KIND, path, None, message))


@functools.cache
def _yaml_loader() -> Any:
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[valid-type,misc]
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self._tags: dict[tuple[str, Any], str] = {}

        def resolve(self, kind: type, value: Any, implicit: Any) -> str:
            # Keys such as "id" and "grade" repeat on every item; resolving each
            # scalar through the regex list again was most of the load time.
            if kind is not yaml.ScalarNode:
                return str(super().resolve(kind, value, implicit))
            key = (value, implicit)
            tag = self._tags.get(key)
            if tag is None:
                tag = self._tags[key] = super().resolve(kind, value, implicit)
            return tag

    # Dates stay strings: `created: 2024-01-01` must mean the same in YAML and JSONL.
    timestamp = "tag:yaml.org,2002:timestamp"
    Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != timestamp]
        for first, resolvers in base.yaml_implicit_resolvers.items()
    }
    return Loader


def _parse_yaml(text: str, path: Path) -> tuple[list[Any], list[int | None], str | None]:
    import yaml

    loader = _yaml_loader()(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as error:
        raise GoldSetError(_yaml_message(error, text, path)) from None
    finally:
        loader.dispose()
    if data is None:
        raise GoldSetError(located(_KIND, path, None, "file is empty"))
    records, name = _unwrap(data, path)
    sequence = node
    if isinstance(node, yaml.MappingNode):
        sequence = next(v for k, v in node.value if getattr(k, "value", None) == "items")
    lines: list[int | None] = [child.start_mark.line + 1 for child in sequence.value]
    return records, lines, name


def _yaml_message(error: Exception, text: str, path: Path) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or getattr(error, "reason", None) or str(error)
    if mark is not None:
        where = f"invalid YAML at column {mark.column + 1}: {problem}"
        return located(_KIND, path, mark.line + 1, where)
    position = getattr(error, "position", None)
    if isinstance(position, int):
        return located(_KIND, path, text.count("\n", 0, position) + 1, f"invalid YAML: {problem}")
    return located(_KIND, path, None, f"invalid YAML: {problem}")


def _load_beir(folder: Path, split: str, queries_only_judged: bool) -> GoldSet:
    from ragmeter.formats.beir import read_beir_qrels, read_beir_queries

    queries = read_beir_queries(folder)
    qrels = read_beir_qrels(folder, split)
    if queries_only_judged:
        queries = {qid: text for qid, text in queries.items() if qid in qrels}
    missing = next((qid for qid in qrels if qid not in queries), None)
    if missing is not None:
        where = folder / "qrels" / f"{split}.tsv"
        message = f'query "{missing}" is judged but not in queries.jsonl'
        raise GoldSetError(located(_KIND, where, None, message))
    ordered = {qid: qrels.get(qid, {}) for qid in queries}
    return GoldSet.from_qrels(ordered, queries, path=folder, name=folder.name)


def load_gold(
    path: str | Path, *, split: str = "test", queries_only_judged: bool = True
) -> GoldSet:
    """Load and validate a gold set: YAML, JSON, JSONL or a BEIR folder.

    For a BEIR folder, ``split`` picks ``qrels/{split}.tsv`` and only judged
    queries are kept unless ``queries_only_judged=False``.

    >>> load_gold("questions.yaml")  # doctest: +SKIP
    <GoldSet 'questions': 120 items>
    """
    return load(Path(path), split=split, queries_only_judged=queries_only_judged)
