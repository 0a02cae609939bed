"""Reading gold set files for ``load_gold``: YAML/JSON/JSONL with line numbers, BEIR folders.

Kept apart from ``goldset.py`` (the container) because this is about text:
encodings, syntax errors, where each item starts, and finding a quote in a
document whatever its case and spacing.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

from ragmeter.errors import GoldSetError, located
from ragmeter.formats.text import (
    MAX_INTEGER_DIGITS,
    MAX_NESTING_DEPTH,
    decode_utf8,
    iter_jsonl,
    numbered_lines,
    parse_json,
)
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
    import yaml

    loader = _yaml_loader()(text)
    try:
        node = loader.get_single_node()
        if node is not None:
            _check_nodes(node, path)
    except yaml.YAMLError:
        return None
    except GoldSetError as error:
        return error if "duplicate key" in str(error) else None
    finally:
        loader.dispose()
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
        if node is not None:
            _check_nodes(node, path)
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


_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"


def _check_nodes(root: Any, path: Path) -> None:
    """Refuse what would make construction unbounded or silently lossy, before it runs.

    An alias makes one node appear twice in the graph: nine levels of ten aliases
    are 570 bytes that expand to a billion strings, so aliases are refused outright.
    Also refused: nesting deeper than MAX_NESTING_DEPTH, a key repeated in a mapping
    (YAML keeps the last silently), integers past MAX_INTEGER_DIGITS, .nan and .inf.
    """
    import yaml

    def fail(node: Any, message: str) -> GoldSetError:
        return GoldSetError(located(_KIND, path, node.start_mark.line + 1, message))

    seen: set[int] = set()
    stack: list[tuple[Any, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            message = (
                "YAML anchors and aliases are not supported "
                "(an alias repeats the value here); write the value out"
            )
            raise fail(node, message)
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            _check_number(node, fail)
            continue
        if depth > MAX_NESTING_DEPTH:
            raise fail(node, f"nested more than {MAX_NESTING_DEPTH} levels deep")
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)
            continue
        keys: dict[tuple[str, str], int] = {}
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                line = key.start_mark.line + 1
                first = keys.get((key.tag, key.value))
                if first is None:
                    keys[(key.tag, key.value)] = line
                else:
                    name = json.dumps(key.value, ensure_ascii=False)
                    message = f"duplicate key {name} (lines {first} and {line})"
                    raise GoldSetError(located(_KIND, path, None, message))
            stack.extend(((key, depth + 1), (value, depth + 1)))


def _check_number(node: Any, fail: Any) -> None:
    if node.tag == _INT_TAG:
        digits = len(node.value.lstrip("+-"))
        if digits > MAX_INTEGER_DIGITS:
            raise fail(node, f"an integer of {digits} digits (at most {MAX_INTEGER_DIGITS})")
    elif node.tag == _FLOAT_TAG:
        text = node.value.replace("_", "").lower().lstrip("+-")
        try:
            finite = text not in (".inf", ".nan") and math.isfinite(float(text))
        except ValueError:  # YAML 1.1 sexagesimal floats such as 1:30.5
            finite = True
        if not finite:
            raise fail(node, f"{node.value} is not a number JSON allows")


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
