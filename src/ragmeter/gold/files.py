"""Reading gold set files for ``load_gold``: YAML/JSON/JSONL with line numbers, BEIR folders.

Kept apart from ``goldset.py`` (the container) because this is about text:
encodings, syntax errors, where each item starts, and finding a quote in a
document whatever its case and spacing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragmeter.errors import GoldSetError, located
from ragmeter.formats.strict_yaml import load_yaml
from ragmeter.formats.text import decode_utf8, iter_jsonl, numbered_lines, parse_json
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
        return parse_json(text, path, _KIND, GoldSetError)
    except GoldSetError:
        # A duplicate key is found by the fast parser, which knows no line numbers;
        # the YAML composer (JSON is flow-style YAML) says where both copies are.
        located_error = _json_duplicate(text, path)
        if located_error is not None:
            raise located_error from None
        raise


def _json_duplicate(text: str, path: Path) -> GoldSetError | None:
    try:
        load_yaml(text, path, _KIND, GoldSetError)
    except GoldSetError as error:
        return error if "duplicate key" in str(error) else None
    return None


def _parse_jsonl(text: str, path: Path) -> tuple[list[Any], list[int | None]]:
    records: list[Any] = []
    lines: list[int | None] = []
    for number, record in iter_jsonl(
        numbered_lines(text), path, _KIND, GoldSetError, objects=False
    ):
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


def _parse_yaml(text: str, path: Path) -> tuple[list[Any], list[int | None], str | None]:
    import yaml

    data, node = load_yaml(text, path, _KIND, GoldSetError)
    if data is None:
        raise GoldSetError(located(_KIND, path, None, "file is empty"))
    records, name = _unwrap(data, path)
    sequence = node
    if isinstance(node, yaml.MappingNode):
        sequence = next(v for k, v in node.value if getattr(k, "value", None) == "items")
    lines: list[int | None] = [child.start_mark.line + 1 for child in sequence.value]
    return records, lines, name


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
